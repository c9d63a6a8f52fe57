"""OpenSpiel's search bots as agents: ``openspiel:ismcts:sims=400``, ``openspiel:mcts``.

Each bot plays through the project's interface, ``act(observation, action_mask)``, and sees
nothing else.  For every decision with more than one legal action it

1. decodes the observation (:func:`sevenrocks_env.observation.decode`) into what its seat knows;
2. builds a state of the **one-round** game ``python_sevenrocks(rounds=1)`` at that position
   (:func:`~sevenrocks_env.openspiel.hidden.state_from_view`), the hidden hands filled with one
   uniform sample consistent with the tile counts and knocks
   (:class:`~sevenrocks_env.agents.belief.HandSampler`);
3. asks the pyspiel bot for a move there.

Why one round: a search over whole matches to 250 (several rounds, each with 28 chance nodes
for the deal) would cost seconds per simulation batch in a Python game, and its returns (+-1 at
the match's end) would be almost pure deal luck seen from one decision.  The round in progress is
what a move influences; its margin (our score change minus theirs, placements R5 and deductions
R7 included) is the searched value, in points.  A partnership reaching the target ends the round
there (R8), so the search sees the win as the points that made it.

``ismcts`` is OpenSpiel's :class:`open_spiel.python.algorithms.ismcts.ISMCTSBot`: every simulation
re-deals the hidden hands (``resample_from_infostate``), the tree is keyed by information-state
strings, leaves are valued by random rollouts.  ``mcts`` is OpenSpiel's
:class:`open_spiel.python.algorithms.mcts.MCTSBot` on a single determinization (the sampled
hands treated as known, random rollouts): a weaker reference.

Parameters (``openspiel:KIND:key=value,...``):

| key        | default | meaning                                                          |
|------------|--------:|------------------------------------------------------------------|
| `sims`     |     100 | simulations per decision (``max_simulations``)                    |
| `uct_c`    |      40 | UCT exploration constant, in points (returns are round margins)  |
| `rollouts` |       1 | random rollouts per leaf (``RandomRolloutEvaluator``)            |
"""

from __future__ import annotations

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from ..agents.base import parse_spec_params
from ..agents.belief import HandSampler
from ..checks import checked_int, checked_seed, is_number_in, shown
from ..observation import checked_inputs, decode
from .game import GAME_NAME
from .hidden import state_from_view

KINDS = ("ismcts", "mcts")
PARAMS = {"sims": int, "uct_c": float, "rollouts": int}
DEFAULTS = {"sims": 100, "uct_c": 40.0, "rollouts": 1}
#: Most simulations a bot runs a decision.
MAX_SIMS = 1_000_000


class PyspielBotAgent:
    """Any pyspiel bot as an Agent: ``make_bot(game, sampler, rng)`` returns a bot (anything
    with ``step(state) -> action``) for the one-round game; it is called once per decision
    with the :class:`HandSampler` of the observer's view and a ``numpy.random.Generator``.

    Example: ``PyspielBotAgent(lambda game, sampler, rng: pyspiel.make_uniform_random_bot(0,
    int(rng.integers(2**31))), "uniform")`` (seeded from ``rng``: a fixed seed, remade at every
    decision, would draw the same every time).
    """

    def __init__(self, make_bot, name: str, seed: int | None = None):
        self.make_bot, self.name = make_bot, name
        self._games: dict[int, pyspiel.Game] = {}
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(checked_seed(seed))

    def _game(self, target: int) -> pyspiel.Game:
        if target not in self._games:
            self._games[target] = pyspiel.load_game(GAME_NAME, {"rounds": 1, "target": target})
        return self._games[target]

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, action_mask = checked_inputs(observation, action_mask)
        legal = np.flatnonzero(action_mask).tolist()
        if len(legal) == 1:
            return legal[0]
        view = decode(observation)
        sampler = HandSampler(view)  # the observer's view: player 0 of the searched state
        state = state_from_view(self._game(view.target), view, sampler.sample(self._rng))
        allowed = state.legal_actions()
        if allowed != legal and set(legal) < set(allowed):
            raise ValueError(f"{self.name}: the mask allows {legal}, fewer moves than the "
                             f"observation's position ({allowed}); OpenSpiel's bots search "
                             "the whole game and cannot be restricted to some of its moves")
        if allowed != legal:
            raise RuntimeError(f"{self.name}: the rebuilt position allows {allowed}, the mask "
                               f"{legal}")
        action = int(self.make_bot(state.get_game(), sampler, self._rng).step(state))
        if action not in legal:
            raise RuntimeError(f"{self.name}: the bot chose {action}, legal: {legal}")
        return action


class OpenSpielAgent(PyspielBotAgent):
    """OpenSpiel's IS-MCTS or determinized MCTS searching the current round (module docstring)."""

    def __init__(self, kind: str = "ismcts", seed: int | None = None, sims: int = 100,
                 uct_c: float = 40.0, rollouts: int = 1):
        if kind not in KINDS:
            raise ValueError(f"openspiel: unknown bot {shown(kind)}; bots: {', '.join(KINDS)}")
        # checked here, not at the first move deep inside OpenSpiel (2.5 simulations, True)
        sims = checked_int(f"openspiel:{kind}: sims", sims, 1, MAX_SIMS)
        rollouts = checked_int(f"openspiel:{kind}: rollouts", rollouts, 1, 1000)
        if not is_number_in(uct_c, 0.0, 1e6):
            raise ValueError(f"openspiel:{kind}: uct_c must be in [0, 1e6], got {shown(uct_c)}")
        uct_c = float(uct_c)
        self.kind, self.sims, self.uct_c, self.rollouts = kind, sims, uct_c, rollouts
        settings = (("uct_c", uct_c), ("rollouts", rollouts))
        extra = "".join(f",{key}={value:g}" for key, value in settings if value != DEFAULTS[key])
        super().__init__(self._search_bot, f"openspiel:{kind}:sims={sims}{extra}", seed)

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        self._random_state = np.random.RandomState(self._rng.integers(2 ** 31))

    def _search_bot(self, game, sampler: HandSampler, rng):
        evaluator = mcts.RandomRolloutEvaluator(self.rollouts, self._random_state)
        if self.kind == "mcts":
            return mcts.MCTSBot(game, self.uct_c, self.sims, evaluator, solve=False,
                                random_state=self._random_state)
        bot = ismcts.ISMCTSBot(game, evaluator, self.uct_c, self.sims,
                               random_state=self._random_state)
        # The root (player 0, the observer, in the searched state) is resampled once per
        # simulation: build its HandSampler once per decision, not once per simulation.
        bot.set_resampler(lambda state, player: state.resample_hidden(
            player, rng, sampler if player == 0 else None))
        return bot


def make_openspiel_agent(spec_rest: str, seed: int | None = None) -> OpenSpielAgent:
    """The agent of spec ``openspiel:<spec_rest>``, e.g. ``spec_rest = "ismcts:sims=400"``.

    Raises ``ValueError`` naming the valid bots and parameters for anything else.
    """
    kind, _, rest = spec_rest.strip().partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(f"unknown OpenSpiel bot {shown(kind)} in "
                         f"{shown('openspiel:' + spec_rest)}; valid: "
                         + ", ".join(f"openspiel:{k}[:sims=<int>,uct_c=<float>,rollouts=<int>]"
                                     for k in KINDS))
    params = parse_spec_params(rest, PARAMS, f"openspiel:{kind}")
    return OpenSpielAgent(kind, seed=seed, **params)


__all__ = ["DEFAULTS", "KINDS", "OpenSpielAgent", "PyspielBotAgent", "make_openspiel_agent"]
