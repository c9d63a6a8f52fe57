"""Fuzz the training-config reader (atheris / libFuzzer): any bytes -> a config or ConfigError.

    .venv/bin/python tests/fuzz/fuzz_config.py -max_total_time=600 tests/fuzz/corpus_config

The bytes go through what ``load_config`` does with a file's content (UTF-8, YAML, pydantic);
any other exception (or a hang: libFuzzer's -timeout) is a bug; see docs/security.md.
"""

import sys

import atheris

# only our packages: instrumenting torch, pydantic and numpy as they are first imported took
# minutes before the first input
with atheris.instrument_imports(include=["training", "sevenrocks_env"]):
    from training.config import ConfigError, config_from_dict
    from training.config_yaml import _read_yaml


def test_one_input(data: bytes) -> None:
    try:
        loaded = _read_yaml(data.decode("utf-8"), "fuzz") or {}
        if isinstance(loaded, dict):
            config_from_dict(loaded, "fuzz")
    except (ConfigError, UnicodeDecodeError):
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
