"""A Gymnasium single-agent view of Seven Rocks, for single-agent libraries (SB3, sb3-contrib).

    import gymnasium, sevenrocks_env          # importing sevenrocks_env registers the id
    env = gymnasium.make("sevenrocks/SevenRocks-v0", opponents="heuristic", seat=0, partner="self")
    obs, info = env.reset(seed=0)             # obs = {"observation": float32[238], "action_mask": int8[113]}
    obs, reward, terminated, truncated, info = env.step(action)
    env.unwrapped.action_masks()              # bool[113], what sb3-contrib's MaskablePPO asks for

The learner plays ``seat``; the left and right opponents (``seat+1``, ``seat+3``) are agents from
specs (:func:`sevenrocks_env.agents.make_agent`: ``"random"``, ``"greedy"``, ``"heuristic"``,
``"ckpt:PATH"`` ...) and step inside :meth:`step`.  The partner seat (``seat+2``) is either
another agent spec, or ``partner="self"``:

**partner="self": the learner is the partnership.**  A single-agent env has one stream of
decisions, so the learner's decisions for both of its seats are interleaved in play order: each
step returns the observation of whichever learner seat moves next (``info["seat"]`` says which).
Observations are seat-relative (the first hand block is always "my hand"), so one policy serves
both seats, exactly as the partnership's shared policy in the AEC env.  The reward is the team's
reward, counted once: both seats of a team always get the same reward (R8 and ``reward="points"``
are team quantities), and summing it per seat would double it.

**Every reward that belongs to the learner reaches it.**  A step's reward is the learner team's
reward summed over all the AEC steps since the learner's previous decision: its own move and every
opponent and partner move after it.  So when an opponent's scoring placement ends the match (R8),
the learner's step that preceded it returns ``terminated=True`` with the -1 (the public SB3
tutorial wrapper only returns the reward of the learner's own move and drops this one).  Points
scored before the learner's first decision (``reward="points"``, opponents open) are added to the
first step's reward.

The match flow is :class:`~sevenrocks_env.driver.MatchDriver`'s, shared with the arena and
``sevenrocks play``: the other seats' forced moves (a knock, or a single fitting placement, R6)
play themselves without asking their agents.

Other options: ``seat="random"`` draws the learner's seat at every reset; ``skip_forced=True``
plays a learner seat's single legal action (a forced knock, or a single fitting placement, R6)
without asking, so steps count real decisions only (as the project's own trainer counts them);
``target``, ``max_rounds``, ``reward`` and its ``points_scale``/``win_reward`` (for
``reward="shaped"``) are the AEC env's.  ``reset(seed=s)`` deals the same match as the AEC env's
``reset(seed=s)`` and re-seeds the opponents from ``s``; ``reset(options={"match": m})`` starts from
a given :class:`~sevenrocks_env.rules.Match` position (tests, curricula, puzzles).

**An illegal learner action** (a tile/slot the mask forbids, or a knock while a placement is
possible, R6) depends on ``illegal_action``:

* ``"terminate"`` (default), as PettingZoo's ``TerminateIllegalWrapper`` does for
  ``sevenrocks_v0.env()``: the episode ends at once with ``terminated=True``, reward exactly
  ``-1`` (it replaces any reward pending for the learner) and ``info["illegal_action"] = True``;
  the match is left as it was.  Checkers that step random actions (Gymnasium's and SB3's
  ``check_env``) run through; masked learners never see the difference.
* ``"raise"``: ``ValueError`` naming the legal actions, state unchanged (debugging).

An action outside the action space (not an int in ``[0, 113)``) raises ``ValueError`` in both
modes: that is a bug in the caller, not a move.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium
import numpy as np

from .agents import make_agent
from .checks import checked_bool, checked_seed, is_int, shown
from .driver import MatchDriver, agent_name
from .env import AGENTS, raw_env
from .observation import without_turn
from .starts import checked_start, reset_options
from .rewards import team0_reward, winner_sign
from .rules import DEFAULT_TARGET, Match, is_legal, legal_actions, partner_of
from .tiles import illegal_action_text
from .wrappers import checked_action

ILLEGAL_ACTION_MODES = ("terminate", "raise")
ILLEGAL_REWARD = -1.0


class SingleAgentEnv(gymnasium.Env):
    """One learner (a seat, optionally with its partner's seat) against agent specs; see the module."""

    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 2}

    def __init__(self, opponents="heuristic", seat=0, partner="self", reward: str = "win",
                 target: int = DEFAULT_TARGET, max_rounds: int = 100, skip_forced: bool = False,
                 render_mode: str | None = None, illegal_action: str = "terminate",
                 points_scale: float | None = None, win_reward: float | None = None):
        if not is_random(seat) and not is_int(seat, 0, 3):  # (an array: no == "random" test)
            raise (ValueError if is_int(seat) or isinstance(seat, str) else TypeError)(
                f"seat must be 0-3 or 'random', got {type(seat).__name__} {shown(seat)}")
        self.illegal_action = checked_illegal_action(illegal_action)
        self._aec = raw_env(target=target, max_rounds=max_rounds, reward=reward,
                            render_mode=render_mode, points_scale=points_scale,
                            win_reward=win_reward)
        self.observation_space = self._aec.observation_space(AGENTS[0])
        self.action_space = self._aec.action_space(AGENTS[0])
        self.render_mode = render_mode
        self.seat_option = "random" if is_random(seat) else int(seat)
        self.skip_forced = checked_bool("skip_forced", skip_forced, ValueError)
        if isinstance(opponents, (str, bytes)) or not isinstance(opponents, Sequence):
            opponents = (opponents, opponents)
        if len(opponents) != 2:
            raise ValueError(f"opponents: one agent spec, or two (left, right); "
                             f"got {shown(opponents)}")
        if any(isinstance(spec, str) and spec.strip() == "self" for spec in opponents):
            raise ValueError("opponents: 'self' is for the partner only (partner='self': the "
                             "learner plays both seats of its team); opponents are agent specs "
                             "such as 'heuristic', or Agent objects (for self-play, give an Agent "
                             "playing a frozen copy of the learner, as "
                             "examples/sb3_maskable_ppo.py --opponents self does)")
        # The left/right opponents and the partner (None = the learner itself).
        self._others = [make_agent(spec) for spec in opponents]
        self._partner = None if is_self(partner) else make_agent(partner)
        self.opponent_specs = tuple(_label(o) for o in opponents)
        self.partner_spec = "self" if self._partner is None else _label(partner)
        self.seat = 0 if is_random(seat) else int(seat)
        self._driver: MatchDriver | None = None
        self._obs: dict | None = None
        self._pending = 0.0  # the learner team's reward since its last decision
        self._margin = 0
        self._done = True

    # -- the learner's seats --------------------------------------------------------------------

    @property
    def learner_seats(self) -> tuple[int, ...]:
        """The seats the learner decides for (its seat, and its partner's with ``partner="self"``)."""
        return (self.seat,) if self._partner is not None else (self.seat, partner_of(self.seat))

    @property
    def match(self) -> Match:
        """The :class:`~sevenrocks_env.rules.Match` being played."""
        return self._aec.match

    @property
    def aec_env(self) -> raw_env:
        """The AEC environment that holds the match, its settings and its views (``observe``,
        ``game_record``, ``render``).  Moves are played by a
        :class:`~sevenrocks_env.driver.MatchDriver`, not by its ``step``, so its reward and
        termination dictionaries are not kept: read the match (``.match``) instead."""
        return self._aec

    def action_masks(self) -> np.ndarray:
        """bool[113]: the legal actions of the learner seat to move (sb3-contrib's MaskablePPO)."""
        if self._obs is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._obs["action_mask"].astype(bool)

    # -- Gymnasium API ----------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None):
        start = reset_options(options).get("match")
        seed = checked_seed(seed)  # Gymnasium's np_random takes a plain int only
        super().reset(seed=seed)
        if start is not None:
            start = checked_start(start, self._aec.target, self._aec.max_rounds,
                                  (*self._others, self._partner))
        match_seed = seed
        self._done = True  # until a learner seat is on turn: a start refused below leaves no episode
        while True:
            if match_seed is None:
                match_seed = int(self.np_random.integers(2**62))
            if self.seat_option == "random":
                self.seat = int(self.np_random.integers(4))
            self._start(match_seed, start)
            self._driver.advance()  # the learner team's reward on the way waits in _pending
            if not self.match.over:
                break
            if start is not None:
                raise ValueError("options['match'] is over before the learner moves")
            # Only possible with a tiny target: the match ended before the learner moved. Skip it.
            match_seed = None
        self._done = False
        return self._observe(), self._info()

    def step(self, action):
        if self._driver is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("the episode is over (its match ended, or an illegal action "
                               "ended it): call reset() before step()")
        # Outside the action space is a caller's bug in every mode, refused as env() refuses it
        # (ActionNotAnIndex / ActionOutOfRange, both ValueErrors); a 0-d integer array is an int.
        action = checked_action(action, f"seat {self.match.turn}", self.action_space.n,
                                dead_step=False)
        if not is_legal(self.match, action):
            if self.illegal_action == "terminate":
                return self._end_on_illegal_action()
            raise ValueError(self._illegal_message(action))  # state unchanged
        self._driver.play(action)
        self._driver.advance()
        reward, self._pending = self._pending, 0.0
        match = self.match
        terminated = match.winner is not None
        truncated = match.truncated and not terminated
        self._done = terminated or truncated
        return self._observe(), float(reward), terminated, truncated, self._info()

    def render(self):
        return self._aec.render()

    def close(self) -> None:
        self._aec.close()

    # -- inside -----------------------------------------------------------------------------------

    def _end_on_illegal_action(self):
        """``illegal_action="terminate"``: end the episode with reward -1, the match untouched
        (its last observation offers no action, as at every other end)."""
        self._pending = 0.0
        self._done = True
        info = self._info()
        info["illegal_action"] = True
        observation = self._observe()
        self._obs = {"observation": without_turn(observation["observation"].copy()),
                     "action_mask": np.zeros_like(observation["action_mask"])}
        return self._obs, ILLEGAL_REWARD, True, False, info

    def _start(self, match_seed: int, start: Match | None) -> None:
        aec = self._aec
        aec.render_observer = self.seat
        # the start's own copy is played on (the AEC env copies it once more: the checked one)
        aec.reset(seed=match_seed, options=None if start is None else {"match": start})
        left, right = (self.seat + 1) & 3, (self.seat + 3) & 3
        agents = {left: self._others[0], right: self._others[1]}
        if self._partner is not None:
            agents[partner_of(self.seat)] = self._partner
        for seat, agent in agents.items():
            agent.seed(int(np.random.SeedSequence([match_seed, seat]).generate_state(1)[0]))
        self._pending = 0.0
        self._margin = self.match.scores[0] - self.match.scores[1]
        # One match flow for every front end (sevenrocks_env.driver): forced moves of the other
        # seats play themselves; learner seats stop the driver, even when forced unless skip_forced.
        self._driver = MatchDriver(self.match, agents, on_move=self._on_move,
                                   ask_forced=() if self.skip_forced else self.learner_seats)

    def _on_move(self, match: Match, seat: int, action: int, points: int, forced: bool) -> None:
        """After every move: add the learner team's reward (:mod:`sevenrocks_env.rewards`, one
        formula for every view) and keep the AEC env's turn in step with the match."""
        margin = match.scores[0] - match.scores[1]
        change, self._margin = margin - self._margin, margin
        sign = winner_sign(match.winner)
        if change or sign:
            team0 = team0_reward(change, sign, self._aec.points_scale, self._aec.win_reward)
            self._pending += float(team0 if self.seat % 2 == 0 else -team0)
        if not match.over:
            self._aec.agent_selection = AGENTS[match.turn]
        if self.render_mode == "human":
            self._aec.render()

    def _illegal_message(self, action) -> str:
        return illegal_action_text(action, legal_actions(self.match), f"seat {self.match.turn}")

    def _observe(self) -> dict:
        """The observation of the learner seat on turn (``info["seat"]``); the pictures
        (``render()``) show the hand of that seat, the seat whose observation was returned last
        (with ``partner="self"``, the partner's when the learner decides for it)."""
        match = self.match
        seat = match.turn if not match.over else self.seat
        self._aec.render_observer = seat
        self._obs = self._aec.observe(AGENTS[seat])
        return self._obs

    def _info(self) -> dict:
        match = self.match
        team = self.seat & 1
        info = {"seat": match.turn if not match.over else self.seat, "learner_seat": self.seat,
                "scores": (match.scores[team], match.scores[1 - team])}
        if match.over:
            info["won"] = None if match.winner is None else match.winner == team
        return info


def checked_illegal_action(mode) -> str:
    """``mode`` if one of :data:`ILLEGAL_ACTION_MODES` (both views' ``illegal_action``), else
    ``ValueError`` (an array is not tested with ``in``: NumPy would answer elementwise)."""
    if not isinstance(mode, str) or mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {shown(mode)}")
    return mode


def is_random(seat) -> bool:
    """``seat`` is ``"random"`` (asked without ``==``: an array would answer elementwise)."""
    return isinstance(seat, str) and seat == "random"


def is_self(spec) -> bool:
    """An opponent or partner ``spec`` is ``"self"``, the learner (no ``==`` on an array)."""
    return isinstance(spec, str) and spec == "self"


def _label(agent) -> str:
    return agent if isinstance(agent, str) else agent_name(agent)


__all__ = ["ILLEGAL_ACTION_MODES", "ILLEGAL_REWARD", "SingleAgentEnv"]
