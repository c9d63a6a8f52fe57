"""Our agents as OpenSpiel bots: any agent plays ``python_sevenrocks`` as a ``pyspiel.Bot``.

The reverse of :mod:`.bots` (which makes OpenSpiel's bots our agents).  An :class:`AgentBot`
plays one seat of the game (the whole match, ``rounds=0``, or one round, ``rounds=1``), so an
OpenSpiel user can put the shipped policy or our searches into ``evaluate_bots`` or any other
loop of ``pyspiel.Bot`` objects::

    game = pyspiel.load_game("python_sevenrocks", {"target": 100})
    bots = [agent_bot(game, seat, "ckpt:shipped" if seat % 2 == 0 else "greedy", seed=seat)
            for seat in range(4)]
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, np.random)

At each :meth:`AgentBot.step` the agent is asked exactly what a driver of this package asks
(:func:`sevenrocks_env.driver.agent_action`):

* the seat's observation, :func:`sevenrocks_env.observation.encode` of the state's
  :class:`~sevenrocks_env.rules.Match` (``state._match``) for the bot's player -- the very
  vector the PettingZoo env gives and the game's ``observation_tensor`` holds
  (:mod:`.observer`);
* the 113-long action mask (:func:`sevenrocks_env.observation.action_mask`, 1 for each of
  ``state.legal_actions()``: placements ``4 * tile + slot`` and the knock ``112``, R3 and R6);
* for an agent that reads the round's public plays (``needs_history``, e.g.
  ``search:policy=shipped,inference=0.5``), ``history=`` the
  :class:`~sevenrocks_env.public_round.PublicRound` of the round in progress.  The state's match
  keeps its history log (:class:`~.game.SearchMatch` is built with it and cloned with it), so this
  is :func:`~sevenrocks_env.public_round.public_round` of that match.  A state started from a
  position (:func:`~.hidden.state_from_view`) has no record of the plays before that position: a
  history-reading agent is refused there rather than given a wrong round.

A forced move (a single legal action: a knock, or one tile fitting one slot, R6) is played
without asking the agent, as every driver of this package does.  The bot keeps nothing
between steps, so ``restart_at`` and ``inform_action`` do nothing; it gives no policy
(``provides_policy()`` is False: our agents answer with one action).
"""

from __future__ import annotations

import pyspiel

from .. import rules
from ..agents import make_agent
from ..checks import is_int, shown
from ..driver import IllegalActionError, agent_action, agent_name, forced_action
from ..public_round import reads_history
from ..tiles import NUM_SEATS, NUM_TILES, describe_action
from .game import GAME_NAME, SevenRocksGame, SevenRocksState


class AgentBot(pyspiel.Bot):
    """``agent`` (anything with ``act(observation, action_mask)``; with ``needs_history = True``
    also ``history=``) playing seat ``player`` of ``game``, a ``python_sevenrocks`` game."""

    def __init__(self, game, player: int, agent):
        pyspiel.Bot.__init__(self)
        if not isinstance(game, SevenRocksGame):
            raise ValueError(f"AgentBot plays {GAME_NAME}, not {_game_name(game)}")
        if not is_int(player, 0, NUM_SEATS - 1):  # a NumPy int too, as pybind11 takes one
            raise (ValueError if is_int(player) else TypeError)(
                f"AgentBot: player must be a seat, an int 0 to 3, got {type(player).__name__} "
                f"{shown(player)}")
        if not callable(getattr(agent, "act", None)):
            raise ValueError(f"AgentBot: the agent needs an act(observation, action_mask) "
                             f"method, got {type(agent).__name__}")
        self._game, self.player, self.agent = game, int(player), agent
        self.name = f"{agent_name(agent)} (seat {player})"

    def __repr__(self):
        return f"AgentBot({self.name})"

    # -- pyspiel.Bot ---------------------------------------------------------------------

    def step(self, state) -> int:
        """The agent's action for the bot's player, on turn in ``state`` (``ValueError`` for
        another game's state, a chance node, a finished game or another seat's turn), asked
        through :func:`sevenrocks_env.driver.agent_action` as every driver asks."""
        match = self._check(state)
        forced = forced_action(match)
        if forced is not None:
            return forced  # (R6): played without asking, as the drivers do
        if reads_history(self.agent):
            self._check_whole_round(match)
        action = agent_action(self.agent, match, self.player)
        if rules.is_legal(match, action):
            return int(action)
        legal = ", ".join(f"{a} ({describe_action(a)})" for a in rules.legal_actions(match))
        raise IllegalActionError(f"illegal action {shown(action)} from {self.name}; legal "
                                 f"actions: [{legal}]"[:2000])

    def restart_at(self, state) -> None:
        """Nothing to do: the bot reads everything it needs from the state at each step."""

    def inform_action(self, state, player_id, action) -> None:
        """Nothing to do (see :meth:`restart_at`)."""

    def inform_actions(self, state, actions) -> None:
        """Nothing to do (see :meth:`restart_at`)."""

    def provides_policy(self) -> bool:
        return False

    # -- checks --------------------------------------------------------------------------

    def _check(self, state):
        if not isinstance(state, SevenRocksState):
            game = state.get_game() if hasattr(state, "get_game") else state
            raise ValueError(f"{self.name}: this bot plays {GAME_NAME}, the state is of "
                             f"{_game_name(game)}")
        if state.is_terminal():
            raise ValueError(f"{self.name}: the game is over, there is no move to make")
        if state.is_chance_node():
            raise ValueError(f"{self.name}: a chance node (the deal or the opener draw, R1-R2) "
                             "is not a seat's turn")
        turn = state.current_player()
        if turn != self.player:
            raise ValueError(f"{self.name}: it is seat {turn}'s turn, not seat {self.player}'s")
        return state._match

    def _check_whole_round(self, match) -> None:
        """``ValueError`` where the state does not know the round's plays (module docstring)."""
        logs = match.history
        if logs and sum(hand.bit_count() for hand in logs[-1].hands) != NUM_TILES:
            # a round's log holds the 28 dealt tiles (R1) only when it starts at the deal
            raise ValueError(f"{self.name}: {agent_name(self.agent)} reads the round's plays, "
                             "and this state started from a position without the plays before "
                             "it (state_from_view): play it from a dealt round instead")


def agent_bot(game, player: int, spec, seed: int | None = None,
              allow_pickles: bool = True) -> AgentBot:
    """The :class:`AgentBot` of agent ``spec`` (``"ckpt:shipped"``, ``"greedy"``,
    ``"search:policy=shipped,samples=16,inference=0.5"``: any spec of
    :func:`sevenrocks_env.agents.make_agent`, which builds it with ``seed`` and
    ``allow_pickles``; ``ValueError`` naming the valid specs for a bad one) for seat ``player``."""
    return AgentBot(game, player, make_agent(spec, seed=seed, allow_pickles=allow_pickles))


def _game_name(game) -> str:
    try:
        return game.get_type().short_name
    except AttributeError:
        return type(game).__name__


__all__ = ["AgentBot", "agent_bot"]
