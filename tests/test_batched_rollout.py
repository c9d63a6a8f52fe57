"""The batched self-play engine against an independent reference loop over ``rules.Match``.

With a deterministic stub policy (the lowest legal action) every transition the batched engine
stores -- observation, mask, hidden hands, action, value, reward, done, ``next_index``, and the
cut-off's bootstrap (issue 17: V at the open seat's next real decision) -- can be recomputed by
playing the same matches one by one with ``rules.apply_action``.  The deals come from the batched
engine's counter-based deal function, a pure function of (seed, env, match count, round).
The engine with an opponent pool: ``test_batched_rollout_pool.py``; seeding, resume and
refused states: ``test_batched_rollout_state.py``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.batched.deal import deal  # noqa: E402
from sevenrocks_env.observation import encode  # noqa: E402
from sevenrocks_env.rules import (DOMINO, KNOCK, Match, apply_action, legal_actions,  # noqa: E402
                                  team_of)
from sevenrocks_env.tiles import NUM_ACTIONS  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.critic import hidden_hands  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

from test_rollout import LowestActionModel, StubCritic  # noqa: E402

SCALE, WIN = 0.01, 1.0
TARGET, MAX_ROUNDS = 60, 3   # short matches: wins, truncations and new rounds in a few steps
FIELDS = ("obs", "hands", "masks", "actions", "logprobs", "values", "rewards", "dones",
          "next_index", "bootstrap")


class Reference:
    """The trainer's rollout semantics, one ``rules.Match`` per env, lowest legal action."""

    target, max_rounds = TARGET, MAX_ROUNDS

    def __init__(self, seed: int, num_envs: int, model, critic):
        self.seed, self.model, self.critic = seed, model, critic
        self.finished = [0] * num_envs
        self.matches = [self._deal(env, None) for env in range(num_envs)]
        self.pending = {}   # (env, seat) -> (transition, team margin when it opened)
        self.cut_positions = set()
        self.cut_dones = 0   # open seats the last rollout's cut closed at the match's end

    def _deal(self, env: int, match: Match | None) -> Match:
        """Env ``env``'s next round (R2's opener after a domino) or, if ``match`` is None or
        over, its next match."""
        new = match is None or match.over
        rounds = 0 if new else match.round_index
        hands, opener = deal(self.seed, torch.tensor([env]),
                             torch.tensor([self.finished[env]]), torch.tensor([rounds]))
        hands, opener = hands[0].tolist(), int(opener[0])
        if new:
            return Match.from_deal(hands, opener, target=self.target, max_rounds=self.max_rounds)
        last = match.history[-1]
        match.start_round(hands, last.finisher if last.result == DOMINO else opener)
        return match

    def _play(self, env: int, match: Match, action: int) -> None:
        apply_action(match, action)
        if match.awaiting_deal:
            self._deal(env, match)

    @staticmethod
    def _margin(match: Match, seat: int) -> int:
        ours = team_of(seat)
        return match.scores[ours] - match.scores[1 - ours]

    def _reward(self, match: Match, seat: int, since: int) -> float:
        sign = 0 if match.winner is None else (1 if match.winner == team_of(seat) else -1)
        return SCALE * (self._margin(match, seat) - since) + WIN * sign

    def _value(self, match: Match, seat: int) -> float:
        obs = torch.from_numpy(encode(match, seat))[None]
        if self.critic is None:
            return float(self.model.value(obs)[0])
        return float(self.critic(obs, torch.from_numpy(hidden_hands(match, seat))[None])[0])

    def collect(self, num_steps: int) -> dict:
        capacity = num_steps * len(self.matches)
        out = {name: [] for name in ("obs", "hands", "masks", "actions", "values")}
        rewards, dones = np.zeros(capacity), np.zeros(capacity, bool)
        next_index, bootstrap = np.full(capacity, -1), np.zeros(capacity)
        size = 0
        while size < capacity:
            for env, match in enumerate(self.matches):
                legal = legal_actions(match)
                seat = match.turn
                if len(legal) > 1:
                    if size == capacity:
                        continue   # the cut: this decision stays unplayed
                    out["obs"].append(encode(match, seat))
                    out["hands"].append(hidden_hands(match, seat))
                    mask = np.zeros(NUM_ACTIONS, bool)
                    mask[legal] = True
                    out["masks"].append(mask)
                    out["actions"].append(min(legal))
                    out["values"].append(self._value(match, seat))
                    if (env, seat) in self.pending:
                        k, since = self.pending[env, seat]
                        rewards[k] += self._reward(match, seat, since)
                        next_index[k] = size
                    self.pending[env, seat] = (size, self._margin(match, seat))
                    size += 1
                self._play(env, match, min(legal))
                if match.over:
                    for s in range(4):
                        if (env, s) in self.pending:
                            k, since = self.pending.pop((env, s))
                            rewards[k] += self._reward(match, s, since)
                            dones[k] = True
                    self.finished[env] += 1
                    self.matches[env] = self._deal(env, None)
        self.cut_dones = 0
        for env, match in enumerate(self.matches):   # the cut, on clones
            open_seats = sorted(s for (e, s) in self.pending if e == env)
            for s in open_seats:
                self.cut_positions.add((match.turn - s) & 3)
            clone = copy.deepcopy(match)
            while open_seats:
                legal = legal_actions(clone)
                if len(legal) > 1 and clone.turn in open_seats:
                    k, since = self.pending[env, clone.turn]
                    rewards[k] += self._reward(clone, clone.turn, since)
                    bootstrap[k] = self._value(clone, clone.turn)
                    open_seats.remove(clone.turn)
                    continue
                apply_action(clone, min(legal))
                if clone.over:
                    for s in open_seats:
                        k, since = self.pending[env, s]
                        rewards[k] += self._reward(clone, s, since)
                        dones[k] = True
                        self.cut_dones += 1
                    open_seats = []
                elif clone.awaiting_deal:
                    self._deal(env, clone)
        self.pending.clear()
        result = {name: np.array(values) for name, values in out.items()}
        result.update(rewards=rewards, dones=dones, next_index=next_index, bootstrap=bootstrap)
        return result


def _buffers(engine, model, rollouts: int, num_steps: int, critic=None) -> list[dict]:
    buffer = RolloutBuffer(engine.num_matches * num_steps)
    out = []
    for _ in range(rollouts):
        engine.collect(model, buffer, num_steps, critic)
        assert buffer.size == engine.num_matches * num_steps
        out.append({name: getattr(buffer, name).copy() for name in FIELDS})
    return out


@pytest.mark.parametrize("use_critic, rollouts, num_steps", [
    (False, 6, 5), (True, 6, 5),
    (False, 1, 60),  # long enough for matches to end inside the rollout, not only in the cut
])
def test_agrees_with_reference_loop_over_rules(use_critic, rollouts, num_steps):
    model, critic = LowestActionModel(), (StubCritic() if use_critic else None)
    engine = BatchedSelfPlayEngine(6, seed=3, target=TARGET, max_rounds=MAX_ROUNDS,
                                   points_scale=SCALE, win_reward=WIN)
    reference = Reference(engine.venv.seed, 6, model, critic)
    dones = 0
    for got in _buffers(engine, model, rollouts=rollouts, num_steps=num_steps, critic=critic):
        want = reference.collect(num_steps)
        for name in ("obs", "hands", "masks", "actions", "next_index", "dones"):
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        for name in ("values", "rewards", "bootstrap"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5,
                                       err_msg=name)
        assert (got["masks"].sum(1) > 1).all()   # forced moves are never recorded
        dones += got["dones"].sum()
    assert dones > 0
    assert reference.cut_positions == {0, 1, 2, 3}   # every relative position of a cut seen


class CountingReference(Reference):
    """The reference loop, also counting what the trainer's stats describe (self-play: every
    seat is a learner): moves played, and per match its rounds, recorded decisions, placements
    and their points (R5)."""

    def __init__(self, seed, num_envs, model, critic):
        self.env_steps = 0
        self.stats = {"rounds_per_match": [], "episodic_length": [], "points_per_placement": [],
                      "episodic_return": []}
        self.rounds, self.decisions = [0] * num_envs, [0] * num_envs
        self.placements, self.points = [0] * num_envs, [0] * num_envs
        super().__init__(seed, num_envs, model, critic)

    def _deal(self, env, match):
        if match is None or match.over:   # a new match (after the one that ended, if any)
            if hasattr(self, "matches"):
                self._close(env)
            self.rounds[env] = self.decisions[env] = self.placements[env] = self.points[env] = 0
        if match is None or match is self.matches[env]:   # not the cut's clones
            self.rounds[env] += 1
        return super()._deal(env, match)

    def _close(self, env):
        """Match ``env``'s end (``self.matches[env]`` is still the match that ended)."""
        self.stats["rounds_per_match"].append(self.rounds[env])
        for team in (0, 1):   # self-play: both teams learn; their returns cancel out
            self.stats["episodic_return"].append(self._reward(self.matches[env], team, 0))
        self.stats["episodic_length"].append(self.decisions[env])
        if self.placements[env]:
            self.stats["points_per_placement"].append(self.points[env] / self.placements[env])

    def _play(self, env, match, action):
        self.env_steps += 1
        if action != KNOCK:
            self.placements[env] += 1
            self.points[env] += apply_action(match, action)
        else:
            apply_action(match, action)
        if match.awaiting_deal:
            self._deal(env, match)


class PythonCountingReference(CountingReference):
    """:class:`CountingReference` for the Python engine (:class:`SelfPlayEngine`): its matches
    are ``Match.new`` of the seeds the engine drew (``seeds[env]``, in order), which deal their
    own rounds; each step every env first plays its forced moves, then all envs make one
    decision each, in env order (so matches end, and are logged, in the engine's order)."""

    def __init__(self, seeds: dict, num_envs: int, model):
        self.seeds = {env: list(values) for env, values in seeds.items()}
        super().__init__(None, num_envs, model, None)

    def _deal(self, env, match):
        assert match is None or match.over, "a seeded match deals its own rounds"
        if hasattr(self, "matches"):
            self._close(env)
        self.rounds[env], self.decisions[env] = 1, 0
        self.placements[env] = self.points[env] = 0
        return Match.new(self.seeds[env].pop(0), target=self.target, max_rounds=self.max_rounds,
                         keep_history=False)

    def _play(self, env, match, action):
        before = match.round_index
        super()._play(env, match, action)
        if not match.over and match.round_index != before:
            self.rounds[env] += 1   # a new round of this match began

    def _move(self, env, action):
        match = self.matches[env]
        self._play(env, match, action)
        if match.over:
            self.finished[env] += 1
            self.matches[env] = self._deal(env, None)

    def collect(self, num_steps: int) -> None:
        for _ in range(num_steps):
            for env in range(len(self.matches)):
                while len(legal := legal_actions(self.matches[env])) == 1:
                    self._move(env, legal[0])   # forced
            for env in range(len(self.matches)):
                self.decisions[env] += 1
                self._move(env, min(legal_actions(self.matches[env])))


@pytest.mark.parametrize("engine_class", [BatchedSelfPlayEngine, SelfPlayEngine])
def test_stats_and_env_steps_match_the_reference_loop(monkeypatch, engine_class):
    """Self-play: per ended match its rounds, recorded decisions, points a placement and both
    teams' returns, and every move played, as an independent loop counts them -- run until an
    env has ended two matches (its counters must start again at the second)."""
    model = LowestActionModel()
    settings = dict(target=TARGET, max_rounds=MAX_ROUNDS, points_scale=SCALE, win_reward=WIN)
    if engine_class is BatchedSelfPlayEngine:
        engine = BatchedSelfPlayEngine(6, seed=3, **settings)
        reference = CountingReference(engine.venv.seed, 6, model, None)
        # a recorded decision: the reference calls hidden_hands(match, seat) exactly once per
        # recorded transition (the cut's clones use _value, not hidden_hands), on the real match
        real_hidden_hands = hidden_hands

        def counting_hidden_hands(match, seat):
            env = next(e for e, m in enumerate(reference.matches) if m is match)
            reference.decisions[env] += 1
            return real_hidden_hands(match, seat)

        monkeypatch.setitem(globals(), "hidden_hands", counting_hidden_hands)
    else:
        seeds, real_new_match = {}, SelfPlayEngine._new_match

        def recording_new_match(engine, i):
            real_new_match(engine, i)
            seeds.setdefault(i, []).append(engine.matches[i].seed)

        monkeypatch.setattr(SelfPlayEngine, "_new_match", recording_new_match)
        engine = SelfPlayEngine(6, seed=3, **settings)
        reference = None   # built once the engine has drawn every match's seed
    num_steps, rollouts = 20, 5
    for _ in _buffers(engine, model, rollouts=rollouts, num_steps=num_steps):
        pass
    if reference is None:
        reference = PythonCountingReference(seeds, 6, model)
    for _ in range(rollouts):
        reference.collect(num_steps)
    got = engine.pop_stats()
    assert max(reference.finished) >= 2, reference.finished   # an env's second match ended
    assert len(reference.stats["rounds_per_match"]) > 6   # several matches ended
    for key, want in reference.stats.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-5, atol=1e-6, err_msg=key)
    assert len(got["episodic_return"]) == 2 * len(got["rounds_per_match"])
    assert engine.env_steps == reference.env_steps


class _TruncatingReference(Reference):
    target, max_rounds = 500, 1


def test_cuts_that_reach_a_truncation_are_done():
    """max_rounds=1 and a target out of reach: every match is truncated at its first round's
    end, and a cut continuation that gets there closes its open seats (done)."""
    model = LowestActionModel()
    engine = BatchedSelfPlayEngine(6, seed=3, target=500, max_rounds=1, points_scale=SCALE,
                                   win_reward=WIN)
    reference = _TruncatingReference(engine.venv.seed, 6, model, None)
    cut_dones = 0
    for got in _buffers(engine, model, rollouts=8, num_steps=3):
        want = reference.collect(3)
        for name in ("next_index", "dones"):
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        for name in ("rewards", "bootstrap"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5,
                                       err_msg=name)
        cut_dones += reference.cut_dones
    assert cut_dones > 0


def test_logprobs_are_those_of_the_sampled_actions():
    from test_rollout import _TiltedModel
    engine = BatchedSelfPlayEngine(6, seed=4, target=TARGET, max_rounds=MAX_ROUNDS)
    buffer = RolloutBuffer(6 * 8)
    engine.collect(_TiltedModel(), buffer, 8)
    tilt = torch.linspace(-2.0, 2.0, NUM_ACTIONS)
    first_legal = buffer.masks.argmax(1)
    assert (buffer.actions != first_legal).any()   # not only the lowest legal action
    for k in range(buffer.size):
        legal = np.flatnonzero(buffer.masks[k]).tolist()
        assert buffer.actions[k] in legal
        expected = torch.log_softmax(tilt[legal], 0)[legal.index(int(buffer.actions[k]))]
        assert buffer.logprobs[k] == pytest.approx(float(expected), abs=1e-5), k
