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
| Observation Values | [0, 1] (scores may leave that range)              |

Seven Rocks is a four-player partnership dominoes game of the "fives" family with one spinner
(``shared/RULES.md``).  A match is one episode: rounds are dealt one after another until a
partnership reaches the target (250) right after a scoring placement.

### Observation Space

A dict ``{"observation": float32[238], "action_mask": int8[113]}``.  The vector is the seat's
own view only (seat-relative: self, left opponent, partner, right opponent); the layout table is
in :mod:`sevenrocks_env.observation` and in the README.  Hidden tiles never appear.

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

``reward="win"`` (default): +1 to both seats of the winning partnership, -1 to both losers, on
the winning step; 0 otherwise.  ``reward="points"``: after every scoring event each seat gets
(own team's change - other team's change) / 100, so a match sums to the final margin / 100.
``max_rounds`` rounds without a winner truncate the episode with reward 0.

### Determinism

``reset(seed=s)``: round r's deal and drawn opener depend only on ``(s, r)`` (duplicate-deal
evaluation relies on it).

### Version History

* v0: initial release.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from . import observation as obs_mod
from .record import game_record
from .rules import DEFAULT_TARGET, Match, apply_action, is_legal, legal_actions
from .tiles import NUM_ACTIONS, describe_action

AGENTS = tuple(f"player_{seat}" for seat in range(4))
REWARD_MODES = ("win", "points")


def _observation_space() -> spaces.Dict:
    low = np.zeros(obs_mod.OBS_SIZE, dtype=np.float32)
    high = np.ones(obs_mod.OBS_SIZE, dtype=np.float32)
    scores = obs_mod.OFFSETS["scores"]
    low[scores.start:scores.start + 2] = -np.inf  # deductions have no floor (R7)
    high[scores.start:scores.start + 2] = np.inf
    high[scores.start + 2] = np.inf  # target / 1000
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
                 render_mode: str | None = None, render_observer: int | None = None):
        EzPickle.__init__(self, target, max_rounds, reward, render_mode, render_observer)
        super().__init__()
        if not isinstance(target, (int, np.integer)) or target <= 0:
            raise ValueError(f"target must be a positive int, got {target!r}")
        if not isinstance(max_rounds, (int, np.integer)) or max_rounds <= 0:
            raise ValueError(f"max_rounds must be a positive int, got {max_rounds!r}")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, "
                             f"got {render_mode!r}")
        if render_observer not in (None, 0, 1, 2, 3):
            raise ValueError(f"render_observer must be a seat 0-3 or None, got {render_observer!r}")
        self.target = int(target)
        self.max_rounds = int(max_rounds)
        self.reward_mode = reward
        self.render_mode = render_mode
        self.render_observer = render_observer
        self.possible_agents = list(AGENTS)
        self.agents = []
        self._seat_of = {agent: seat for seat, agent in enumerate(AGENTS)}
        space = _observation_space()
        self.observation_spaces = {agent: space for agent in AGENTS}
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in AGENTS}
        self.match: Match | None = None
        self.seed_used: int | None = None

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    # -- episode ------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])
        elif not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        self.seed_used = int(seed)
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
        seat = self._seat_of[agent]
        return {"observation": obs_mod.encode(self.match, seat),
                "action_mask": obs_mod.action_mask(self.match, seat)}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        match = self.match
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
        if self.reward_mode == "points" and margin_change:
            self._set_team_rewards(margin_change / 100.0)
        if match.winner is not None:
            if self.reward_mode == "win":
                self._set_team_rewards(1.0 if match.winner == 0 else -1.0)
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

    def _set_team_rewards(self, team0_value: float) -> None:
        """Team 0's seats get ``team0_value``, team 1's its negative (zero-sum partnerships)."""
        self.rewards = {agent: team0_value if self._seat_of[agent] % 2 == 0 else -team0_value
                        for agent in self.agents}
        self._rewards_dirty = True

    def _illegal_message(self, action) -> str:
        agent = self.agent_selection
        legal = legal_actions(self.match)
        shown = ", ".join(f"{a} ({describe_action(a)})" for a in legal)
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)) \
                and 0 <= int(action) < NUM_ACTIONS:
            what = f"{int(action)} ({describe_action(int(action))})"
        else:
            what = repr(action)
        return f"illegal action {what} for {agent}; legal actions: [{shown}]"

    # -- extras -------------------------------------------------------------------------------

    def game_record(self) -> dict:
        """The match so far as a JSON-serialisable game record (see :mod:`sevenrocks_env.record`)."""
        if self.match is None:
            raise RuntimeError("call reset() before game_record()")
        return game_record(self.match)

    def render(self):
        if self.render_mode is None:
            import gymnasium
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        if self.match is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "rgb_array":
            from .render.picture import render_picture
            return render_picture(self.match, observer=self.render_observer,
                                  spectator=self.render_observer is None)
        from .render.text import render_text
        text = render_text(self.match, observer=self.render_observer)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
