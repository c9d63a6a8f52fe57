"""Seven Rocks as a Ray RLlib ``MultiAgentEnv`` (needs the ``[rllib]`` extra).

    from sevenrocks_env.rllib_env import SevenRocksMultiAgentEnv
    config = PPOConfig().environment(SevenRocksMultiAgentEnv, env_config={"opponent": "heuristic"})

The adapter over the AEC env (:func:`sevenrocks_env.env.raw_env`) that ``examples/rllib_ppo.py``
trains on: turn-based (only the seat to move gets an observation), with the action mask beside
the observation under the keys RLlib's action-masking modules read, every learner seat's reward
delivered (its team's, R8 / shaped, :mod:`sevenrocks_env.rewards`) including those that arrive
while it is not on turn, and forced moves (a single legal action, R6's knocks) played inside the
env by default.  It lives in the package, not in the example, so that Ray's workers import it
like any installed module.

Points scored before a seat's first decision of a match (``reward="points"``/``"shaped"``: the
opponents opened for 10, say) are never lost, so a seat's rewards add up to its team's margin,
in RLlib's episodes too: they never come with a seat's first observation (RLlib would file them
before its first action, outside every transition and its episode return) but with the seat's
next output, after its first action, so RLlib adds them to that seat's first transition, which
thus carries points nothing it did earned (the opponents' opening, its partner's);
``reward="win"`` has no rewards before the end.  With ``skip_forced`` a learner seat whose every
move of a match was forced (seen only with tiny targets: 30 points, one round) never enters
the episode: it made no decision, so there is no transition to credit, and its team's result
reaches its partner's.  Seeding: a sub-env's stream is ``(seed, worker index, vector index)``,
and, from the second env built on one RLlib env context on, how many were built on it before
(RLlib's new stack builds a runner's sub-envs from one context and leaves their vector index at
0), reseeded by RLlib's ``reset(seed=...)`` with the rest kept, so no two sub-envs deal alike,
with or without ``.debugging(seed=...)``; an env built on a plain dict (or a fresh context) is
the first.  Without a ``seed`` in ``env_config`` each env draws fresh entropy.
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium
import numpy as np

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as missing:  # say which extra, not a bare ModuleNotFoundError
    raise ImportError(f"sevenrocks_env.rllib_env needs Ray RLlib ({missing.name} is missing): "
                      "pip install -e \".[rllib]\" (make install-rllib)") from missing

from .agents import make_agent
from .checks import checked_bool, checked_seed, shown
from .driver import checked_choice
from .env import AGENTS, raw_env
from .observation import without_turn
from .tiles import NUM_ACTIONS
from .rules import is_legal, legal_actions, team_of
from .single_agent import checked_illegal_action, is_self
from .starts import checked_start, reset_options
from .wrappers import checked_action


#: The keys ``env_config`` may hold; any other is refused.
CONFIG_KEYS = ("opponent", "reward", "points_scale", "win_reward", "target", "max_rounds",
               "skip_forced", "seed", "illegal_action")


def _count_made(config) -> int:
    """How many envs were built on ``config`` before this one, counted on the object itself: an
    RLlib ``EnvContext`` (a dict with attributes) shared by a runner's sub-envs; 0 for a plain
    dict, which has no room for the count."""
    made = getattr(config, "__dict__", None)
    if made is None:
        return 0
    before = made.get("_sevenrocks_envs_built", 0)
    made["_sevenrocks_envs_built"] = before + 1
    return before


class SevenRocksMultiAgentEnv(MultiAgentEnv):
    """Seven Rocks as an RLlib ``MultiAgentEnv`` (turn-based: only the seat to move gets an obs).

    Observations are ``{"observations": float32[238], "action_mask": float32[113]}`` (the keys
    RLlib's action-masking modules use).  ``env_config``: ``opponent`` (None/"self" or an agent
    spec), ``reward`` (with ``points_scale``/``win_reward`` for ``"shaped"``), ``target``,
    ``max_rounds``, ``skip_forced`` (default True), ``seed``, ``illegal_action``.

    A masked-out action, with ``illegal_action="terminate"`` (default, as PettingZoo's
    ``TerminateIllegalWrapper``): the match ends at once, the seat that chose it gets reward
    exactly -1 and ``infos[seat]["illegal_action"] = True``, the other seats in the episode get
    what was pending for them, all terminated.  RLlib's own env pre-check steps a random action,
    which this lets through; the masked module never chooses one.  ``illegal_action="raise"``
    raises ``ValueError`` instead.  ``illegal_actions`` counts them either way.  An action that
    is not an action index (a bool, a float) or an int outside ``[0, 112]`` is refused as
    ``sevenrocks_v0.env()`` refuses it (``TypeError``/``ValueError``, from
    :func:`~sevenrocks_env.wrappers.checked_action`) in both modes, the match left as it was;
    ``step`` takes a dict of agent id -> action (anything else: ``TypeError``).  ``env_config``
    is a dict (RLlib's ``EnvContext``) or ``None`` (anything else: ``TypeError``); a key it does
    not have (``opponents`` for ``opponent``, say) is a ``ValueError``, and ``step`` after the
    episode ended (or before ``reset``) a ``RuntimeError``.  ``reset(options={"match": m})``
    starts from a copy of the :class:`~sevenrocks_env.rules.Match` ``m``, checked as the AEC env
    checks it (:mod:`sevenrocks_env.starts`; the learner side, against an ``opponent``, is drawn
    as for a deal); any other option is a ``ValueError``.
    """

    def __init__(self, config: Mapping | None = None):
        super().__init__()
        if config is not None and not isinstance(config, Mapping):  # RLlib's EnvContext is a dict
            raise TypeError(f"env_config must be a dict or None, got {type(config).__name__} "
                            f"{shown(config)}")
        worker = getattr(config, "worker_index", 0) or 0  # RLlib's EnvContext carries these
        vector = getattr(config, "vector_index", 0) or 0
        made = _count_made(config)
        config = dict(config or {})
        unknown = sorted(map(shown, set(config) - set(CONFIG_KEYS)))
        if unknown:  # a typo ("opponents") would silently train another set-up
            raise ValueError(f"unknown env_config key(s) {', '.join(unknown)[:200]}; the keys "
                             f"are {', '.join(CONFIG_KEYS)}")
        self._aec = raw_env(target=config.get("target", 250), max_rounds=config.get("max_rounds", 100),
                            reward=config.get("reward", "win"),
                            points_scale=config.get("points_scale"),
                            win_reward=config.get("win_reward"))
        self.illegal_action = checked_illegal_action(config.get("illegal_action", "terminate"))
        opponent = config.get("opponent")
        self._opponent = None if opponent is None or is_self(opponent) else make_agent(opponent)
        # (a NumPy bool too, as the Gymnasium view takes it)
        self.skip_forced = checked_bool("skip_forced", config.get("skip_forced", True), ValueError)
        seed = checked_seed(config.get("seed"))
        # RLlib seeds sub-env i of runner w with seed + w + i (and its new stack leaves
        # vector_index at 0 and builds a runner's sub-envs from one context object): the worker
        # and the env's place among its context's envs go into every stream, or two sub-envs
        # deal alike; without a seed each env draws fresh entropy
        self._stream = (worker, vector) + ((made,) if made else ())
        self._rng = np.random.default_rng(None if seed is None else [seed, *self._stream])
        space = self._aec.observation_space(AGENTS[0])["observation"]
        obs_space = gymnasium.spaces.Dict({
            "observations": space,
            "action_mask": gymnasium.spaces.Box(0.0, 1.0, (self._aec.action_space(AGENTS[0]).n,),
                                                np.float32),
        })
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self.observation_spaces = {agent: obs_space for agent in AGENTS}
        self.action_spaces = {agent: self._aec.action_space(agent) for agent in AGENTS}
        self.illegal_actions = 0
        self._learners: tuple[int, ...] = (0, 1, 2, 3)
        self._pending: dict[int, float] = {}
        self._seen: set[int] = set()
        self._episode_over = True  # until reset()

    def reset(self, *, seed=None, options=None):
        start = reset_options(options).get("match")
        seed = checked_seed(seed)
        if start is not None:  # checked before anything changes
            start = checked_start(start, self._aec.target, self._aec.max_rounds, (self._opponent,))
        if seed is not None:
            self._rng = np.random.default_rng([seed, *self._stream])
        while True:
            match_seed = int(self._rng.integers(2**62))
            self._aec.reset(seed=match_seed, options=None if start is None else {"match": start})
            if self._opponent is None:
                self._learners = (0, 1, 2, 3)
            else:
                team = int(self._rng.integers(2))
                self._learners = tuple(s for s in range(4) if team_of(s) == team)
                self._opponent.seed(int(self._rng.integers(2**31)))
            self._pending = dict.fromkeys(self._learners, 0.0)
            self._seen = set()
            self._episode_over = False
            self._advance()
            if not self._aec.match.over:
                break
            if start is not None:
                self._episode_over = True
                raise ValueError("options['match'] is over before a learner seat moves")
            # only a tiny target ends a match before a learner seat decides: deal another
        # rewards scored before the first decision stay pending (the seat's first observation
        # comes without them, see _outputs): they go out with the next step
        return self._outputs()[0], {}

    def step(self, action_dict):
        if self._episode_over:
            raise RuntimeError("the episode is over: call reset() before step()")
        if not isinstance(action_dict, Mapping):
            raise TypeError(f"step takes a dict of agent id -> action, got "
                            f"{type(action_dict).__name__} {shown(action_dict)}")
        match = self._aec.match
        agent = AGENTS[match.turn]
        if action_dict.get(agent) is None:
            raise ValueError(f"no action for {agent}, the seat to move")
        if len(action_dict) > 1:  # an action routed to the wrong agent: a bug, not a move
            others = ", ".join(sorted(shown(key) for key in action_dict if key != agent))
            raise ValueError(f"actions for {others[:200]}: only {agent}, the seat to move, acts")
        # a bool or a non-int, or an int outside the action space, is refused as env() refuses it
        action = checked_action(action_dict[agent], agent, NUM_ACTIONS)
        if not is_legal(match, action):
            self.illegal_actions += 1
            if self.illegal_action == "terminate":
                return self._end_on_illegal_action(match.turn)
            raise ValueError(f"illegal action {shown(action)} for {agent}; legal: "
                             f"{legal_actions(match)}")
        self._aec.step(int(action))
        self._collect()
        self._advance()
        return self._outputs()

    # -- inside ---------------------------------------------------------------------------------

    def _end_on_illegal_action(self, mover: int):
        """Terminate every seat in the episode; the mover's reward is exactly -1; no last
        observation offers an action (as at every other end)."""
        self._pending[mover] = -1.0
        self._episode_over = True
        seats = sorted(self._seen | {mover})
        observations = {AGENTS[s]: self._observe(s) for s in seats}
        for observation in observations.values():
            observation["action_mask"][:] = 0
            without_turn(observation["observations"])  # (the match left as it was)
        rewards = {AGENTS[s]: self._pending[s] for s in seats}
        self._pending = dict.fromkeys(self._pending, 0.0)
        terminateds = {**{AGENTS[s]: True for s in seats}, "__all__": True}
        infos = {AGENTS[mover]: {"illegal_action": True}}
        return observations, rewards, terminateds, {"__all__": False}, infos

    def _collect(self) -> None:
        rewards = self._aec.rewards
        for seat in self._learners:
            self._pending[seat] += rewards.get(AGENTS[seat], 0.0)

    def _advance(self) -> None:
        """Play opponent seats and forced moves until a learner seat decides or the match ends:
        the match flow of :class:`~sevenrocks_env.driver.MatchDriver` (an opponent's forced
        move plays itself, as in the arena and the single-agent view: asking for it used the
        opponent's random stream there, so a seed played other matches), stepping the AEC env
        for its rewards."""
        aec = self._aec
        match = aec.match
        while not match.over:
            seat = match.turn
            legal = legal_actions(match)
            if seat in self._learners:
                if not self.skip_forced or len(legal) > 1:
                    return
                action = legal[0]
            else:
                action = legal[0] if len(legal) == 1 else checked_choice(self._opponent, match,
                                                                         seat, legal)
            aec.step(int(action))
            self._collect()

    def _observe(self, seat: int) -> dict:
        obs = self._aec.observe(AGENTS[seat])
        return {"observations": obs["observation"], "action_mask": obs["action_mask"].astype(np.float32)}

    def _outputs(self):
        match = self._aec.match
        if match.over:
            self._episode_over = True
            seats = [s for s in self._learners if s in self._seen]
            observations = {AGENTS[s]: self._observe(s) for s in seats}
            done = {AGENTS[s]: True for s in seats}
            flags = ({**done, "__all__": True}, {"__all__": False}) if match.winner is not None \
                else ({"__all__": False}, {**done, "__all__": True})
        else:
            seats = [match.turn]
            observations = {AGENTS[match.turn]: self._observe(match.turn)}
            flags = ({"__all__": False}, {"__all__": False})
        # a seat's first observation comes without its pending reward (RLlib files a reward that
        # arrives with an agent's first observation before every transition, so it is lost); it
        # goes out with the seat's next output, after its first action
        first = set(seats) - self._seen
        self._seen.update(seats)
        rewards = {}
        for seat in self._learners:  # once the seat has acted in the episode
            if seat in self._seen and seat not in first \
                    and (self._pending[seat] or AGENTS[seat] in observations):
                rewards[AGENTS[seat]] = self._pending[seat]
                self._pending[seat] = 0.0
        return observations, rewards, flags[0], flags[1], {}


__all__ = ["SevenRocksMultiAgentEnv"]
