"""The batched self-play engine's seeding and saved state: the same seed gives the same
buffers, a resumed engine continues identically, an untrusted state is refused piece by piece
before anything changes, and the cut's look-ahead leaves the saved sampler where the rollout
left it.  The engine against the reference loop: ``test_batched_rollout.py``."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

from test_batched_rollout import FIELDS, MAX_ROUNDS, TARGET, _buffers  # noqa: E402
from test_rollout import LowestActionModel  # noqa: E402


def test_same_seed_same_buffers_and_resume_continues_identically():
    torch.manual_seed(0)
    model = PolicyNet((32,), action_features=0).eval()
    first = BatchedSelfPlayEngine(8, seed=11, target=TARGET, max_rounds=MAX_ROUNDS)
    a = _buffers(first, model, rollouts=2, num_steps=6)
    second = BatchedSelfPlayEngine(8, seed=11, target=TARGET, max_rounds=MAX_ROUNDS)
    b = _buffers(second, model, rollouts=1, num_steps=6)
    state = copy.deepcopy(second.state_dict())
    resumed = BatchedSelfPlayEngine(8, seed=99, target=TARGET, max_rounds=MAX_ROUNDS)
    resumed.load_state_dict(state)
    b += _buffers(resumed, model, rollouts=1, num_steps=6)
    for x, y in zip(a, b):
        for name in FIELDS:
            np.testing.assert_array_equal(x[name], y[name], err_msg=name)
    assert first.env_steps == resumed.env_steps


@pytest.mark.parametrize("piece, corrupt, message", [
    ("generator", lambda s: s["generator"][:-1], "generator"),
    ("deal_seed", lambda s: -1, "deal_seed"),
    ("matches", lambda s: {**s["matches"], "turn": s["matches"]["turn"][:-1]}, "matches.turn"),
    ("matches", lambda s: {**s["matches"], "hands": [[1, 2, 3, 4]] * 4}, "matches row 0"),
    ("learner", lambda s: [[True, False, True, True]] * 4, "learner[0]"),
    ("opponents", lambda s: [None] * 3, "opponents must be a list of 4"),
    ("counters", lambda s: [[0] * 4] * 2, "counters"),
    ("env_steps", lambda s: -5, "env_steps"),
    ("rng", lambda s: {"bit_generator": "nope"}, "rng"),
    # per-match returns would be logged as charts/episodic_return
    ("returns", lambda s: [0.0, float("nan"), 0.0, 0.0], "returns"),
    ("returns", lambda s: [0.0, float("inf"), 0.0, 0.0], "returns"),
    ("returns", lambda s: [0.0, 1e300, 0.0, 0.0], "returns"),
    ("deal_seed", lambda s: 2 ** 63, "deal_seed"),
    ("generator", lambda s: [256] + s["generator"][1:], "generator"),
    ("generator", lambda s: [0] * len(s["generator"]), "generator"),
    # one entry more than the matches (zip would drop it without a word)
    ("opponents", lambda s: s["opponents"] + [None], "opponents must be a list of 4"),
    ("learner", lambda s: s["learner"] + [[True] * 4], "learner must be a list of 4"),
    # self-play (no opponent) has all four seats learning
    ("learner", lambda s: [[True, False] * 2] * 4, "learner[0]"),
    # counts past 2**62, ints past int64, ints where the fields hold bools
    ("counters", lambda s: [[2 ** 62 + 1] * 4] * 3, "counters"),
    ("env_steps", lambda s: 2 ** 62 + 1, "env_steps"),
    ("matches", lambda s: {**s["matches"], "turn": [2 ** 63] * 4}, "matches.turn"),
    ("matches", lambda s: {**s["matches"], "end_double": [[0] * 4] * 4}, "matches.end_double"),
    ("matches", lambda s: {**s["matches"], "turn": [True] * 4}, "matches.turn"),
    # rows one score short would broadcast into both teams' scores
    ("matches", lambda s: {**s["matches"], "scores": [[0]] * 4}, "matches.scores"),
    ("matches", lambda s: {**s["matches"], "scores": [[0, 0, 0]] * 4}, "matches.scores"),
])
def test_bad_state_pieces_raise_value_error_naming_them(piece, corrupt, message):
    """Refused, by another engine and by the engine the state came from, before anything
    changes (an untrusted checkpoint's state)."""
    engine = BatchedSelfPlayEngine(4, seed=1)
    state = copy.deepcopy(engine.state_dict())
    before = copy.deepcopy(state)
    state[piece] = corrupt(state)
    pattern = message.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(ValueError, match=pattern):
        BatchedSelfPlayEngine(4, seed=2).load_state_dict(state)
    with pytest.raises(ValueError, match=pattern):
        engine.load_state_dict(state)
    assert engine.state_dict() == before   # nothing changed
    with pytest.raises(ValueError, match="keys"):
        engine.load_state_dict({k: v for k, v in state.items() if k != piece})
    assert engine.state_dict() == before   # nothing changed


def test_a_state_with_an_extra_key_is_refused():
    """Exactly the engine's keys: a piece it does not know is not a state it wrote."""
    engine = BatchedSelfPlayEngine(4, seed=1)
    state = copy.deepcopy(engine.state_dict())
    with pytest.raises(ValueError, match="engine state must be a dict with keys"):
        BatchedSelfPlayEngine(4, seed=2).load_state_dict(dict(state, extra=1))


class _SamplerAtCutEngine(BatchedSelfPlayEngine):
    def _cut(self, model, buffer, critic=None):
        self.open_at_cut = int((self.pending >= 0).sum())
        self.at_cut = self.generator.get_state().clone()
        super()._cut(model, buffer, critic)


def test_the_cut_samples_with_its_own_generator_and_leaves_the_rollout_s_as_it_was():
    """The continuation draws from a generator seeded by one draw of the engine's rng: the
    rollout's sampler (saved with the engine) is where the last recorded decision left it, so
    the next rollout's moves do not depend on the look-ahead."""
    engine = _SamplerAtCutEngine(6, seed=3, target=TARGET, max_rounds=MAX_ROUNDS)
    engine.collect(LowestActionModel(), RolloutBuffer(6 * 4), 4)
    assert engine.open_at_cut > 0
    assert torch.equal(engine.generator.get_state(), engine.at_cut)
