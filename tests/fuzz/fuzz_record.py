"""Fuzz the game-record parser (atheris / libFuzzer): any bytes -> a record or RecordError.

    .venv/bin/python tests/fuzz/fuzz_record.py -max_total_time=600 tests/fuzz/corpus_record

Any other exception (or a hang: libFuzzer's -timeout) is a bug; see docs/security.md.  A corpus
folder named on the command line that is missing or empty is first seeded with a few real
records (short matches), so the fuzzer mutates records rather than random bytes (from nothing,
a 3-second run barely got past the JSON decoder).
"""

import json
import random
import sys
from pathlib import Path

import atheris

# only our packages: instrumenting torch, pydantic and numpy as they are first imported took
# minutes before the first input
with atheris.instrument_imports(include=["sevenrocks_env"]):
    from sevenrocks_env.record import RecordError, game_record, parse, validate
    from sevenrocks_env.rules import Match, apply_action, legal_actions


def seed_corpus(folder: Path, count: int = 4) -> None:
    """Real records of short random matches (target 30), written compactly."""
    folder.mkdir(parents=True, exist_ok=True)
    for seed in range(count):
        match, rng = Match.new(seed, target=30), random.Random(seed)
        while not match.over:
            apply_action(match, rng.choice(legal_actions(match)))
        (folder / f"record_{seed}.json").write_text(json.dumps(game_record(match)))


def test_one_input(data: bytes) -> None:
    try:
        validate(parse(data.decode("utf-8")))
    except (RecordError, UnicodeDecodeError):  # load() turns a UnicodeDecodeError into RecordError
        pass


if __name__ == "__main__":
    for argument in sys.argv[1:]:  # a corpus folder (not a flag, nor a crash file to replay)
        folder = Path(argument)
        if not argument.startswith("-") and (not folder.exists() or (
                folder.is_dir() and not any(folder.iterdir()))):
            seed_corpus(folder)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
