"""Fuzz the game-record parser (atheris / libFuzzer): any bytes -> a record or RecordError.

    .venv/bin/python tests/fuzz/fuzz_record.py -max_total_time=600 tests/fuzz/corpus_record

Any other exception (or a hang: libFuzzer's -timeout) is a bug; see docs/security.md.
"""

import sys

import atheris

# only our packages: instrumenting torch, pydantic and numpy as they are first imported took
# minutes before the first input
with atheris.instrument_imports(include=["sevenrocks_env"]):
    from sevenrocks_env.record import RecordError, parse, validate


def test_one_input(data: bytes) -> None:
    try:
        validate(parse(data.decode("utf-8")))
    except (RecordError, UnicodeDecodeError):  # load() turns a UnicodeDecodeError into RecordError
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
