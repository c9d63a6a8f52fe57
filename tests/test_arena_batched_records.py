"""The batched arena's game records (``play_pairs_batched(..., records=True)``) are the matches
its outcomes count: a match the arena cuts at ``max_rounds`` is recorded to that round, as a
truncated record, where the engine (run without a limit) played it on with filler moves and
that continuation was returned as the match's record (more rounds than the limit, a winner)."""

import pytest

from sevenrocks_env import record
from sevenrocks_env.arena_batched import play_pairs_batched
from sevenrocks_env.batched import VectorEnv
from sevenrocks_env.batched_agents import batched_agent


def test_each_record_is_the_match_its_pair_outcome_counts():
    outcomes, records = play_pairs_batched(batched_agent("random"), batched_agent("greedy"),
                                           seed=1, first=0, pairs=40, target=400, max_rounds=8,
                                           records=True)
    cut = 0
    for pair, out in enumerate(outcomes):
        margin = rounds = 0
        for a_team in (0, 1):
            game = records[2 * pair + a_team]
            record.validate(game)
            rounds += len(game["rounds"])
            margin += game["scores"][a_team] - game["scores"][1 - a_team]
            if game["winner"] is None:
                assert game["max_rounds"] == 8 and len(game["rounds"]) == 8
                cut += 1
            else:
                # played under the limit too, as the unbatched arena's records say
                assert len(game["rounds"]) <= 8 and game["max_rounds"] == 8
        assert (out.rounds, out.margin) == (rounds, margin), pair
        assert out.truncated == sum(records[2 * pair + t]["winner"] is None for t in (0, 1))
    assert 10 < cut < 80  # both kinds of match are in the sample


def test_a_stopped_record_needs_records_and_an_ended_round():
    env = VectorEnv(2, "cpu", 250, max_rounds=None, records=True)
    env.reset(0)
    # no round has ended yet: the wrong step, not a match without a record (None)
    with pytest.raises(ValueError, match="ended 0 of its rounds, not max_rounds=1"):
        env.stopped_record(0, 1)
    while int(env.state.round_index[0]) == 0:
        env.step(env.action_mask.long().argmax(1))
    game = env.stopped_record(0, 1)
    record.validate(game)
    assert game["winner"] is None and game["max_rounds"] == 1 and len(game["rounds"]) == 1
    # a limit its ended rounds do not match made a record validate refuses (2: "no winner
    # after max_rounds 2 rounds") or one not cut off at all (more rounds than it has)
    for wrong in (2, 5):
        with pytest.raises(ValueError, match=f"ended 1 of its rounds, not max_rounds={wrong}"):
            env.stopped_record(0, wrong)
    while int(env.state.round_index[0]) == 1:
        env.step(env.action_mask.long().argmax(1))
    assert int(env.state.round_index[0]) == 2  # the match went on (it did not end at round 2)
    with pytest.raises(ValueError, match="ended 2 of its rounds, not max_rounds=1"):
        env.stopped_record(0, 1)
    record.validate(env.stopped_record(0, 2))
    with pytest.raises(RuntimeError, match="records=True"):
        VectorEnv(1, "cpu", 250).stopped_record(0, 1)


def test_a_stopped_record_checks_its_arguments():
    """A negative env read another env's record (list indexing), one past the end was a bare
    IndexError, a max_rounds of 0 made a record that validate refuses; an env that cuts its
    matches itself has their records in pop_finished_records."""
    env = VectorEnv(3, "cpu", 250, max_rounds=None, records=True)
    env.reset(0)
    for bad, error, words in ((-1, ValueError, "env must be in"), (3, ValueError, "env must be in"),
                              (True, TypeError, "env must be an int")):
        with pytest.raises(error, match=words):
            env.stopped_record(bad, 1)
    for bad, error in ((0, ValueError), (1001, ValueError), ("2", TypeError), (1.0, TypeError)):
        with pytest.raises(error, match="max_rounds must be"):
            env.stopped_record(0, bad)
    with pytest.raises(RuntimeError, match="cuts its matches itself at max_rounds=4"):
        VectorEnv(1, "cpu", 250, max_rounds=4, records=True).stopped_record(0, 1)


def test_play_pairs_batched_checks_the_max_rounds_its_records_carry():
    """Every record says the arena's max_rounds now: an unchecked 5000, or a NumPy int, made
    records validate refuses."""
    import numpy as np
    with pytest.raises(ValueError, match=r"max_rounds must be in \[1, 1000\], got 5000"):
        play_pairs_batched(batched_agent("greedy"), batched_agent("random"), seed=0, first=0,
                           pairs=1, target=60, max_rounds=5000, records=True)
    _, games = play_pairs_batched(batched_agent("greedy"), batched_agent("random"), seed=0,
                                  first=0, pairs=1, target=60, max_rounds=np.int64(100),
                                  records=True)
    for game in games:
        record.validate(game)
        assert type(game["max_rounds"]) is int
