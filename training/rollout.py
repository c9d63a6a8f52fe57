"""Self-play rollouts: N matches side by side in one process, one batched forward pass per step.

The engine drives :class:`sevenrocks_env.rules.Match` directly and builds each decision's input
with the env's own :func:`sevenrocks_env.observation.encode` and legal set (the mask the env
exposes is exactly ``legal_actions``), so a policy trained here plays through ``sevenrocks_v0``
unchanged.

Per-seat trajectories: every seat of a learner team is its own trajectory, stored in
:class:`~training.seats.RolloutBuffer` as :mod:`training.seats` describes.

Rollout cut-offs.  When a rollout ends, a seat's open transition has no successor yet.  Its
successor would be the seat's next *real* decision -- the only kind of state the critic is
trained on -- so :meth:`SelfPlayEngine._cut` plays each open match on, on a clone, until every
open seat reaches that decision (or the match ends) and bootstraps with V there; see its
docstring for why clones rather than carrying transitions into the next rollout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from sevenrocks_env.driver import MatchDriver
from sevenrocks_env.observation import OBS_SIZE, encode
from sevenrocks_env.policy import MaskedCategorical
from sevenrocks_env.rewards import team0_reward, winner_sign
from sevenrocks_env.rules import Match, apply_action, legal_actions, team_of
from sevenrocks_env.tiles import KNOCK, NUM_ACTIONS, NUM_SEATS

from .critic import HANDS_SIZE, hidden_hands
from .engine_state import check_counters, check_keys, check_per_match, check_players, check_rng
from .opponents import restore_generators, save_generators
from .ppo import check_logits
from .seats import MatchSeats, RolloutBuffer


def _margin(match: Match, seat: int) -> int:
    """Score of ``seat``'s team minus the other team's."""
    ours = team_of(seat)
    return match.scores[ours] - match.scores[1 - ours]


def _winner_sign(match: Match, seat: int) -> int:
    """+1 / -1 if ``seat``'s team won / lost the match (R8), 0 while it runs or if truncated."""
    return winner_sign(match.winner) * (1 if team_of(seat) == 0 else -1)


@dataclass
class _Continuation:
    """One open match played on past a rollout's end, on a clone (see ``SelfPlayEngine._cut``)."""

    index: int                       # which of the engine's matches
    match: Match                     # the clone being played on
    open_seats: list[int]            # seats whose open transition is not resolved yet
    legal: list[int] = field(default_factory=list)  # the learner on turn's legal actions


class SelfPlayEngine(MatchSeats):
    """``num_matches`` matches; learner seats act through one batched policy call per step.

    Seats and opponents as in :class:`MatchSeats`.
    """

    def __init__(self, num_matches: int, seed: int, target: int = 250, max_rounds: int = 60,
                 points_scale: float = 0.01, win_reward: float = 1.0,
                 opponent_fraction: float = 0.0, opponent_pool=None):
        super().__init__(num_matches, seed, target, max_rounds, points_scale, win_reward,
                         opponent_fraction, opponent_pool)
        self.matches: list[Match] = [None] * num_matches
        self.pending_margin = np.zeros((num_matches, NUM_SEATS), dtype=np.int64)
        self.legal: list[list[int]] = [[] for _ in range(num_matches)]
        self._obs = np.zeros((num_matches, OBS_SIZE), dtype=np.float32)
        self._hands = np.zeros((num_matches, HANDS_SIZE), dtype=np.float32)
        self._masks = np.zeros((num_matches, NUM_ACTIONS), dtype=bool)
        for i in range(num_matches):
            self._new_match(i)

    # -- match lifecycle ---------------------------------------------------------------------

    def _new_match(self, i: int) -> None:
        self.matches[i] = Match.new(int(self.rng.integers(2**62)), target=self.target,
                                    max_rounds=self.max_rounds, keep_history=False)
        self._seat_new_match(i)

    def _end_match(self, i: int, buffer: RolloutBuffer) -> None:
        """Close every pending transition with the final reward (R8), record stats, deal anew."""
        match = self.matches[i]
        for seat in range(NUM_SEATS):
            k = self.pending[i, seat]
            if k >= 0:
                buffer.rewards[k] += self._reward_since(i, seat, match)
                buffer.dones[k] = True
        team0 = team0_reward(_margin(match, 0), winner_sign(match.winner), self.points_scale,
                             self.win_reward)
        returns = [team0, -team0]  # (zero-sum: team 1 gets the negative, rewards module)
        self._match_stats(i, returns, match.winner,
                          match.round_index + (match.winner is not None), match.truncated)
        self._new_match(i)

    def _reward_since(self, i: int, seat: int, match: Match) -> float:
        """``seat``'s team's reward since its open transition began, with the match in state
        ``match`` (the real one, or a continuation's clone): the shaped reward of
        :mod:`sevenrocks_env.rewards` in the seat team's frame (R5, R7 and, once the match is
        over, R8's win reward)."""
        return team0_reward(_margin(match, seat) - int(self.pending_margin[i, seat]),
                            _winner_sign(match, seat), self.points_scale, self.win_reward)

    def _play(self, i: int, action: int, buffer: RolloutBuffer) -> None:
        """A learner's move in the real match."""
        match = self.matches[i]
        seat = match.turn
        self._book(i, seat, action, apply_action(match, action), buffer)

    def _book(self, i: int, seat: int, action: int, points: int, buffer: RolloutBuffer) -> None:
        """After any move of the real match: counters, and at the match's end the final rewards
        and the next match (:meth:`_end_match`)."""
        self.env_steps += 1
        if self.learner[i, seat] and action != KNOCK:
            self._placements[i] += 1
            self._points[i] += points
        if self.matches[i].over:
            self._end_match(i, buffer)

    def _driver(self, i: int, match: Match, on_move=None) -> MatchDriver:
        """The match flow of :mod:`sevenrocks_env.driver`: forced moves play themselves (not
        trained on), opponents are asked, and learner seats stop it at every real choice."""
        agents = [None if self.learner[i, seat] else self.opponents[i] for seat in range(NUM_SEATS)]
        return MatchDriver(match, agents, on_move=on_move)

    def _advance(self, i: int, buffer: RolloutBuffer) -> None:
        """Play forced moves and opponent moves until a learner seat has a real choice."""
        def book(match, seat, action, points, forced):
            self._book(i, seat, action, points, buffer)

        while self._driver(i, self.matches[i], book).advance() is None:
            pass  # the match ended; _end_match dealt the next one: go on with it
        self.legal[i] = legal_actions(self.matches[i])

    # -- rollouts -----------------------------------------------------------------------------

    @torch.no_grad()
    def collect(self, model, buffer: RolloutBuffer, num_steps: int, critic=None) -> None:
        """Fill ``buffer`` with ``num_steps * num_matches`` learner decisions.

        Values come from ``model``'s value head, or from ``critic`` (an
        :class:`~training.critic.OracleCritic`, which also sees the hidden hands) if given.  The
        hidden hands are stored whatever the critic (the hand guess, ``hand_coef``, reads them
        too), as the batched engine does."""
        buffer.reset()
        obs_t, masks_t = torch.from_numpy(self._obs), torch.from_numpy(self._masks)
        hands_t = torch.from_numpy(self._hands)
        for _ in range(num_steps):
            for i in range(self.num_matches):
                self._advance(i, buffer)
            self._masks.fill(False)
            for i, match in enumerate(self.matches):
                encode(match, match.turn, self._obs[i])
                self._masks[i, self.legal[i]] = True
                hidden_hands(match, match.turn, self._hands[i])
            logits, values = model(obs_t, masks_t)
            if critic is not None:
                values = critic(obs_t, hands_t)
            dist = MaskedCategorical(check_logits(logits, masks_t), masks_t)
            actions = dist.sample()
            logprobs = dist.log_prob(actions)
            start = buffer.size
            end = start + self.num_matches
            buffer.obs[start:end] = self._obs
            buffer.hands[start:end] = self._hands
            buffer.masks[start:end] = self._masks
            buffer.actions[start:end] = actions.numpy()
            buffer.logprobs[start:end] = logprobs.numpy()
            buffer.values[start:end] = values.numpy()
            buffer.size = end
            for i, action in enumerate(actions.tolist()):
                seat = self.matches[i].turn
                k = start + i
                previous = self.pending[i, seat]
                if previous >= 0:
                    buffer.rewards[previous] += self._reward_since(i, seat, self.matches[i])
                    buffer.next_index[previous] = k
                self.pending[i, seat] = k
                self.pending_margin[i, seat] = _margin(self.matches[i], seat)
                self._decisions[i] += 1
                self._play(i, action, buffer)
        self._cut(model, buffer, critic)

    def _cut(self, model, buffer: RolloutBuffer, critic=None) -> None:
        """Rollout end: close every open transition where its seat's trajectory would go on.

        A transition's successor is its seat's next real decision, so each open match is played
        on -- forced moves automatically, learner seats sampling the current ``model``,
        opponents with their own agent -- until every open seat has reached its next real
        decision (reward up to there, bootstrap with V of that seat's view there: ``model``'s
        value head or the oracle ``critic``) or the match ends (the final reward with R8's win
        reward, ``done``).  Bootstrapping with V of the *current* state instead, where usually
        another seat is to move or the seat's move is forced, values states the critic never
        trains on and is biased (see ``benchmarks/cut_bias.py``).

        The continuation is played on clones (:meth:`Match.clone`) and records nothing, so the
        next rollout resumes from the true state and the real trajectory is exactly what it
        would be without the look-ahead: the sampling uses a torch generator seeded by one draw
        of ``self.rng`` (saved with the engine: ``--resume`` stays bit for bit), and opponents'
        generators are restored afterwards.  Carrying open transitions over into the next
        rollout instead would make a batch's advantages depend on the next rollout, entangle
        the rollout with the update in between (the continuation would be played by the
        updated policy) and make checkpoints carry half-finished transitions.
        """
        if not (self.pending >= 0).any():
            return
        generator = torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))
        active = [_Continuation(i, self.matches[i].clone(), np.flatnonzero(row >= 0).tolist())
                  for i, row in enumerate(self.pending) if (row >= 0).any()]
        saved = save_generators(self.opponents[c.index] for c in active)
        to_value = []   # (transition, seat's observation, hidden hands) to bootstrap from
        while active:
            active = [c for c in active if self._continue(c, buffer, to_value)]
            if not active:
                break
            obs = np.stack([encode(c.match, c.match.turn) for c in active])
            masks = np.zeros((len(active), NUM_ACTIONS), dtype=bool)
            for row, c in enumerate(active):
                masks[row, c.legal] = True
            masks_t = torch.from_numpy(masks)
            logits, _ = model(torch.from_numpy(obs), masks_t)
            actions = MaskedCategorical(check_logits(logits, masks_t),
                                        masks_t).sample(generator).tolist()
            for c, action in zip(active, actions):
                apply_action(c.match, action)
        restore_generators(saved)
        if to_value:
            obs = torch.from_numpy(np.stack([o for _, o, _ in to_value]))
            values = model.value(obs) if critic is None else critic(
                obs, torch.from_numpy(np.stack([h for _, _, h in to_value])))
            for (k, _, _), value in zip(to_value, values.tolist()):
                buffer.bootstrap[k] = value
        self.pending.fill(-1)

    def _continue(self, c: _Continuation, buffer: RolloutBuffer, to_value: list) -> bool:
        """Play ``c`` on until a learner seat must choose (True) or nothing is left open (False).

        An open seat that reaches a real decision gets its reward so far and is queued for its
        bootstrap; if the match ends, every seat still open gets the final reward and ``done``."""
        i, match = c.index, c.match
        seat = self._driver(i, match).advance()  # a learner seat's real choice, or the end
        if seat is None:
            for seat in c.open_seats:
                k = self.pending[i, seat]
                buffer.rewards[k] += self._reward_since(i, seat, match)
                buffer.dones[k] = True
            return False
        if seat in c.open_seats:
            k = self.pending[i, seat]
            buffer.rewards[k] += self._reward_since(i, seat, match)
            to_value.append((k, encode(match, seat), hidden_hands(match, seat)))
            c.open_seats.remove(seat)
            if not c.open_seats:
                return False
        c.legal = legal_actions(match)
        return True

    # -- resume -------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Plain-Python state (matches in progress, generator) so ``--resume`` replays the run.
        Taken between rollouts, when no transition is open."""
        return {
            "rng": self.rng.bit_generator.state,
            "matches": [m.to_state() for m in self.matches],
            "learner": self.learner.tolist(),
            "opponents": [None if name is None else self.opponent_pool.key(name, agent)
                          for name, agent in zip(self.opponent_names, self.opponents)],
            "counters": [self._placements.tolist(), self._points.tolist(),
                         self._decisions.tolist()],
            "env_steps": self.env_steps,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (from an untrusted checkpoint file).

        Every piece is checked before anything changes; ``ValueError`` names the bad piece."""
        n = self.num_matches
        check_keys(state, _STATE_KEYS)
        check_rng(state["rng"])
        check_per_match(state, ("matches", "learner", "opponents"), n)
        matches = []
        for i, values in enumerate(state["matches"]):
            if isinstance(values, dict):  # the run's target and round limit, as the batched
                values = dict(values, target=self.target, max_rounds=self.max_rounds)  # engine
            try:
                match = Match.from_state(values)
            except ValueError as error:
                raise ValueError(f"engine state: matches[{i}]: {error}") from None
            if match.seed is None or match.turn < 0 or match.over:
                raise ValueError(f"engine state: matches[{i}] is not a match in progress")
            matches.append(match)
        learner, opponents = check_players(state, n, self.opponent_pool)
        check_counters(state, n)
        counters = state["counters"]
        # everything checked: now change the engine
        self.rng.bit_generator.state = state["rng"]
        self.matches = matches
        self.learner[:] = learner
        for i, (name, agent) in enumerate(opponents):
            self.opponent_names[i], self.opponents[i] = name, agent
        self._placements[:], self._points[:], self._decisions[:] = (
            np.array(c, dtype=np.int64) for c in counters)
        self.env_steps = state["env_steps"]
        self.pending.fill(-1)


_STATE_KEYS = {"rng", "matches", "learner", "opponents", "counters", "env_steps"}
