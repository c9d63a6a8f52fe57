"""# Seven Rocks

| Import             | `from sevenrocks_env import sevenrocks_v0`        |
|--------------------|---------------------------------------------------|
| Actions            | Discrete                                          |
| Parallel API       | Yes (turn-based conversion, `sevenrocks_v0.parallel_env`) |
| Manual Control     | `sevenrocks play`                                 |
| Agents             | `agents = ['player_0', 'player_1', 'player_2', 'player_3']` |
| Agents             | 4 (two partnerships: seats 0+2 = team 0, seats 1+3 = team 1) |
| Action Shape       | Discrete(113)                                     |
| Action Values      | Discrete(113)                                     |
| Observation Shape  | (238,)                                            |
| Observation Values | [0, 1], except the scores (finite bounds, see below) |

Seven Rocks is a four-player partnership dominoes game of the "fives" family with one spinner;
its rules are ``docs/rules.md``, and R1-R8 below are its sections.  A match is one episode: rounds
are dealt one after another until a partnership reaches the target (250) right after a scoring
placement.

### Observation Space

A dict ``{"observation": float32[238], "action_mask": int8[113]}``.  The vector is the seat's
own view only (seat-relative: self, left opponent, partner, right opponent); the layout table is
in :mod:`sevenrocks_env.observation` and in the README.  Hidden tiles never appear.

Every entry lies in [0, 1] except the ``scores`` piece, whose bounds follow from the rules and
the env's ``target`` and ``max_rounds`` (:func:`observation_bounds`):

* a score is at most ``target + 34``: it is below the target before a placement (else the match
  is over), a placement scores at most 35 (R5), and deductions only lower it (R7, R8);
* a score is at least ``-MAX_TEAM_DEDUCTION * (max_rounds + 1)``: placements add, and each
  round deducts at most ``MAX_TEAM_DEDUCTION = 120`` from a partnership -- two hands of 7
  tiles, each rounded to five separately (R7), holding at most the 14 heaviest tiles (118 pips;
  one hand at most 69 -> 70, the other 49 -> 50); a match starts at 0, or, given as
  ``reset(options={"match": m})``, at round ``r`` with scores down to ``-120 * (r + 1)`` (what
  :func:`~sevenrocks_env.match_state.check_match_state` accepts), and then at most
  ``max_rounds - r`` rounds deduct;
* the third entry is ``target / 1000``, declared as ``[0, target / 1000]``.

Each bound is divided by the target and rounded to float32 the same way the observation is, so
``observation_space.contains`` holds for every observation (tested over random matches).

#### Legal Actions Mask

``action_mask[a] == 1`` exactly for the legal actions of the agent on turn; all zeros for an agent
not on turn.  The opening uses slot 0 only; knock (112) is legal iff no placement is.

### Action Space

``action = 4 * tile + slot`` with tiles in canonical order (``0|0`` = 0 ... ``6|6`` = 27) and slots
0 west (also "open with this tile"), 1 east, 2 north (spinner branch A), 3 south (branch B);
``112`` = knock.  The opening tile lies low half west.  A seat that cannot place must step 112:
knocks are explicit steps.  A blocked round ends at once without asking for knocks; the next
round starts in the same episode (after a domino the finisher opens, after a block the opener is
drawn).

### Rewards

One formula for every mode (:mod:`sevenrocks_env.rewards`, shared with the trainer): after each
step team 0's seats get ``points_scale * margin_change + win_reward * winner_sign`` and team 1's
seats the negative, where ``margin_change`` is team 0's score change minus team 1's (placements
R5 and deductions R7) and ``winner_sign`` is +1/-1 on the step a partnership wins (R8), else 0.

| ``reward=``        | points_scale | win_reward | a match sums to (team 0)            |
|--------------------|-------------:|-----------:|-------------------------------------|
| ``"win"`` (default)| 0            | 1          | +1 won / -1 lost / 0 truncated      |
| ``"points"``       | 0.01         | 0          | final margin / 100                  |
| ``"shaped"``       | ``points_scale=0.01`` | ``win_reward=1.0`` | points_scale * margin +- win_reward (the trainer's reward) |

``points_scale`` and ``win_reward`` are keyword arguments for ``reward="shaped"`` only (finite,
0 to 1e6).  ``max_rounds`` rounds without a winner truncate the episode (no win reward).

### The round's plays

The observation says which tiles each seat played this round, not in what order.
``env.unwrapped.public_round()`` says it: a :class:`~sevenrocks_env.public_round.PublicRound`
(the opener, the scores at the round's start, every action since, knocks included).  Agents
with ``needs_history = True`` (the search with inference, ``search:policy=shipped,
inference=0.5``) take it as ``agent.act(observation, action_mask, history=...)``.

### Determinism

``reset(seed=s)``: round r's deal and drawn opener depend only on ``(s, r)`` (duplicate-deal
evaluation relies on it).  A later ``reset()`` without a seed draws its seed from a generator
that ``s`` seeded, so seeding once makes a run of matches reproducible; ``seed_used`` is the
seed that dealt the match in progress.  ``reset(options={"match": m})`` starts from a copy of
the :class:`~sevenrocks_env.rules.Match` ``m`` (a chosen position, a puzzle, a curriculum); its
later rounds are dealt from ``m.seed``, which ``seed_used`` then is.  Other keys are ignored,
as PettingZoo's ``api_test`` expects (the Gymnasium view refuses them).

### An illegal action

``raw_env`` raises ``ValueError`` naming the legal actions, the state unchanged.  ``env()``
adds PettingZoo's ``TerminateIllegalWrapper``: the match ends at once, every seat is both
terminated *and* truncated (the wrapper's way), the seat that chose it gets -1 and every
other seat 0 (its partner too, so the partnerships' rewards do not sum to zero on that step),
and no ``infos`` flag is set.  Treat such an end as terminal.  The match itself is left as it
was, so its ``game_record()`` holds the legal moves before the illegal one, with ``winner``
None (``sevenrocks replay --check`` calls it unfinished): a record is legal play only.  The
Gymnasium and RLlib views report it as ``terminated`` with ``info["illegal_action"] = True``.

### Version History

* v0: initial release.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from . import observation as obs_mod
from .checks import checked_seed, is_int, shown
from .dealing import MAX_SEED
from .match_state import replays_to_its_state
from .public_round import PublicRound, public_round
from .record import MAX_ROUNDS, MAX_TARGET, game_record
from .rewards import reward_weights, team0_reward, winner_sign
from .rules import DEFAULT_TARGET, Match, apply_action, is_legal, legal_actions, plain_action
from .scoring import MAX_PLACEMENT_POINTS, MAX_TEAM_DEDUCTION
from .starts import reset_options, starting_match
from .tiles import NUM_ACTIONS, illegal_action_text

_NO_ACTIONS = np.zeros(NUM_ACTIONS, np.int8)

AGENTS = tuple(f"player_{seat}" for seat in range(4))


def observation_bounds(target: int, max_rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``(low, high)`` of the observation vector for a match to ``target`` cut after
    ``max_rounds`` rounds (derivation in the module docs)."""
    low = np.zeros(obs_mod.OBS_SIZE, dtype=np.float32)
    high = np.ones(obs_mod.OBS_SIZE, dtype=np.float32)
    scores = obs_mod.OFFSETS["scores"].start
    low[scores:scores + 2] = -MAX_TEAM_DEDUCTION * (max_rounds + 1) / target
    high[scores:scores + 2] = (target - 1 + MAX_PLACEMENT_POINTS) / target
    # target / 1000 is constant in a match; a [0, target / 1000] range rather than low == high,
    # which Gymnasium's checker flags as a probable mistake
    high[scores + 2] = target / 1000.0
    return low, high


def observation_space(target: int = DEFAULT_TARGET, max_rounds: int = 100) -> spaces.Dict:
    """The observation space of every agent (module docs: Observation Space)."""
    low, high = observation_bounds(target, max_rounds)
    return spaces.Dict({
        "observation": spaces.Box(low=low, high=high, dtype=np.float32),
        "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
    })


class raw_env(AECEnv, EzPickle):
    """The PettingZoo AEC environment over :class:`sevenrocks_env.rules.Match` (see module docs)."""

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "sevenrocks_v0",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, target: int = DEFAULT_TARGET, max_rounds: int = 100, reward: str = "win",
                 render_mode: str | None = None, render_observer: int | None = None,
                 points_scale: float | None = None, win_reward: float | None = None):
        EzPickle.__init__(self, target=target, max_rounds=max_rounds, reward=reward,
                          render_mode=render_mode, render_observer=render_observer,
                          points_scale=points_scale, win_reward=win_reward)
        super().__init__()
        # the bounds a record must meet (sevenrocks_env.record): every match played can be saved
        for name, value, high in (("target", target, MAX_TARGET),
                                  ("max_rounds", max_rounds, MAX_ROUNDS)):
            if not is_int(value, 1, high):
                raise ValueError(f"{name} must be an int in [1, {high}], got {shown(value)}")
        # raises ValueError naming the bad mode or weight (one definition: sevenrocks_env.rewards)
        self.points_scale, self.win_reward = reward_weights(reward, points_scale, win_reward)
        if render_mode is not None and (not isinstance(render_mode, str)  # (no `in` on an array)
                                        or render_mode not in self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, "
                             f"got {shown(render_mode)}")
        if render_observer is not None and not is_int(render_observer, 0, 3):
            raise ValueError(f"render_observer must be a seat 0-3 or None, got "
                             f"{shown(render_observer)}")
        self.target = int(target)
        self.max_rounds = int(max_rounds)
        self.reward_mode = reward
        self.render_mode = render_mode
        self.render_observer = render_observer
        self.possible_agents = list(AGENTS)
        self.agents = []
        self._seat_of = {agent: seat for seat, agent in enumerate(AGENTS)}
        # one space per agent (as PettingZoo's classic games), so seeding one seeds no other
        self.observation_spaces = {agent: observation_space(self.target, self.max_rounds)
                                   for agent in AGENTS}
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in AGENTS}
        self.match: Match | None = None
        self._given_start = False  # the match came from reset(options={"match": m})
        self.seed_used: int | None = None
        self._reset_rng: np.random.Generator | None = None  # the seeds of unseeded resets

    #: The game in progress: what reset and step set, beyond the constructor's settings; and
    #: ``render_observer``, a setting the Gymnasium view sets to its learner's seat at every
    #: reset (a copy rebuilt from the constructor's ``None`` would draw every hidden hand).
    _GAME_FIELDS = ("match", "seed_used", "_reset_rng", "agents", "rewards", "_cumulative_rewards",
                    "terminations", "truncations", "infos", "agent_selection", "_rewards_dirty",
                    "_given_start", "render_observer")

    def __getstate__(self) -> dict:
        """The constructor's arguments (``EzPickle``, which re-checks them on loading) and the
        game in progress, so that ``copy.deepcopy`` and ``pickle`` of an env mid-match give the
        same position (a search from it, say), not a fresh env that was never reset."""
        state = EzPickle.__getstate__(self)
        state["game"] = {name: getattr(self, name) for name in self._GAME_FIELDS
                         if hasattr(self, name)}
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        game = state.pop("game", {})
        EzPickle.__setstate__(self, state)
        for name in self._GAME_FIELDS:
            if name in game:
                setattr(self, name, game[name])

    def observation_space(self, agent):
        self._check_agent(agent)
        return self.observation_spaces[agent]

    def action_space(self, agent):
        self._check_agent(agent)
        return self.action_spaces[agent]

    @staticmethod
    def _check_agent(agent) -> None:
        if not isinstance(agent, str) or agent not in AGENTS:  # a list is unhashable: no dict test
            raise ValueError(f"unknown agent {shown(agent)}; the agents are {list(AGENTS)}")

    # -- episode ------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """A new match.  ``reset(seed=s)`` deals it from ``s`` alone (round ``r`` from ``(s, r)``)
        and seeds the generator that the seeds of later ``reset()`` calls without one come from,
        so seeding once makes a run of resets reproducible (as Gymnasium's ``np_random``, and
        what TorchRL's ``PettingZooWrapper(seed=...)`` relies on); never seeded, they come from
        fresh entropy.  ``seed_used`` says which seed dealt the match.  ``options={"match": m}``
        starts from a copy of ``m`` instead (:func:`starting_match`; ``seed_used`` is ``m.seed``)."""
        start = reset_options(options, others_ignored=True).get("match")
        if start is not None:
            start = starting_match(start, self.target, self.max_rounds)
        seed = checked_seed(seed)
        if seed is None:
            if self._reset_rng is None:
                self._reset_rng = np.random.default_rng()
            seed = int(self._reset_rng.integers(MAX_SEED, endpoint=True))
        else:
            self._reset_rng = np.random.default_rng(seed)
        self._given_start = start is not None  # (its record is checked by game_record)
        if start is not None:
            self.seed_used, self.match = start.seed, start
        else:
            self.seed_used = seed
            self.match = Match.new(self.seed_used, target=self.target, max_rounds=self.max_rounds)
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos = {agent: {} for agent in AGENTS}
        self.agent_selection = AGENTS[self.match.turn]
        self._rewards_dirty = False
        if self.render_mode == "human":
            self.render()

    def observe(self, agent):
        seat = self._seat_of.get(agent) if isinstance(agent, str) else None
        if seat is None or self.match is None:
            self._check_observable(agent)
        done = self.terminations.get(agent, True) or self.truncations.get(agent, True)
        observation = obs_mod.encode(self.match, seat)
        if done and not self.match.over:  # an illegal move's end (env()'s wrapper)
            obs_mod.without_turn(observation)
        # ended or removed: no legal action
        return {"observation": observation,
                "action_mask": _NO_ACTIONS.copy() if done else obs_mod.action_mask(self.match,
                                                                                   seat)}

    def last(self, observe: bool = True):
        if self.match is None:
            raise RuntimeError("reset() needs to be called before last.")
        if not self.agents:
            raise RuntimeError("last() called after all agents are terminated or truncated and "
                               "removed: call reset() to start a new match")
        return super().last(observe)

    def step(self, action) -> None:
        match = self.match
        if match is None:
            raise RuntimeError("reset() needs to be called before step.")
        if not self.agents:
            raise RuntimeError("step() called after all agents are terminated or truncated and "
                               "removed: call reset() to start a new match")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = plain_action(action)
        if not is_legal(match, action):
            raise ValueError(self._illegal_message(action))
        action = int(action)
        self._cumulative_rewards[agent] = 0
        if self._rewards_dirty:
            self.rewards = dict.fromkeys(self.agents, 0)
            self._rewards_dirty = False
        before = match.scores[0] - match.scores[1]
        apply_action(match, action)
        margin_change = match.scores[0] - match.scores[1] - before
        winner = match.winner
        if margin_change or winner is not None:
            sign = winner_sign(winner)
            team0 = team0_reward(margin_change, sign, self.points_scale, self.win_reward)
            if team0:
                self._set_team_rewards(float(team0))
        if winner is not None:
            self.terminations = dict.fromkeys(self.agents, True)
        elif match.truncated:
            self.truncations = dict.fromkeys(self.agents, True)
        if not match.over:
            self.agent_selection = AGENTS[match.turn]
        else:
            self.agent_selection = AGENTS[(self._seat_of[agent] + 1) & 3]
        if self._rewards_dirty:  # otherwise every reward is 0 and there is nothing to add
            self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _check_observable(self, agent) -> None:
        """Raise the error for an ``observe(agent)`` that cannot be answered."""
        self._check_agent(agent)
        raise RuntimeError("reset() needs to be called before observe.")

    def _set_team_rewards(self, team0_value: float) -> None:
        """Team 0's seats get ``team0_value``, team 1's its negative (zero-sum partnerships)."""
        self.rewards = {agent: team0_value if self._seat_of[agent] % 2 == 0 else -team0_value
                        for agent in self.agents}
        self._rewards_dirty = True

    def _illegal_message(self, action) -> str:
        return illegal_action_text(action, legal_actions(self.match), self.agent_selection)

    # -- extras -------------------------------------------------------------------------------

    def public_round(self) -> PublicRound:
        """The round in progress as every seat saw it: its opener, the scores it started from
        and every action since (:mod:`sevenrocks_env.public_round`), the ``history=`` an agent
        with ``needs_history`` takes besides the observation and mask.  ``ValueError`` once the
        match is over."""
        if self.match is None:
            raise RuntimeError("reset() needs to be called before public_round.")
        return public_round(self.match)

    def game_record(self) -> dict:
        """The match so far as a JSON-serialisable game record (see :mod:`sevenrocks_env.record`)."""
        if self.match is None:
            raise RuntimeError("call reset() before game_record()")
        if self._given_start and self.match.history is not None \
                and not replays_to_its_state(self.match):  # no record rather than a wrong one
            raise ValueError("this match has no game record: it started from a match given to "
                             "reset(options={'match': m}) whose history does not replay to it "
                             "(an edited position, or scores other than 0-0 or a round after "
                             "the first at its deal)")
        return game_record(self.match)

    def render(self):
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.match is None:
            raise RuntimeError("call reset() before render()")
        from .render.text import just_ended_round, render_text
        # right after a round ends the next one is dealt: show how the round ended instead
        shown = just_ended_round(self.match) or self.match
        if self.render_mode == "rgb_array":
            from .render.picture import render_picture
            return render_picture(shown, observer=self.render_observer,
                                  spectator=self.render_observer is None)
        text = render_text(shown, observer=self.render_observer)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
