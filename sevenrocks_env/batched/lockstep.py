"""Differential checking: shadow some envs of a :class:`VectorEnv` with scalar ``rules.Match``es.

:class:`Lockstep` drives one ``rules.Match`` per watched env with the same actions through
``rules.apply_action`` and, at every step, checks that the batched engine's state, action mask,
observation and rewards equal the scalar engine's (``observation.encode`` byte for byte).  The
tests use it; it is also a tool for anyone changing the engine.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import observation
from ..rewards import team0_reward, winner_sign
from ..rules import Round, apply_action

_COMPARED = ("hands", "played_by", "played", "ends", "end_double", "branch_started", "spinner",
             "turn", "opener", "placements", "voids", "scores", "last_end_sum", "round_index")


class LockstepError(AssertionError):
    """The batched engine and the scalar engine disagree."""


class Lockstep:
    """Watch envs ``envs`` of ``venv`` (call after ``reset``/``load``; then :meth:`step` instead
    of ``venv.step``).  With ``follow=False`` an env is watched only until its match ends."""

    def __init__(self, venv, envs, follow: bool = True):
        self.venv = venv
        self.follow = follow
        self.envs = list(envs)
        self.shadows = {env: venv.match(env) for env in self.envs}
        for match in self.shadows.values():
            match.history = [Round(match.opener, match.hands)]  # for R2's next opener
            match.max_rounds = venv.max_rounds
        self.finished = 0

    def check(self) -> None:
        """Compare state, mask and observation of every watched env now."""
        venv = self.venv
        mask = venv.action_mask.cpu().numpy()
        obs = venv.observation.cpu().numpy()
        seats = venv.current_seat.cpu().numpy()
        for env, match in self.shadows.items():
            mine = venv.match(env)
            for name in _COMPARED:
                if getattr(mine, name) != getattr(match, name):
                    raise LockstepError(f"env {env}: {name} is {getattr(mine, name)}, the rules "
                                        f"give {getattr(match, name)}")
            if seats[env] != match.turn:
                raise LockstepError(f"env {env}: current_seat {seats[env]}, turn {match.turn}")
            expected = observation.action_mask(match, match.turn).astype(bool)
            if not np.array_equal(mask[env], expected):
                raise LockstepError(f"env {env}: action mask differs at "
                                    f"{np.flatnonzero(mask[env] != expected).tolist()}")
            encoded = observation.encode(match, match.turn)
            if obs[env].tobytes() != encoded.tobytes():
                raise LockstepError(f"env {env}: observation differs at "
                                    f"{np.flatnonzero(obs[env] != encoded).tolist()}")

    def step(self, actions: torch.Tensor):
        """``venv.step(actions)``, then the same actions on the shadows; checks rewards and flags."""
        rewards, terminated, truncated = self.venv.step(actions)
        rewards_np = rewards.cpu().numpy()
        terminated_np, truncated_np = terminated.cpu().numpy(), truncated.cpu().numpy()
        acts = actions.cpu().tolist()
        scale, win = self.venv.settings.points_scale, self.venv.settings.win_reward
        for env, match in list(self.shadows.items()):
            before = match.scores[0] - match.scores[1]
            apply_action(match, acts[env])
            margin = match.scores[0] - match.scores[1] - before
            sign = winner_sign(match.winner)
            team0 = np.float32(team0_reward(margin, sign, scale, win))  # the AEC env's, rounded
            expected = np.array([team0, -team0, team0, -team0], np.float32)
            if not np.array_equal(rewards_np[env], expected):  # bit for bit
                raise LockstepError(f"env {env}: rewards {rewards_np[env]}, expected {expected}")
            if bool(terminated_np[env]) != (match.winner is not None) or \
                    bool(truncated_np[env]) != match.truncated:
                raise LockstepError(f"env {env}: terminated/truncated {terminated_np[env]}/"
                                    f"{truncated_np[env]}, the rules give {match.winner}/"
                                    f"{match.truncated}")
            if match.over:
                self.finished += 1
                if not self.follow:
                    del self.shadows[env]
                    continue
                fresh = self.venv.match(env)
                if fresh.round_index or fresh.scores != [0, 0] or fresh.placements:
                    raise LockstepError(f"env {env}: the next match does not start fresh")
                fresh.history = [Round(fresh.opener, fresh.hands)]
                fresh.max_rounds = self.venv.max_rounds
                self.shadows[env] = fresh
            elif match.awaiting_deal:
                dealt = self.venv.match(env)
                try:  # refuses an opener other than the finisher after a domino (R2)
                    match.start_round(dealt.hands, dealt.opener)
                except ValueError as problem:
                    raise LockstepError(f"env {env}: {problem}") from None
        self.check()
        return rewards, terminated, truncated


__all__ = ["Lockstep", "LockstepError"]
