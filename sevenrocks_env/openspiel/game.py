"""Seven Rocks as an OpenSpiel Python game: ``pyspiel.load_game("python_sevenrocks")``.

The state wraps a :class:`sevenrocks_env.rules.Match`; every rule (R1-R8) is the engine's.  What
this module adds is OpenSpiel's shape of the game:

* **Chance nodes.**  Each round starts with 28 chance nodes dealing one tile each (node ``k``
  deals to seat ``k // 7``, uniformly among the tiles not yet dealt: R1).  When the opener is
  drawn (the first round, and after a blocked round: R2) one more chance node picks a seat with
  probability 1/4; after a domino the finisher opens and there is no draw.
* **Actions** are the env's: ``4 * tile + slot`` and ``112`` = knock (R3, R6).
* **Returns.**  ``rounds=0`` (the whole match): +1 to both seats of the partnership that reaches
  ``target`` (R8), -1 to the others; a match still running after ``max_rounds`` rounds ends with 0
  for everyone (the env's truncation).  ``rounds=1`` (one round): every seat gets its
  partnership's round margin in points, (our score change) - (theirs), placements (R5) and
  deductions (R7) included.  Partners always get equal returns and opponents opposite ones, so
  the four returns sum to 0: the game is ZERO_SUM over four players.
* **Information.**  See :mod:`.observer`: the observation is
  :func:`sevenrocks_env.observation.encode`; the information state has perfect recall (own
  deal, every move and knock, hands revealed at each round's count, R7).  Observers give one
  player's private information only (``PrivateInfoType.SINGLE_PLAYER``).
* **Hidden hands.**  See :mod:`.hidden`: :meth:`SevenRocksState.resample_from_infostate` deals
  the hidden hands again uniformly among those consistent with what a player knows (IS-MCTS
  calls it once per simulation); :func:`state_from_view` (importable from here too) starts a
  one-round state from a position a seat knows (bots search from there).
* **Records.**  :meth:`SevenRocksState.game_record` is the match so far as a
  ``sevenrocks-record/1`` game record (:mod:`sevenrocks_env.record`, ``docs/records.md``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyspiel

from .. import rules
from ..checks import is_plain_int, shown
from ..record import MAX_ROUNDS, MAX_TARGET, game_record
from ..scoring import MAX_PLACEMENT_POINTS
from ..tiles import KNOCK, NUM_ACTIONS, NUM_SEATS, NUM_TILES, describe_action, tile_name, tiles_of
from .hidden import resample, state_from_view
from .observer import HAND, MAX_ROUND_MOVES, SevenRocksObserver, layout_text, position_text

GAME_NAME = "python_sevenrocks"
DEAL_NODES = NUM_TILES  # one chance node per tile dealt (R1)
#: A loose bound on one partnership's round margin: 14 placements of at most 35 points (R5) plus
#: two hands of at most 70 (R7).  The true bound is lower (a team places at most 13 tiles: the
#: round ends when one hand is empty; a team loses at most ``scoring.MAX_TEAM_DEDUCTION`` = 120).
MAX_ROUND_MARGIN = 14 * MAX_PLACEMENT_POINTS + 2 * 70
DEFAULT_PARAMS = {"target": rules.DEFAULT_TARGET, "rounds": 0, "max_rounds": 100}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Seven Rocks (partnership fives dominoes with one spinner)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=NUM_SEATS,
    min_num_players=NUM_SEATS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS)


def _check_params(params) -> tuple[int, int, int]:
    if not isinstance(params, Mapping):
        raise TypeError(f"{GAME_NAME}: parameters must be a dict, got {type(params).__name__} "
                        f"{shown(params)}")
    unknown = sorted(map(shown, set(params) - set(DEFAULT_PARAMS)))  # (keys of any type)
    if unknown:
        raise ValueError(f"{GAME_NAME}: unknown parameters {', '.join(unknown)[:200]}; "
                         f"known: {sorted(DEFAULT_PARAMS)}")
    values = {**DEFAULT_PARAMS, **params}
    target = _int_param(values, "target", 1, MAX_TARGET, f"an int in [1, {MAX_TARGET}]")
    rounds = _int_param(values, "rounds", 0, 1, "0 (whole match) or 1 (one round)")
    max_rounds = _int_param(values, "max_rounds", 1, MAX_ROUNDS, f"an int in [1, {MAX_ROUNDS}]")
    if rounds == 1 and max_rounds not in (1, DEFAULT_PARAMS["max_rounds"]):  # pyspiel fills
        # in the default, so only a value that is neither can be seen to have been given
        raise ValueError(f"{GAME_NAME}: max_rounds={max_rounds} bounds the whole match "
                         "(rounds=0); the one-round game (rounds=1) plays one round")
    return target, rounds, (1 if rounds == 1 else max_rounds)


def _int_param(values: dict, name: str, low: int, high: int, meaning: str) -> int:
    """``values[name]``: ``TypeError`` unless a plain int (OpenSpiel's int parameters are: not
    a bool, a float or a NumPy int, which ``pyspiel.load_game`` refuses too), ``ValueError``
    outside ``[low, high]``."""
    value = values[name]
    if not is_plain_int(value):
        raise TypeError(f"{GAME_NAME}: {name} must be {meaning}, got {type(value).__name__} "
                        f"{shown(value)}")
    if not low <= value <= high:
        raise ValueError(f"{GAME_NAME}: {name} must be {meaning}, got {shown(value)}")
    return value


class SearchMatch(rules.Match):
    """A :class:`~sevenrocks_env.rules.Match` that deep-copies with :meth:`Match.clone` (fast).

    OpenSpiel clones a Python state by deep-copying its ``__dict__``; this keeps that cheap.
    """

    __slots__ = ()

    def __deepcopy__(self, memo):
        other = self.clone(keep_history=self.history is not None)
        other.__class__ = SearchMatch
        return other


class SevenRocksGame(pyspiel.Game):
    """The game; parameters ``target`` (250), ``rounds`` (0 whole match, 1 one round),
    ``max_rounds`` (100: the whole match ends with returns 0 after this many rounds)."""

    def __init__(self, params=None):
        self.target, self.rounds, self.max_rounds = _check_params(
            {} if params is None else params)
        utility = 1.0 if self.rounds == 0 else float(MAX_ROUND_MARGIN)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=NUM_TILES,
            num_players=NUM_SEATS,
            min_utility=-utility,
            max_utility=utility,
            utility_sum=0.0,
            max_game_length=MAX_ROUND_MOVES * self.max_rounds)
        super().__init__(_GAME_TYPE, info, {"target": self.target, "rounds": self.rounds,
                                            "max_rounds": self.max_rounds})

    def __repr__(self):
        """pyspiel's, once built.  Parameters are checked before ``super().__init__``, and the
        C++ game of one that refused them was never built: pyspiel's repr read it anyway
        (undefined; pytest, showing ``self`` in a failing test's traceback, crashed on it)."""
        if "max_rounds" not in self.__dict__:  # set with the others just before it is built
            return f"<{GAME_NAME} that refused its parameters>"
        return super().__repr__()

    __str__ = __repr__

    def __reduce__(self):
        """Pickled (and deep-copied) as the ``pyspiel.load_game`` call that makes it again:
        pyspiel's own pickling rebuilds the C++ game without this object's parameters, and the
        copy could not start a state (a game sent to a worker process, a copied
        ``rl_environment.Environment``).  The call is :func:`_load_game` of this module, so that
        unpickling imports it and registers the game: ``pyspiel.load_game`` itself, in a process
        that had not imported this package (a spawned worker), knew no ``python_sevenrocks``."""
        return _load_game, ({"target": self.target, "rounds": self.rounds,
                             "max_rounds": self.max_rounds},)

    def new_initial_state(self):
        return SevenRocksState(self)

    def max_chance_nodes_in_history(self):
        return (DEAL_NODES + 1) * self.max_rounds

    def make_py_observer(self, iig_obs_type=None, params=None):
        """The seat's observation (``iig_obs_type`` None, or public information with the seat's
        own private information), else ``None``: OpenSpiel's answer for a type a game does not
        offer (``open_spiel.python.observation.make_observation``), which its tools such as
        ``generate_playthrough`` expect.  Not offered: a public-only or private-only view (the
        observation mixes public pieces, the layout and scores, with the seat's own hand, and is
        not given whole in their place) and every player's private information."""
        if params:
            raise ValueError(f"{GAME_NAME}: observation parameters are not supported, "
                             f"got {shown(params)}")
        if iig_obs_type is None:
            return SevenRocksObserver(False)
        if not isinstance(iig_obs_type, pyspiel.IIGObservationType):
            raise TypeError(f"{GAME_NAME}: iig_obs_type must be a pyspiel.IIGObservationType or "
                            f"None, got {type(iig_obs_type).__name__}")
        if iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER \
                or not iig_obs_type.public_info:
            return None
        return SevenRocksObserver(iig_obs_type.perfect_recall)


class SevenRocksState(pyspiel.State):
    """A match (or one round) in progress: a :class:`SearchMatch` plus the deal being made."""

    def __init__(self, game):
        super().__init__(game)
        self._target, self._rounds, self._max_rounds = game.target, game.rounds, game.max_rounds
        self._match = None            # SearchMatch once the first round is dealt
        self._dealt = []              # tiles dealt so far this round; tile k went to seat k // 7
        self._dealing = True
        self._drawing_opener = False
        self._deal_start = 0          # index in history() of this round's first deal node
        self._start_scores = (0, 0)   # scores when the game (or position) started
        self._position = ""           # public description of a start position (state_from_view)

    # -- the pyspiel State API -------------------------------------------------------------

    def current_player(self):
        if self.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        if self._dealing or self._drawing_opener:
            return pyspiel.PlayerId.CHANCE
        return self._match.turn

    def is_terminal(self):
        return self._match is not None and self._match.over

    def _legal_actions(self, player):
        return rules.legal_actions(self._match)

    def chance_outcomes(self):
        if self.current_player() != pyspiel.PlayerId.CHANCE:
            raise ValueError("chance_outcomes(): not a chance node (a seat is to play, or the "
                             "game is over)")
        if self._drawing_opener:
            return [(seat, 1.0 / NUM_SEATS) for seat in range(NUM_SEATS)]
        dealt = 0
        for tile in self._dealt:
            dealt |= 1 << tile
        left = [t for t in range(NUM_TILES) if not (dealt >> t) & 1]
        return [(t, 1.0 / len(left)) for t in left]

    def _apply_action(self, action):
        action = int(action)
        if self.is_terminal():
            raise ValueError(f"action {shown(action)}: the game is over")
        if self._dealing:
            if not 0 <= action < NUM_TILES or action in self._dealt:
                raise ValueError(f"deal: {shown(action)} is not a tile left to deal")
            self._dealt.append(action)
            if len(self._dealt) == DEAL_NODES:
                self._dealing = False
                finisher = None if self._match is None else self._match.finisher_opens
                if finisher is not None:
                    self._start_round(finisher)  # the finisher opens (R2)
                else:
                    self._drawing_opener = True  # first round or after a block: drawn (R2)
        elif self._drawing_opener:
            if action not in range(NUM_SEATS):
                raise ValueError(f"opener draw: {shown(action)} is not a seat 0-3")
            self._drawing_opener = False
            self._start_round(action)
        else:
            if not rules.is_legal(self._match, action):
                what = describe_action(action) if 0 <= action <= KNOCK else "out of range"
                raise ValueError(f"illegal action {shown(action)} ({what}) for seat "
                                 f"{self._match.turn}; "
                                 f"legal: {rules.legal_actions(self._match)}")
            rules.apply_action(self._match, action)
            if self._match.awaiting_deal:
                self._dealing, self._dealt = True, []
                self._deal_start = len(self.history()) + 1  # this move is not in history() yet

    def _start_round(self, opener):
        hands = [0] * NUM_SEATS
        for k, tile in enumerate(self._dealt):
            hands[k // HAND] |= 1 << tile
        if self._match is None:
            self._match = SearchMatch.from_deal(hands, opener, target=self._target,
                                                max_rounds=self._max_rounds)
        else:
            self._match.start_round(hands, opener)
        self._dealt = []

    def _start_at(self, match: rules.Match) -> None:
        """Play on from ``match``'s position, mid-round (:func:`.hidden.state_from_view`): no
        deal in the history, the returns counted from the position's scores."""
        match.__class__ = SearchMatch
        self._match, self._dealing, self._dealt = match, False, []
        self._start_scores = (match.scores[0], match.scores[1])
        self._position = position_text(match, None)

    def _action_to_string(self, player, action):
        action = int(action)
        if player == pyspiel.PlayerId.CHANCE:
            if self._drawing_opener and 0 <= action < NUM_SEATS:
                return f"seat {action} drawn to open"
            if self._dealing and 0 <= action < NUM_TILES and action not in self._dealt:
                return f"deal {tile_name(action)} to seat {len(self._dealt) // HAND}"
            if 0 <= action < NUM_TILES:
                # not an outcome of this node: asked after the fact (a tool labelling a finished
                # history), what the outcome can be, without the seat it went to
                seat = f" or seat {action} drawn to open" if action < NUM_SEATS else ""
                return f"chance outcome {action}: deal {tile_name(action)}{seat}"
            raise ValueError(f"chance outcome {shown(action)}: chance outcomes are tiles "
                             f"0-{NUM_TILES - 1} (deals) or seats 0-3 (opener draws)")
        if not 0 <= action <= KNOCK:
            raise ValueError(f"action {shown(action)}: actions are 0-{KNOCK}")
        return describe_action(action)

    def returns(self):
        if not self.is_terminal():
            return [0.0] * NUM_SEATS
        match = self._match
        if self._rounds == 1:
            margin = float((match.scores[0] - self._start_scores[0])
                           - (match.scores[1] - self._start_scores[1]))
            return [margin, -margin, margin, -margin] if margin else [0.0] * NUM_SEATS
        if match.winner is None:  # truncated after max_rounds
            return [0.0] * NUM_SEATS
        won = 1.0 if match.winner == 0 else -1.0
        return [won, -won, won, -won]

    def __str__(self):
        """The whole state (every hand): at a chance node the tiles dealt so far, seat by seat,
        not the last round's table, so that two different deals never print the same."""
        match = self._match
        lines = []
        if self._position:
            lines.append(f"started from: {self._position}")
        if match is not None:  # (a truncated match has counted past its last round: R7)
            played = match.round_index - 1 if match.truncated else match.round_index
            lines.append(f"round {played}, scores {match.scores[0]}:{match.scores[1]} "
                         f"(target {match.target})")
        if self._dealing or self._drawing_opener:
            for seat in range(NUM_SEATS):
                dealt = self._dealt[seat * HAND:(seat + 1) * HAND]
                lines.append(f"seat {seat} dealt: {' '.join(map(tile_name, dealt)) or '-'}")
            lines.append(f"dealing: {len(self._dealt)} of {DEAL_NODES} tiles dealt"
                         if self._dealing else "drawing the opener")
        else:
            for seat in range(NUM_SEATS):
                lines.append(f"seat {seat}: {_tiles_text(match.hands[seat])}")
            lines.append(layout_text(match))
            if not match.over:
                lines.append(f"seat {match.turn} to play")
        return "\n".join(lines)

    # -- the game record -----------------------------------------------------------------

    def game_record(self) -> dict:
        """The match so far as a ``sevenrocks-record/1`` game record (a JSON-serialisable dict;
        :func:`sevenrocks_env.record.game_record`, format in ``docs/records.md``): every round
        dealt, the one in play included (``"result": null``); the game's ``max_rounds`` is in
        it.  A new dict each call.  ``ValueError`` before the first round is dealt (a record
        starts with a round) and for a state started from a position
        (:func:`.hidden.state_from_view`), whose start was never dealt."""
        if self._position:
            raise ValueError("this state has no game record: it started from a position "
                             "(state_from_view), not from a deal")
        if self._match is None:
            raise ValueError("no game record yet: the first round is still being dealt "
                             "(a record starts with a dealt round)")
        return game_record(self._match)

    # -- hidden information (:mod:`.hidden`) -----------------------------------------------

    def resample_from_infostate(self, player_id, probability_sampler):
        """A state ``player_id`` cannot tell from this one, the hands hidden from it dealt
        again uniformly among the deals consistent with what it knows (R6's knocks included);
        ``probability_sampler`` is OpenSpiel's (a callable returning a float in [0, 1), as
        ``pyspiel.UniformProbabilitySampler``) or a ``numpy.random.Generator``.  See
        :func:`.hidden.resample`, which also says what is refused."""
        return resample(self, player_id, probability_sampler)

    def resample_hidden(self, player_id, rng, sampler=None):
        """:meth:`resample_from_infostate` with, optionally, the
        :class:`~sevenrocks_env.agents.belief.HandSampler` of ``player_id``'s view of this
        state, which a caller resampling the same state many times (IS-MCTS) builds once."""
        return resample(self, player_id, rng, sampler)


def _load_game(params: dict) -> SevenRocksGame:
    """``pyspiel.load_game(GAME_NAME, params)``: how a game unpickles
    (:meth:`SevenRocksGame.__reduce__`), from this module, which registers the game on import."""
    return pyspiel.load_game(GAME_NAME, params)


def _tiles_text(mask: int) -> str:
    return " ".join(tile_name(t) for t in tiles_of(mask)) or "-"


__all__ = ["GAME_NAME", "MAX_ROUND_MARGIN", "MAX_ROUND_MOVES", "SevenRocksGame",
           "SevenRocksState", "state_from_view"]

pyspiel.register_game(_GAME_TYPE, SevenRocksGame)
