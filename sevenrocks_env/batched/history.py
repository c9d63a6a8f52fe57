"""The public history of each env's current round: its start and the actions played since.

:class:`RoundHistory` follows a :class:`~sevenrocks_env.batched.VectorEnv`: call
:meth:`RoundHistory.record` after every step with the actions stepped.  An env whose round ended
(R7), or whose match ended and was replaced by the next one (auto-reset, R8), starts a new
history from its state after the step.  What it keeps is what every seat saw: the round's start
(scores, opener, round number) and the actions in order, knocks included (R6).  It keeps **no
hands**: ``round_start.hands`` is zero.  A seat's hand at the round's start is its hand now plus
what it played this round (R1), so a replay rebuilds it for the seat whose hand it knows and
takes the others from a sampled world (:mod:`sevenrocks_env.agents.inference`).
"""

from __future__ import annotations

import operator

import torch

from ..public_round import PublicRound
from ..tiles import NUM_ACTIONS
from .state import FIELDS
from .vector_env import VectorEnv


def _is_action(action) -> bool:
    """An integer (a bool is not) naming one of the 113 actions."""
    try:
        index = operator.index(action)
    except TypeError:
        return False
    return not isinstance(action, bool) and 0 <= index < NUM_ACTIONS


class RoundHistory:
    """``round_start`` (a :class:`~sevenrocks_env.batched.BatchState`, hands zeroed),
    ``actions`` (``LongTensor[B, capacity]``, grown when a round needs more) and ``length``
    (``LongTensor[B]``): env ``i``'s round so far is ``actions[i, :length[i]]``."""

    def __init__(self, env: VectorEnv, capacity: int = 128):
        with torch.inference_mode(False):  # recorded into in place, in or out of inference mode
            self.round_start = env.state.take()
            self.round_start.hands.zero_()
            self.actions = torch.zeros(env.num_envs, capacity, dtype=torch.long,
                                       device=env.device)
            self.length = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
            self._round_index = env.state.round_index.clone()
            self._matches = env.state.matches.clone()
            self._rows = torch.arange(env.num_envs, device=env.device)

    @classmethod
    def of_rounds(cls, env: VectorEnv, actions: list) -> "RoundHistory":
        """The history of rounds that began at ``env``'s present state and have since played
        ``actions[i]`` (a sequence of ints) in env ``i`` (``env`` itself stays at their start:
        the caller moves it on, e.g. with :meth:`VectorEnv.load`).  At most one sequence per
        env, each of action numbers (0-112); whether they are legal is the replay's to say."""
        if len(actions) > env.num_envs:
            raise ValueError(f"{len(actions)} rounds of actions for {env.num_envs} envs")
        for row, played in enumerate(actions):
            bad = [a for a in played if not _is_action(a)]
            if bad:
                raise ValueError(f"env {row}'s actions must be ints 0-{NUM_ACTIONS - 1}, "
                                 f"not {bad[0]!r}")
        longest = max((len(played) for played in actions), default=0)
        history = cls(env, capacity=max(128, longest + 1))
        with torch.inference_mode(False):
            for row, played in enumerate(actions):
                history.actions[row, :len(played)] = torch.as_tensor(played, dtype=torch.long)
                history.length[row] = len(played)
        return history

    def public_round(self, row: int) -> PublicRound:
        """Env ``row``'s round so far, as the AEC env's ``public_round()`` gives it."""
        scores = self.round_start.scores[row].tolist()
        return PublicRound(int(self.round_start.opener[row]), (scores[0], scores[1]),
                           tuple(self.actions[row, :int(self.length[row])].tolist()))

    def record(self, env: VectorEnv, actions: torch.Tensor) -> None:
        """Append the actions ``env`` just stepped; restart the envs whose round changed."""
        with torch.inference_mode(False):
            if int(self.length.max()) >= self.actions.shape[1]:  # a long run of knocks: grow
                self.actions = torch.cat((self.actions, torch.zeros_like(self.actions)), 1)
            self.actions[self._rows, self.length] = actions
            self.length += 1
            state = env.state
            fresh = ((state.round_index != self._round_index)
                     | (state.matches != self._matches)).nonzero().squeeze(1)
            if fresh.numel():
                for name in FIELDS:
                    if name != "hands":
                        getattr(self.round_start, name)[fresh] = getattr(state, name)[fresh]
                self.length[fresh] = 0
                self._round_index.copy_(state.round_index)
                self._matches.copy_(state.matches)


__all__ = ["RoundHistory"]
