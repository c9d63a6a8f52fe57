"""Games in progress on the web server: one :class:`Game` per match, kept in a :class:`GameStore`.

The server is the only authority: a game holds the engine's :class:`~sevenrocks_env.rules.Match`
(with its history), the human's seat and the agents at the other three seats.  The page only
asks for moves; every move is checked here with the rules engine before it is applied.

* Ids are unguessable (``secrets.token_urlsafe``); a game idle for ``idle_seconds`` is dropped
  and at most ``max_games`` are open at once.
* Every game has a lock.  A bot move is computed while holding it (off the event loop, see
  :mod:`.api`), so two requests can never move the same game at once, while other games go on.
* ``ply`` counts the moves of the whole match; a move request names the ply it answers, so the
  same move sent twice is refused instead of being played twice.
"""

from __future__ import annotations

import math
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field

from ..agents import make_agent, same_spec
from ..checks import is_plain_int, shown
from ..dealing import MAX_SEED
from ..driver import agent_action
try:
    from ..policy_file import shipped_path
except ImportError:  # no torch (the [train] extra): the start panel offers the rule-based bots only
    shipped_path = None
from .. import record as records
from ..rules import Match, apply_action, is_legal, partner_of
from .moves import why_illegal
from .views import BOARD_BOX, BOARD_BOXES, game_view

#: The specs the start panel offers: (spec, label).  Only these (and ``--agent`` extras) are
#: accepted, so a client on the network cannot make the server load an arbitrary file.
BUILTIN_AGENTS = (
    ("random", "random"),
    ("greedy", "greedy"),
    ("heuristic", "heuristic"),
    ("search", "search"),
)
MAX_TARGET = records.MAX_TARGET  # a game's record must load back
#: The shipped policy sampling its moves: less predictable, about `heuristic`'s strength
#: (docs/experiments.md, "v3 samples badly": 0.485 against it).
SAMPLING_SHIPPED = "sample:policy=shipped,temperature=0.5"


class GameError(Exception):
    """A request the game refuses; ``status`` is the HTTP status (4xx; 500 when a bot failed:
    the server's fault, not the request's); ``retry_after`` (seconds) when the same request may
    pass later (sent as ``Retry-After``)."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def server_fault(problem: Exception, culprit: str, message: str, after: str = "") -> GameError:
    """A 500 for a failure of the server's own agents: the answer says ``message`` and the
    exception's type; what it said goes to the server's log only (an agent's error could
    describe its hand)."""
    print(f"sevenrocks serve: {culprit} failed: {problem!r:.500}", file=sys.stderr)
    return GameError(500, f"{message} ({type(problem).__name__}; the server's log says "
                          f"why){after}")


def agent_menu(extra: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The agent specs offered on the start panel, with a label each."""
    menu = list(BUILTIN_AGENTS)
    # the shipped policy: package data when installed, checkpoints/ in a checkout; needs torch
    if shipped_path is not None and shipped_path().is_file():
        menu.append(("ckpt:shipped", "shipped policy"))
        menu.append((SAMPLING_SHIPPED, "shipped policy, sampling at temperature 0.5"))
        menu.append(("search:policy=shipped,samples=16", "shipped policy with search"))
        menu.append(("search:policy=shipped,samples=16,inference=0.5",
                     "shipped policy with search and inference"))
    for spec in extra:  # `--agent random` (or `search:samples=64`, the default `search`, or
        # `search:samples=08` after `search:samples=8`) is on the menu already: not listed twice
        if not any(same_spec(spec, offered) for offered, _ in menu):
            menu.append((spec, spec))
    return menu


@dataclass(frozen=True)
class Setup:
    """What the start panel chose: the human's seat, the agent specs, target and deal seed."""

    seat: int
    partner: str
    left: str    # the opponent who plays right after the human
    right: str   # the opponent who plays right before the human
    target: int
    seed: int

    def specs(self) -> dict[int, str]:
        """Agent spec of every bot seat."""
        return {partner_of(self.seat): self.partner, (self.seat + 1) % 4: self.left,
                (self.seat + 3) % 4: self.right}

    def swapped(self) -> "Setup":
        """The same deals from the other side of the table: duplicate play (seat moves one on)."""
        return Setup((self.seat + 1) % 4, self.partner, self.left, self.right, self.target,
                     self.seed)


@dataclass
class Game:
    """One match between the human at ``setup.seat`` and three agents."""

    id: str
    setup: Setup
    labels: dict[int, str]
    agents: dict
    match: Match
    lock: threading.Lock = field(default_factory=threading.Lock)
    touched: float = field(default_factory=time.monotonic)
    #: The game's view after its latest move (:func:`.views.game_view`) for each board box
    #: (:data:`.views.BOARD_BOXES`), built while the move held the lock: what a GET answers,
    #: without waiting for a move being computed (one dict, replaced whole).
    views: dict = field(default_factory=dict)

    @property
    def seat(self) -> int:
        return self.setup.seat

    @property
    def ply(self) -> int:
        """Moves played in the whole match so far (the version of the game state)."""
        return sum(len(log.moves) for log in self.match.history)

    def refresh_view(self) -> dict:
        """Build the views after the latest move (holding the lock), keep them, and return the
        one of the wide board."""
        self.views = {box: game_view(self, box) for box in BOARD_BOXES.values()}
        return self.view

    @property
    def view(self) -> dict:
        """The latest view with the wide board (:data:`.views.BOARD_BOX`)."""
        return self.views[BOARD_BOX]

    def view_for(self, box) -> dict:
        """The latest view with its boards laid out in ``box`` (one of
        :data:`.views.BOARD_BOXES`)."""
        return self.views[tuple(box)]

    def human_to_move(self) -> bool:
        return not self.match.over and self.match.turn == self.seat

    def _check_ply(self, ply, what: str) -> None:
        """A request answers the state at move ``ply``: 409 naming why when that is not now
        (422 for a ply no match has: a bad field, not a stale request)."""
        if type(ply) is int and ply < 0:
            raise GameError(422, f"ply must be an int >= 0 (a move number of the match), got "
                                 f"{shown(ply)}")
        if ply != self.ply:
            why = ("the game has not reached it" if type(ply) is int and ply > self.ply else
                   "it was already sent, or the game moved on")
            raise GameError(409, f"this {what} answers move {shown(ply)} of the match, but the "
                                 f"game is at move {self.ply}: {why}")

    def play_human(self, action, ply) -> dict:
        """Apply the human's ``action`` answering state ``ply`` and return the view after it;
        ``GameError`` says why not."""
        self._check_ply(ply, "move")
        if self.match.over:
            raise GameError(409, "the match is over")
        if self.match.turn != self.seat:
            raise GameError(409, f"it is seat {self.match.turn}'s turn "
                                 f"({self.labels[self.match.turn]}), not yours")
        if not is_legal(self.match, action):
            raise GameError(422, why_illegal(self.match, action))
        return self._played(action)

    def play_bot(self, ply) -> dict:
        """Let the agent on turn move once and return the view after it (slow for ``search``:
        call it off the event loop)."""
        self._check_ply(ply, "step")
        match = self.match
        if match.over:
            raise GameError(409, "the match is over")
        if match.turn == self.seat:
            raise GameError(409, "it is your turn: the bots wait for your move")
        seat = match.turn
        try:
            action = int(agent_action(self.agents[seat], match, seat))
        except Exception as problem:  # e.g. a network whose outputs went non-finite mid-game
            raise server_fault(problem, f"the agent at seat {seat} ({self.agents[seat].name})",
                               f"the agent at seat {seat} ({self.labels[seat]}) failed",
                               "; the game is stuck: start a new one") from None
        if not is_legal(match, action):  # an agent bug, not the user's: still never a 500
            # why it is illegal stays in the server's log: "you do not hold 3-5" or "you hold a
            # tile that fits" would tell the player about a bot's hand
            print(f"sevenrocks serve: the agent at seat {seat} ({self.agents[seat].name}) chose "
                  f"illegal action {action}: {why_illegal(match, action)}", file=sys.stderr)
            raise GameError(409, f"the agent at seat {seat} chose an illegal move (an agent "
                                 f"bug; the server's log says which); the game is stuck")
        return self._played(action)

    def _played(self, action: int) -> dict:
        apply_action(self.match, action)
        return self.refresh_view()


class GameStore:
    """Open games by id, with idle expiry and a cap on their number."""

    def __init__(self, max_games: int = 64, idle_seconds: float = 1800.0,
                 extra_agents: tuple[str, ...] = ()):
        self.max_games = max_games
        self.idle_seconds = idle_seconds
        self.menu = agent_menu(extra_agents)
        self._games: dict[str, object] = {}
        self._lock = threading.Lock()

    def specs(self) -> dict[str, str]:
        return dict(self.menu)

    def idle_text(self) -> str:
        """``--idle-minutes`` as given, in words: ``"30 minutes"``, ``"0.5 minutes"`` (a whole
        number of minutes said "0 minutes" for 0.5)."""
        return f"{self.idle_seconds / 60:g} minutes"

    def _sweep(self, now: float) -> None:
        stale = [key for key, item in self._games.items()
                 if now - item.touched > self.idle_seconds]
        for key in stale:
            del self._games[key]

    def _room(self, now: float, make: bool) -> None:
        """Room for one more item: the idle ones swept; when full, the finished game or replay
        touched longest ago (a finished match only serves its record and rematch, a replay its
        frames) counts as room, and is dropped if ``make``; else 429, ``Retry-After`` the
        seconds until the first idle one expires."""
        self._sweep(now)
        if len(self._games) < self.max_games:
            return
        finished = [(item.touched, key) for key, item in self._games.items()
                    if not isinstance(item, Game) or item.match.over]  # (the rest: replays)
        if finished:
            if make:
                del self._games[min(finished)[1]]
            return
        first_expiry = min(item.touched for item in self._games.values()) + self.idle_seconds
        raise GameError(429, f"the server already holds {self.max_games} open games; "
                             f"try again once idle ones expire "
                             f"({self.idle_text()} without a request; any request, "
                             f"a GET too, keeps a game open)",
                        retry_after=max(1, math.ceil(first_expiry - now)))

    def remove(self, key: str, kind: type = object) -> None:
        """Drop a game or replay (the page leaving it), of ``kind`` if given; 404 if there is
        none by that id."""
        with self._lock:
            item = self._games.get(key)
            if item is None or not isinstance(item, kind):
                raise GameError(404, f"no game or replay with id {shown(key)}")
            del self._games[key]

    def check_room(self) -> None:
        """429 if a game (or a replay) could not be stored now: checked before the work of
        building one (loading agents, checking a record), and again by :meth:`add`."""
        with self._lock:
            self._room(time.monotonic(), make=False)  # a request that then fails drops nothing

    def add(self, item) -> str:
        """Store a game (or a replay) under a fresh unguessable id; 429 when full."""
        with self._lock:
            now = time.monotonic()
            self._room(now, make=True)
            key = secrets.token_urlsafe(18)
            item.id = key
            item.touched = now
            self._games[key] = item
            return key

    def get(self, key: str, kind: type = Game):
        with self._lock:
            now = time.monotonic()
            self._sweep(now)
            item = self._games.get(key)
            if not isinstance(item, kind):
                what, dropped = ("game", "a finished game") if kind is Game else \
                    ("replay", "a replay")  # (a replay is dropped like a finished game)
                raise GameError(404, f"no {what} with id {shown(key)} (unknown, expired after "
                                     f"{self.idle_text()} idle, or "
                                     f"{dropped} dropped to make room)")
            item.touched = now
            return item

    def __len__(self) -> int:
        return len(self._games)

    def check_setup(self, body) -> Setup:
        """The start panel's JSON, checked field by field (422 naming the bad field); every
        field is optional, an empty body included."""
        body = {} if body is None else body
        if not isinstance(body, dict):
            raise GameError(422, "the request body must be a JSON object")
        allowed = {"seat", "partner", "left", "right", "target", "seed"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise GameError(422, f"unknown fields {shown(unknown)}; allowed: {sorted(allowed)}")
        seat = body.get("seat", 0)
        if not is_plain_int(seat, 0, 3):
            raise GameError(422, f"seat must be 0, 1, 2 or 3, got {shown(seat)}")
        specs = self.specs()
        chosen = {}
        for name in ("partner", "left", "right"):
            spec = body.get(name, "greedy")
            if not isinstance(spec, str) or spec not in specs:
                raise GameError(422, f"unknown agent spec for {name}: {shown(spec)}; "
                                     f"valid: {', '.join(specs)}")
            chosen[name] = spec
        target = body.get("target", 250)
        if not is_plain_int(target, 1, MAX_TARGET):
            raise GameError(422, f"target must be an int from 1 to {MAX_TARGET}, got {shown(target)}")
        seed = body.get("seed")
        if type(seed) is str and seed.isascii() and seed.isdigit() and len(seed) <= 19:
            seed = int(seed)  # as a view gives it back: a JSON number past 2^53 is rounded in JS
        if seed is None:
            # the deals follow from the seed: one small enough to enumerate would let a player
            # find it from their own hand and a few plays, and then see every hidden hand
            seed = secrets.randbelow(MAX_SEED + 1)
        elif not is_plain_int(seed, 0, MAX_SEED):
            raise GameError(422, f"seed must be null or an int from 0 to {MAX_SEED} (a number, "
                                 f"or its decimal digits as a string), got {shown(seed)}")
        return Setup(seat, chosen["partner"], chosen["left"], chosen["right"], target, seed)

    def new_game(self, setup: Setup) -> Game:
        """Build the agents (loading a checkpoint is slow: call off the event loop) and store it."""
        self.check_room()
        specs = setup.specs()
        labels = {seat: self.specs()[spec] for seat, spec in specs.items()}
        labels[setup.seat] = "you"
        try:
            agents = {seat: make_agent(spec, seed=setup.seed * 4 + seat)
                      for seat, spec in specs.items()}
        except ValueError as error:
            raise GameError(422, f"cannot build the agents: {error}") from None
        except Exception as problem:  # a checkpoint gone unreadable meanwhile, memory, ...
            raise server_fault(problem, f"the agents {sorted(specs.values())}",
                               "cannot build the agents") from None
        game = Game("", setup, labels, agents, Match.new(setup.seed, target=setup.target))
        self.add(game)
        game.refresh_view()  # with its id (no one knows the id before this returns)
        return game


__all__ = ["BUILTIN_AGENTS", "Game", "GameError", "GameStore", "Setup", "agent_menu",
           "server_fault"]
