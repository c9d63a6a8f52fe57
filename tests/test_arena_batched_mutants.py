"""The batched arena (``sevenrocks_env.arena_batched``): properties a mutation audit found
unpinned (each test here failed on one small change to the module)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from sevenrocks_env.arena_batched import play_pairs_batched  # noqa: E402
from sevenrocks_env.batched_agents import BatchedGreedy, BatchedRandom  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_each_decision_sees_its_env_s_move_number():
    """``context["moves"]`` is the number of moves each env has played (the random draws and
    policy samples are keyed by it): at every decision of an env's first match it is the
    index of that move in the env's game record, so no two decisions share a draw."""
    seen: dict[int, list[int]] = {}

    class Spy(BatchedGreedy):
        def actions(self, env, envs, context):
            for e, move in zip(envs.tolist(), context["moves"][envs].tolist()):
                seen.setdefault(e, []).append(move)
            return super().actions(env, envs, context)

    _, records = play_pairs_batched(Spy(), Spy(), seed=5, first=0, pairs=2, target=60,
                                    max_rounds=50, records=True)
    for e, record in enumerate(records):
        played = sum(len(rnd["moves"]) for rnd in record["rounds"])
        first_match = [move for move in seen[e] if move < played]
        assert first_match == sorted(set(first_match)), e  # one number per decision
        assert len(first_match) > 1


def test_only_each_env_s_first_match_counts_however_long_the_others_play():
    """An env that ended its match plays on (the engine deals it a next one) while the others
    finish theirs: with short matches of very different lengths side by side, every pair's
    outcome is still its two first matches', per their records (an env's later match won
    while the batch plays on is neither scored nor its final scores kept)."""
    outcomes, records = play_pairs_batched(BatchedRandom(), BatchedGreedy(), seed=7, first=0,
                                           pairs=24, target=60, max_rounds=100, records=True)
    lengths = [len(record["rounds"]) for record in records]
    assert max(lengths) >= 3 * min(lengths)  # some envs played on for whole matches
    for pair, out in enumerate(outcomes):
        points, score = [0, 0], 0.0
        for a_team in (0, 1):
            record = records[2 * pair + a_team]
            assert record["winner"] is not None
            points = [points[0] + record["scores"][a_team],
                      points[1] + record["scores"][1 - a_team]]
            score += record["winner"] == a_team
        assert (out.score, out.points_a, out.points_b) == (score, *points), pair
        assert out.rounds == lengths[2 * pair] + lengths[2 * pair + 1]
