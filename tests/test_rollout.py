"""The self-play engine's rollout cut-off (issue 17), its reward definition and its resume state.

A transition cut by the rollout's end must be closed where its seat's trajectory goes on: at the
seat's next real (non-forced) decision, with the rewards until then and V there, or at the
match's end with the final reward (R8).  The stub policy below always plays the lowest legal
action, so every continuation can be written out by hand.  Cuts and rewards in real rollouts
against a plain reference: test_rollout_transitions.py.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents.random_agent import RandomAgent  # noqa: E402
from sevenrocks_env.observation import OBS_SIZE, encode  # noqa: E402
from sevenrocks_env.rewards import team0_reward  # noqa: E402
from sevenrocks_env.rules import Match, apply_action, legal_actions, team_of  # noqa: E402
from sevenrocks_env.tiles import EAST, KNOCK, NUM_ACTIONS, WEST, parse_tile  # noqa: E402
from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.critic import HANDS_SIZE, hidden_hands  # noqa: E402
from training.opponents import OpponentPool  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

POINTS_SCALE, WIN_REWARD = 0.01, 1.0


class LowestActionModel:
    """Deterministic stub policy: the lowest legal action has probability exactly 1 (the other
    logits are 1000 lower per step, so their probabilities underflow to 0); the value is a fixed
    random linear function of the observation."""

    def __init__(self, seed: int = 0):
        self.weights = torch.from_numpy(np.random.default_rng(seed).normal(size=OBS_SIZE)
                                        .astype(np.float32))

    def __call__(self, obs, mask=None):
        logits = -1000.0 * torch.arange(NUM_ACTIONS, dtype=torch.float32).expand(len(obs), -1)
        return logits, self.value(obs)

    def value(self, obs):
        return obs @ self.weights


class StubCritic:
    """An 'oracle critic' stub: a different linear function that also reads the hidden hands."""

    def __init__(self, seed: int = 1):
        rng = np.random.default_rng(seed)
        self.w_obs = torch.from_numpy(rng.normal(size=OBS_SIZE).astype(np.float32))
        self.w_hands = torch.from_numpy(rng.normal(size=HANDS_SIZE).astype(np.float32))

    def __call__(self, obs, hands):
        return obs @ self.w_obs + hands @ self.w_hands


def _hands(*seats: str) -> list[int]:
    return [sum(1 << parse_tile(t) for t in seat.split()) for seat in seats]


def _place(tile: str, slot: int) -> int:
    return 4 * parse_tile(tile) + slot


# Seat 0 opens 1|2 (its lowest tile).  Then seat 1 has no 1 or 2 (knock, forced), seat 2 has
# exactly one fitting placement (2|6 east, forced), seat 3 has a real choice, and so on.
HANDS = _hands("1|2 1|4 1|5 2|2 2|3 5|6 6|6",
               "0|0 0|3 0|4 0|5 0|6 3|3 3|4",
               "2|6 3|5 3|6 4|4 4|5 4|6 5|5",
               "0|1 0|2 1|1 1|3 1|6 2|4 2|5")
#: The continuation from the cut (seat 1 to move) under the lowest-action policy, by hand:
CONTINUATION = [
    (1, KNOCK),                # seat 1: forced knock                  ends 1 / 2, sum 3
    (2, _place("2|6", EAST)),  # seat 2: forced, its only placement     ends 1 / 6, sum 7
    (3, _place("0|1", WEST)),  # seat 3: real choice (lowest of five)   ends 0 / 6, sum 6
    (0, _place("5|6", EAST)),  # seat 0: real choice                    ends 0 / 5, sum 5: +5 team 0
    (1, _place("0|0", WEST)),  # seat 1: real choice, 0|0 = spinner  ends 0|0 / 5, sum 5: +5 team 1
]


def _cut_engine(scores=(0, 0), pending_margin=(-10, 20, 0, 30), critic=None):
    """An engine with one match right after seat 0's opening 1|2 (seat 1 to move) and an open
    transition k = seat for every seat; returns (engine, buffer, model, match before the cut)."""
    engine = SelfPlayEngine(1, seed=0, points_scale=POINTS_SCALE, win_reward=WIN_REWARD)
    match = Match.from_deal(HANDS, opener=0, scores=scores, seed=123, keep_history=False)
    apply_action(match, _place("1|2", WEST))
    assert match.turn == 1 and match.scores == list(scores)
    engine.matches[0] = match
    engine.pending[0] = [0, 1, 2, 3]
    engine.pending_margin[0] = pending_margin
    buffer = RolloutBuffer(8)
    buffer.size = 4
    return engine, buffer, LowestActionModel(), match.to_state()


def _state_after(before: dict, moves: int) -> Match:
    match = Match.from_state(before)
    for seat, action in CONTINUATION[:moves]:
        assert match.turn == seat and action in legal_actions(match)
        apply_action(match, action)
    return match


def _value(model, match: Match, seat: int, critic=None) -> float:
    obs = torch.from_numpy(encode(match, seat))[None]
    if critic is None:
        return float(model.value(obs)[0])
    return float(critic(obs, torch.from_numpy(hidden_hands(match, seat))[None])[0])


@pytest.mark.parametrize("use_critic", [False, True])
def test_cut_in_each_relative_position_bootstraps_at_the_next_real_decision(use_critic):
    critic = StubCritic() if use_critic else None
    engine, buffer, model, before = _cut_engine()
    engine._cut(model, buffer, critic)
    # (seat, who is to move at the cut relative to it, moves until its next real decision,
    #  its team's margin there) -- pending margins were (-10, 20, 0, 30).
    expected = [
        (0, "left opponent", 3, 0),     # scores 0 / 0 after seat 3's 0|1
        (1, "on turn, forced", 4, -5),  # seat 0's 5|6 scored 5 for team 0
        (2, "right opponent", 5, 0),    # seat 1's 0|0 scored 5 back for team 1
        (3, "partner", 2, 0),           # both forced moves scored nothing
    ]
    for seat, _where, moves, margin in expected:
        state = _state_after(before, moves)
        assert state.turn == seat and len(legal_actions(state)) > 1
        reward = POINTS_SCALE * (margin - (-10, 20, 0, 30)[seat])
        assert buffer.rewards[seat] == pytest.approx(reward, abs=1e-6), _where
        assert buffer.bootstrap[seat] == pytest.approx(_value(model, state, seat, critic),
                                                       rel=1e-5, abs=1e-5), _where
        assert not buffer.dones[seat]
    assert (engine.pending == -1).all()
    assert engine.matches[0].to_state() == before  # the real match did not move


def test_cut_at_own_real_decision_bootstraps_the_current_state():
    engine, buffer, model, before = _cut_engine()
    state = _state_after(before, 2)          # seat 3 to move, with a real choice
    engine.matches[0] = state
    engine.pending[0] = [-1, -1, -1, 3]
    engine.pending_margin[0, 3] = 0
    engine._cut(model, buffer)
    assert buffer.rewards[3] == 0.0
    assert buffer.bootstrap[3] == pytest.approx(_value(model, state, 3), rel=1e-6, abs=1e-6)


def test_continuation_reaching_the_match_end_is_done_with_the_win_reward():
    # Team 0 needs 5: seat 0's 5|6 (the 4th continuation move) wins at once (R8).
    engine, buffer, model, before = _cut_engine(
        scores=(245, 0), pending_margin=(235, -245, 245, -240))
    engine._cut(model, buffer)
    # seats 3 and 0 reach their real decisions before the winning move, seats 1 and 2 do not
    for seat, moves in ((3, 2), (0, 3)):
        state = _state_after(before, moves)
        margin = state.scores[team_of(seat)] - state.scores[1 - team_of(seat)]
        assert buffer.rewards[seat] == pytest.approx(
            POINTS_SCALE * (margin - (235, -245, 245, -240)[seat]), abs=1e-6)
        assert not buffer.dones[seat]
    final = _state_after(before, 4)
    assert final.winner == 0
    assert buffer.dones[1] and buffer.dones[2]
    assert buffer.rewards[2] == pytest.approx(POINTS_SCALE * (250 - 245) + WIN_REWARD, abs=1e-6)
    assert buffer.rewards[1] == pytest.approx(POINTS_SCALE * (-250 + 245) - WIN_REWARD, abs=1e-6)
    assert buffer.bootstrap[1] == buffer.bootstrap[2] == 0.0
    assert engine.matches[0].to_state() == before


def test_rewards_are_the_env_shaped_reward():
    # the trainer's reward and reward="shaped" are one formula (sevenrocks_env.rewards)
    engine, buffer, model, _ = _cut_engine(scores=(245, 0), pending_margin=(0, 0, 0, 0))
    engine._cut(model, buffer)
    assert buffer.rewards[2] == pytest.approx(team0_reward(250, 1, POINTS_SCALE, WIN_REWARD))
    assert buffer.rewards[1] == pytest.approx(-team0_reward(250, 1, POINTS_SCALE, WIN_REWARD))


def test_cut_leaves_opponent_generators_untouched():
    agent = RandomAgent()
    pool = lambda rng: ("random", agent)  # noqa: E731
    pool.key = lambda name, agent: name
    engine = SelfPlayEngine(8, seed=3, opponent_fraction=1.0, opponent_pool=pool)
    model = LowestActionModel()
    buffer = RolloutBuffer(8 * 4)
    engine.collect(model, buffer, 3)   # includes a cut
    before = copy.deepcopy(agent._rng.bit_generator.state)
    engine.pending[:, 0] = 0          # reopen: cut again, opponents must act in continuations
    engine.pending[:, 2] = 1
    engine.learner[:] = [[True, False, True, False]] * 8
    engine._cut(model, buffer)
    assert agent._rng.bit_generator.state == before


def test_cut_draws_its_moves_from_its_own_generator_not_torch_s_global_one():
    """The continuation samples with a generator seeded by one draw of the engine's rng (saved
    with the engine), so it leaves torch's global generator -- the one the rollout's own moves
    are drawn from -- where it was: the real trajectory does not depend on the look-ahead."""
    engine, buffer, model, _ = _cut_engine()
    before = torch.get_rng_state()
    engine._cut(model, buffer)
    assert (engine.pending == -1).all()
    assert torch.equal(torch.get_rng_state(), before)


def test_same_seed_same_rollouts():
    def run():
        torch.manual_seed(0)
        engine = SelfPlayEngine(4, seed=5, target=60)
        buffer = RolloutBuffer(4 * 9)
        engine.collect(_SampledModel(), buffer, 9)
        return buffer, engine.state_dict()

    (a, state_a), (b, state_b) = run(), run()
    for name in ("obs", "actions", "rewards", "bootstrap", "dones", "next_index"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert state_a == state_b


class _SampledModel(LowestActionModel):
    """Uniform over the legal actions: the continuation really samples."""

    def __call__(self, obs, mask=None):
        return torch.zeros(len(obs), NUM_ACTIONS), self.value(obs)


# -- resume state ----------------------------------------------------------------------------

def _engine_with_history():
    engine = SelfPlayEngine(3, seed=7, target=60)
    engine.collect(_SampledModel(), RolloutBuffer(3 * 5), 5)
    return engine


def test_state_dict_round_trip():
    engine = _engine_with_history()
    state = copy.deepcopy(engine.state_dict())
    other = SelfPlayEngine(3, seed=99, target=60)
    other.load_state_dict(state)
    assert other.state_dict() == engine.state_dict()
    # and both play on identically
    torch.manual_seed(1)
    a = RolloutBuffer(3 * 4)
    engine.collect(_SampledModel(), a, 4)
    torch.manual_seed(1)
    b = RolloutBuffer(3 * 4)
    other.collect(_SampledModel(), b, 4)
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.rewards, b.rewards)


def _break(state, piece):
    state = copy.deepcopy(state)
    if piece == "rng":
        state["rng"] = {"bit_generator": "MT19937", "state": {}}
    elif piece == "rng-zero":  # PCG64 takes it, then draws 0 for ever (integers(3) hangs)
        state["rng"]["state"] = {"state": 0, "inc": 0}
    elif piece == "matches":
        state["matches"][1]["hands"][0] = 3
    elif piece == "matches-count":
        state["matches"] = state["matches"][:2]
    elif piece == "learner":
        state["learner"][2] = [True, True, False, True]
    elif piece == "opponents":
        state["opponents"][0] = "nosuchagent"
        state["learner"][0] = [False, True, False, True]
    elif piece == "counters":
        state["counters"][1][0] = -4
    elif piece == "env_steps":
        state["env_steps"] = "many"
    elif piece == "keys":
        del state["counters"]
    return state


@pytest.mark.parametrize("piece, words", [
    ("rng", "rng"), ("rng-zero", "rng"), ("matches", r"matches\[1\].*hands"), ("matches-count", "matches"),
    ("learner", r"learner\[2\]"), ("opponents", "opponents"), ("counters", "counters"),
    ("env_steps", "env_steps"), ("keys", "keys"),
])
def test_load_state_dict_rejects_a_bad_piece_and_changes_nothing(piece, words):
    engine = _engine_with_history()
    good = copy.deepcopy(engine.state_dict())
    pool = OpponentPool(["greedy"], PolicyNet(hidden_sizes=(8,)))
    other = SelfPlayEngine(3, seed=99, target=60, opponent_pool=pool)
    untouched = copy.deepcopy(other.state_dict())
    with pytest.raises(ValueError, match=words):
        other.load_state_dict(_break(good, piece))
    assert other.state_dict() == untouched


def test_load_state_dict_rejects_a_finished_match():
    engine = _engine_with_history()
    state = copy.deepcopy(engine.state_dict())
    state["matches"][0]["truncated"] = True
    with pytest.raises(ValueError, match=r"matches\[0\] is not a match in progress"):
        SelfPlayEngine(3, seed=1, target=60).load_state_dict(state)


def test_matches_in_progress_take_the_run_s_target_and_round_limit():
    """A checkpoint's matches to 10^9 points with no round limit play to the run's target (as
    on the batched engine), and ``--set target=...`` on resume applies to them too."""
    engine = _engine_with_history()
    state = copy.deepcopy(engine.state_dict())
    for values in state["matches"]:
        values.update(target=10**9, max_rounds=None)
    other = SelfPlayEngine(3, seed=99, target=60, max_rounds=40)
    other.load_state_dict(state)
    assert {(m.target, m.max_rounds) for m in other.matches} == {(60, 40)}


class _TiltedModel(LowestActionModel):
    """Fixed, unequal logits: a transition's log-probability depends on its action."""

    def __call__(self, obs, mask=None):
        tilt = torch.linspace(-2.0, 2.0, NUM_ACTIONS)
        return tilt.expand(len(obs), -1), self.value(obs)
