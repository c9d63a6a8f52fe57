"""The self-play engine's transitions in real rollouts: cuts against a plain reference
continuation, the rewards and dones inside a rollout (the margin change until the seat's next
decision), the link to that decision, what each transition stores, and pool matches recording
only the learner team.  The cut-off by hand and the resume state: test_rollout.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents.random_agent import RandomAgent  # noqa: E402
from sevenrocks_env.observation import encode  # noqa: E402
from sevenrocks_env.rules import Match, apply_action, legal_actions, team_of  # noqa: E402
from sevenrocks_env.tiles import NUM_ACTIONS  # noqa: E402
from training.critic import hidden_hands  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

from test_rollout import POINTS_SCALE, WIN_REWARD, LowestActionModel, StubCritic, \
    _SampledModel, _TiltedModel, _value  # noqa: E402


# -- cuts in real rollouts against a plain reference continuation ------------------------------

def _reference(match_state: dict, seat: int, margin_before: int, model, critic):
    """Seat's reward and bootstrap after a cut, by playing the lowest-action policy one move at
    a time: (reward, bootstrap, done)."""
    match = Match.from_state(match_state)
    ours = team_of(seat)
    while not match.over:
        legal = legal_actions(match)
        if match.turn == seat and len(legal) > 1:
            break
        apply_action(match, legal[0])
    margin = match.scores[ours] - match.scores[1 - ours] - margin_before
    if match.over:
        sign = 0 if match.winner is None else (1 if match.winner == ours else -1)
        return POINTS_SCALE * margin + WIN_REWARD * sign, 0.0, True
    return POINTS_SCALE * margin, _value(model, match, seat, critic), False


class RecordingEngine(SelfPlayEngine):
    """Keeps what the cut starts from, to check it against the reference."""

    def _cut(self, model, buffer, critic=None):
        self.before = ([m.to_state() for m in self.matches], self.pending.copy(),
                       self.pending_margin.copy(), buffer.rewards.copy())
        super()._cut(model, buffer, critic)


@pytest.mark.parametrize("seed, target, critic", [(0, 250, None), (1, 30, None),
                                                   (2, 30, StubCritic())])
def test_rollout_cuts_match_the_reference_continuation(seed, target, critic):
    engine = RecordingEngine(6, seed=seed, target=target, points_scale=POINTS_SCALE,
                             win_reward=WIN_REWARD)
    model = LowestActionModel()
    positions, dones = set(), 0
    for steps in (5, 6, 7):  # several cuts, at different points of the matches
        buffer = RolloutBuffer(steps * 6)
        engine.collect(model, buffer, steps, critic)
        states, pending, margins, rewards = engine.before
        for i, seat in np.argwhere(pending >= 0):
            k = pending[i, seat]
            reward, bootstrap, done = _reference(states[i], seat, margins[i, seat], model, critic)
            assert buffer.rewards[k] - rewards[k] == pytest.approx(reward, abs=1e-5)
            assert buffer.dones[k] == done
            assert buffer.bootstrap[k] == pytest.approx(bootstrap, rel=1e-5, abs=1e-5)
            match = Match.from_state(states[i])
            forced = match.turn == seat and len(legal_actions(match)) == 1
            positions.add(("forced" if forced else "") + str((match.turn - seat) % 4))
            dones += done
        assert [m.to_state() for m in engine.matches] == states  # the cut moved nothing
    assert {"1", "2", "3"} <= positions
    assert dones > 0 or target == 250  # at 30 points, cuts that end the match are checked too


def test_a_transition_links_to_its_seats_very_next_decision():
    """``next_index[k]`` is the next decision of the same seat of the same match (GAE runs
    along these links), for every transition that has one."""
    engine = SelfPlayEngine(4, seed=3, target=60)
    owners = []  # (match, seat) of each transition, in buffer order
    play = engine._play

    def recording_play(i, action, buffer):
        owners.append((i, engine.matches[i].turn))
        return play(i, action, buffer)
    engine._play = recording_play
    buffer = RolloutBuffer(4 * 12)
    torch.manual_seed(0)
    engine.collect(_SampledModel(), buffer, 12)
    assert len(owners) == buffer.size
    linked = 0
    for k, n in enumerate(buffer.next_index[:buffer.size]):
        if n >= 0:
            assert n > k and owners[n] == owners[k], (k, n)
            assert owners[k] not in owners[k + 1:n]  # the very next one, none skipped
            linked += 1
    assert linked > buffer.size // 2


# -- rewards and dones inside a rollout ----------------------------------------------------------

class BookingEngine(RecordingEngine):
    """Records each decision's seat and team margin, and each match end's final margins."""

    def __init__(self, *args, **kwargs):
        self.decisions, self.finals = [], {}
        super().__init__(*args, **kwargs)

    def _play(self, i, action, buffer):
        match = self.matches[i]
        ours = team_of(match.turn)
        self.decisions.append((i, match.turn, match.scores[ours] - match.scores[1 - ours]))
        super()._play(i, action, buffer)

    def _end_match(self, i, buffer):
        match = self.matches[i]
        for seat in range(4):
            k = self.pending[i, seat]
            if k >= 0:
                ours = team_of(seat)
                sign = 0 if match.winner is None else (1 if match.winner == ours else -1)
                self.finals[k] = (match.scores[ours] - match.scores[1 - ours], sign)
        super()._end_match(i, buffer)


def test_rewards_inside_a_rollout_are_the_margin_change_until_the_seat_s_next_decision():
    """Every transition not cut off: the seat team's margin change until the same seat's next
    decision (points_scale each), or until the match's end plus the win reward, then done."""
    engine = BookingEngine(6, seed=4, target=30, points_scale=POINTS_SCALE,
                           win_reward=WIN_REWARD)
    buffer = RolloutBuffer(6 * 40)
    torch.manual_seed(0)
    engine.collect(_SampledModel(), buffer, 20)   # the second rollout reuses the buffer
    engine.decisions, engine.finals = [], {}
    engine.collect(_SampledModel(), buffer, 40)
    _, pending, _, _ = engine.before
    cut = set(pending[pending >= 0].tolist())
    assert len(engine.decisions) == buffer.size and engine.finals
    checked = 0
    for k, (_i, _seat, margin) in enumerate(engine.decisions):
        n = buffer.next_index[k]
        if n >= 0:
            expected, done = POINTS_SCALE * (engine.decisions[n][2] - margin), False
        elif k in engine.finals:
            final, sign = engine.finals[k]
            expected, done = POINTS_SCALE * (final - margin) + WIN_REWARD * sign, True
        else:
            assert k in cut, k   # every other transition was open at the rollout's end
            continue
        assert buffer.rewards[k] == pytest.approx(expected, abs=1e-5), k
        assert buffer.dones[k] == done, k
        checked += 1
    assert checked > buffer.size // 2
    assert any(buffer.rewards[k] != 0 for k in range(buffer.size) if buffer.next_index[k] >= 0)


@pytest.mark.parametrize("critic", [None, StubCritic()])
def test_each_transition_stores_its_own_seat_s_view_action_and_value(critic):
    """Observation, hidden hands and mask of the seat on turn, the log-probability of the action
    taken, and the value of the critic in use (the model's value head, or the oracle critic)."""
    engine = BookingEngine(4, seed=6, target=60)
    seen = []
    play = engine._play

    def viewing_play(i, action, buffer):
        match = engine.matches[i]
        seen.append((encode(match, match.turn), hidden_hands(match, match.turn),
                     legal_actions(match)))
        return play(i, action, buffer)
    engine._play = viewing_play
    model, buffer = _TiltedModel(), RolloutBuffer(4 * 10)
    torch.manual_seed(1)
    engine.collect(model, buffer, 10, critic)
    assert len(seen) == buffer.size == 40
    obs, hands = np.stack([s[0] for s in seen]), np.stack([s[1] for s in seen])
    np.testing.assert_array_equal(buffer.obs, obs)
    np.testing.assert_array_equal(buffer.hands, hands)
    for k, (_, _, legal) in enumerate(seen):
        assert np.flatnonzero(buffer.masks[k]).tolist() == sorted(legal)
        assert buffer.actions[k] in legal
        tilt = torch.linspace(-2.0, 2.0, NUM_ACTIONS)[sorted(legal)]
        expected = torch.log_softmax(tilt, 0)[sorted(legal).index(int(buffer.actions[k]))]
        assert buffer.logprobs[k] == pytest.approx(float(expected), abs=1e-5), k
    obs_t, hands_t = torch.from_numpy(obs), torch.from_numpy(hands)
    values = model.value(obs_t) if critic is None else critic(obs_t, hands_t)
    np.testing.assert_allclose(buffer.values, values.numpy(), rtol=1e-5, atol=1e-5)


def test_pool_matches_record_only_the_learner_team_s_decisions():
    agent = RandomAgent()
    pool = lambda rng: ("random", agent)  # noqa: E731
    engine = SelfPlayEngine(8, seed=3, target=60, opponent_fraction=1.0, opponent_pool=pool)
    assert engine.learner.sum() == 8 * 2
    recorded = []
    play = engine._play

    def checking_play(i, action, buffer):
        recorded.append(bool(engine.learner[i, engine.matches[i].turn]))
        return play(i, action, buffer)
    engine._play = checking_play
    buffer = RolloutBuffer(8 * 6)
    engine.collect(LowestActionModel(), buffer, 6)
    assert len(recorded) == buffer.size and all(recorded)
