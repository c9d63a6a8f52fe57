"""Determinized rollouts for many decisions in one batched engine (under ``search`` and
``search:policy``).

A decision is a seat's view, its legal actions, and ``S`` sampled worlds (the hidden hands,
:class:`~sevenrocks_env.agents.belief.HandSampler`).  :class:`WorldRollouts` loads one copy of
every (decision, world, action) into a :class:`~sevenrocks_env.batched.VectorEnv`
(:func:`~sevenrocks_env.batched.worlds.views_state`), plays each copy's action, then lets a
rollout policy move for all four seats until the copy's round ends (R7) -- or, for a decision
given ``rounds > 1``, until the match ends (R8) or that many rounds have ended -- and returns our
partnership's outcome per copy: our score change minus theirs, plus ``win_bonus`` if we win the
match in the rollout (minus it if they do).  World seat 0 is the observer, so that is team 0's
shaped reward with ``points_scale = 1``.

The copies of one world share its deal stream, so in rollouts past the round every action of a
world is followed by the same later deals.  Every number a decision uses comes from its own
``rng``; how decisions are grouped into calls does not change any result.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..batched import VectorEnv, layout
from ..batched.worlds import views_state
from ..observation import SeatView
from ..tiles import NUM_ACTIONS
from .belief import MAX_WORLDS, HandSampler

#: Most copies (worlds x actions, summed over decisions) stepped together.
MAX_COPIES = 1 << 16
assert MAX_WORLDS * NUM_ACTIONS <= MAX_COPIES  # one decision's copies always fit
_STREAMS = 1 << 40

#: ``choose(env, rows)``: the rollout policy's actions for the envs ``rows`` (each has a choice).
Chooser = Callable[[VectorEnv, torch.Tensor], torch.Tensor]


class Decision:
    """One seat's decision: its view, legal actions (ascending), worlds, and round budget.

    ``hidden``: per world, the hands of relative seats 1-3; ``streams``: per world, the deal
    stream of its later rounds (used only when ``rounds > 1``).
    """

    __slots__ = ("view", "legal", "hidden", "streams", "rounds")

    def __init__(self, view: SeatView, legal: list[int], hidden, streams=None, rounds: int = 1):
        self.view, self.legal, self.rounds = view, list(legal), int(rounds)
        self.hidden = [tuple(world) for world in hidden]
        self.streams = [0] * len(self.hidden) if streams is None else list(streams)
        if not self.hidden or len(self.streams) != len(self.hidden) or not self.legal:
            raise ValueError("a decision needs legal actions and one deal stream per world")

    @classmethod
    def sample(cls, view: SeatView, legal: list[int], samples: int, rng: np.random.Generator,
               rounds: int = 1) -> "Decision":
        """``samples`` worlds drawn uniformly among the deals consistent with ``view``."""
        hidden = HandSampler(view).sample_many(rng, samples)
        return cls(view, legal, hidden, rng.integers(0, _STREAMS, size=samples).tolist(), rounds)

    @property
    def copies(self) -> int:
        return len(self.hidden) * len(self.legal)


def rollout_moves(env: VectorEnv, done: torch.Tensor, choose: Chooser) -> torch.Tensor:
    """Every env's next move: ``choose`` where the seat on turn has a real choice and the copy
    is still playing, the one legal action otherwise (forced moves, finished copies)."""
    mask = env.action_mask
    action = mask.to(torch.int8).argmax(1)
    rows = (~done & (layout.legal_counts(mask) > 1)).nonzero().squeeze(1)
    if rows.numel():
        action = action.index_copy(0, rows, choose(env, rows))
    return action


def copy_groups(copies: list[int], keys: list | None = None):
    """``(start, end)`` spans of consecutive items whose ``copies`` sum to at most
    :data:`MAX_COPIES` (an item above it alone) and whose ``keys`` are equal, in order."""
    start = 0
    while start < len(copies):
        end, total = start + 1, copies[start]
        while end < len(copies) and total + copies[end] <= MAX_COPIES and (
                keys is None or keys[end] == keys[start]):
            total += copies[end]
            end += 1
        yield start, end
        start = end


class WorldRollouts:
    """Plays decisions' copies to their end (module docstring) on ``device``."""

    def __init__(self, device="cpu", win_bonus: float = 50.0):
        self.device, self.win_bonus = torch.device(device), float(win_bonus)
        self._envs: dict[tuple[int, int], VectorEnv] = {}

    def values(self, decisions: list[Decision], choose: Chooser) -> list[np.ndarray]:
        """Per decision, ``float64[S, A]``: the outcome of world ``s`` after action ``a``."""
        out: list[np.ndarray] = []
        spans = copy_groups([d.copies for d in decisions], [d.view.target for d in decisions])
        for start, end in spans:  # at most MAX_COPIES copies, one target each
            out += self._play(decisions[start:end], choose)
        return out

    def env(self, size: int, target: int) -> VectorEnv:
        """A ``size``-env rollout engine for ``target``, kept for the next call (at most 8)."""
        key = (size, target)
        if key not in self._envs:
            if len(self._envs) >= 8:
                self._envs.clear()
            self._envs[key] = VectorEnv(size, device=self.device, target=target, max_rounds=None,
                                        reward="shaped", points_scale=1.0,
                                        win_reward=self.win_bonus, validate=False)
        return self._envs[key]

    def _play(self, decisions: list[Decision], choose: Chooser) -> list[np.ndarray]:
        view_index, hidden, streams, first, rounds = [], [], [], [], []
        for d, decision in enumerate(decisions):
            for world, stream in zip(decision.hidden, decision.streams):
                for action in decision.legal:  # world-major: copy = world * A + action
                    view_index.append(d)
                    hidden.append(world)
                    streams.append(stream)
                    first.append(action)
                    rounds.append(decision.rounds)
        device = self.device
        env = self.env(len(first), decisions[0].view.target)
        state = views_state([d.view for d in decisions],
                            torch.tensor(view_index, device=device),
                            torch.tensor(hidden, dtype=torch.long, device=device), device)
        env.load_state(state, seed=0, deal_streams=torch.tensor(streams, device=device))
        limit = torch.tensor(rounds, device=device)
        value = torch.zeros(env.num_envs, dtype=torch.float64, device=device)
        done = torch.zeros(env.num_envs, dtype=torch.bool, device=device)
        action = torch.tensor(first, device=device)
        while True:
            rewards, _, _ = env.step(action)
            value += torch.where(done, 0.0, rewards[:, 0].double())  # world seat 0 is us
            state = env.state
            done |= (state.matches > 0) | (state.round_index >= limit)
            if bool(done.all()):
                break
            action = rollout_moves(env, done, choose)
        values, offset = value.cpu().numpy(), 0
        out = []
        for decision in decisions:
            out.append(values[offset:offset + decision.copies].reshape(
                len(decision.hidden), len(decision.legal)))
            offset += decision.copies
        return out


__all__ = ["Chooser", "Decision", "MAX_COPIES", "WorldRollouts", "copy_groups", "rollout_moves"]
