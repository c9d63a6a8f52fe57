"""Invariants every real pair of a pair log satisfies (points in fives, a round won by each
match's winner, a real choice per round): a real log line, changed to break one, is refused,
and real runs of every kind (won and truncated matches, both engines) read back."""

import json

import pytest

from sevenrocks_env import arena
from sevenrocks_env.arena_log import PairLogError

A, B = "greedy", "random"


def _logged(tmp_path, **settings):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log, **settings)
    return log, log.read_text().splitlines()


def _read_with(log, lines, change, **settings):
    entry = json.loads(lines[1])
    entry.update(change(entry))
    log.write_text("\n".join([lines[0], json.dumps(entry), *lines[2:]]) + "\n")
    return arena.evaluate(A, B, 2, seed=3, log=log, **settings)


@pytest.mark.parametrize("change, message", [
    # scores move by multiples of 5 only (R5 placements, R7 rounded deductions)
    (lambda e: {"points_a": e["points_a"] - 2, "margin": e["margin"] - 2},
     r"points \S+ \S+ not all multiples of 5"),
    (lambda e: {"points_b": e["points_b"] + 3, "margin": e["margin"] - 3},
     r"not all multiples of 5"),
    # every round opens with a choice among seven tiles (R3)
    (lambda e: {"decisions": [0, 0]}, r"0 decisions in \d+ rounds"),
    (lambda e: {"decisions": [e["rounds"] - 1, 0]}, r"decisions in \d+ rounds"),
    # A won both matches, so it came out ahead in a round of each (R8)
    (lambda e: {"score": 2.0, "truncated": 0, "round_wins_a": 0.0},
     r"round_wins_a 0.0 with 2 and 0 matches won"),
    (lambda e: {"score": 2.0, "truncated": 0, "round_wins_a": 1.5}, r"round_wins_a 1.5"),
    # B won both: B came out ahead in two rounds at least
    (lambda e: {"score": 0.0, "truncated": 0, "margin": -10, "points_a": 0, "points_b": 10,
                "round_wins_a": e["rounds"] - 1.5}, r"with 0 and 2 matches won"),
    # one each: each side ahead in a round at least
    (lambda e: {"score": 1.0, "truncated": 0, "round_wins_a": e["rounds"]}, r"1 and 1 matches"),
])
def test_a_real_pair_changed_to_break_an_invariant_is_refused(tmp_path, change, message):
    log, lines = _logged(tmp_path)
    with pytest.raises(PairLogError, match=f"not a pair any match can give: .*{message}"):
        _read_with(log, lines, change)


@pytest.mark.parametrize("change", [
    lambda e: {"decisions": [e["rounds"], 0]},  # one choice a round: the fewest possible
    lambda e: {"score": 2.0, "truncated": 0, "round_wins_a": 2.0},  # one round won per match
    lambda e: {"score": 1.0, "truncated": 0, "round_wins_a": e["rounds"] - 1.0},
    lambda e: {"points_a": e["points_a"] - 5, "margin": e["margin"] - 5},
])
def test_a_changed_pair_that_some_match_could_give_is_still_read(tmp_path, change):
    log, lines = _logged(tmp_path)
    assert _read_with(log, lines, change).pairs == 2


@pytest.mark.parametrize("engine", ["python", "batched"])
@pytest.mark.parametrize("agents, target, max_rounds", [
    ((A, B), 250, 100), (("random", "random"), 60, 2), (("random", A), 2000, 1),
    ((A, "random"), 30, 3),
])
def test_real_pairs_of_every_kind_read_back(tmp_path, engine, agents, target, max_rounds):
    """Won, lost and truncated matches, short and long: what the arena writes it reads."""
    log, settings = tmp_path / "l.jsonl", {"seed": 5, "target": target, "max_rounds": max_rounds}
    if engine == "batched":
        batched = pytest.importorskip("sevenrocks_env.arena_batched")
        play = lambda log=None: batched.evaluate_batched(*agents, 6, batch=3, log=log,  # noqa
                                                         **settings)
    else:
        play = lambda log=None: arena.evaluate(*agents, 6, log=log, **settings)  # noqa: E731
    first = play(log)
    assert play(log).as_dict(timing=False) == first.as_dict(timing=False)
