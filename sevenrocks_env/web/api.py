"""The JSON API and the static page, as one Starlette application (see ``docs/web.md``).

| method | path                          | body                          | answer                    |
|--------|-------------------------------|-------------------------------|---------------------------|
| GET    | ``/``                         |                               | the page                  |
| GET    | ``/api/agents``               |                               | agent specs with labels   |
| POST   | ``/api/games``                | ``{seat, partner, left, right, target, seed}`` | 201, the game |
| GET    | ``/api/games/{id}``           |                               | the game                  |
| DELETE | ``/api/games/{id}``           |                               | 204: the game is dropped  |
| POST   | ``/api/games/{id}/move``      | ``{ply, action}``             | the game after your move  |
| POST   | ``/api/games/{id}/step``      | ``{ply}``                     | the game after one bot move |
| POST   | ``/api/games/{id}/rematch``   |                               | 201, same deals, seat + 1 |
| GET    | ``/api/games/{id}/record``    |                               | ``sevenrocks-record/1``   |
| POST   | ``/api/replays``              | a game record                 | 201, the replay's rounds  |
| GET    | ``/api/replays/{id}/{round}/{move}`` |                        | one replay frame          |
| DELETE | ``/api/replays/{id}``         |                               | 204: the replay is dropped |

Every route answering a game view or a replay frame reads the ``Sevenrocks-Board`` header:
``wide`` (also without it) or ``tall``, the box its board is laid out in
(:data:`.views.BOARD_BOXES`); any other value is refused with 400 before anything is done.

Every refusal is a 4xx JSON ``{"error": message}`` and leaves the game as it was; bodies over
``MAX_BODY`` bytes are refused with 413 before they are parsed, a malformed ``Content-Length``
with 400 (uvicorn's HTTP parser refuses one before the app sees it, in plain text: the check
is for ASGI servers that pass it on).  A bot that fails (its network's outputs not finite,
say) is a 500 JSON error naming it: that game is stuck, the others and new games go on.  Bot
moves and agent loading run in a worker thread (``run_in_threadpool``), so a slow ``search``
bot never stalls other games.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import record as records
from ..textfile import decoded
from .games import Game, GameError, GameStore
from .origin import PROTECTIVE_HEADERS, ProtectiveHeaders, SameSiteOnly
from .views import BOARD_BOX, BOARD_BOXES, replay_frame

STATIC = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024  # moves and setups are a few dozen bytes
#: The request header naming the board box a game view or replay frame is laid out in.
BOARD_HEADER = "Sevenrocks-Board"  # (header names are case-insensitive)
#: A record to replay: a match to 250 is 20-60 kB of JSON; one to the page's largest target
#: (5000) against random bots about 1.4 MB.  Replays are held in the game store (--max-games).
MAX_REPLAY_BODY = 4 * 2**20
#: Uploaded records read and checked at once; past it an upload is refused (429), so the memory
#: they take (the body, its text and the parsed objects: up to ~80 MB each) stays bounded.
REPLAYS_AT_ONCE = 2
#: Uploaded records arriving at once (each for at most ``BODY_SECONDS``): past it, 429.
REPLAYS_ARRIVING = 8
#: How long a request body may take to arrive (a 4 MB record on a slow link: seconds).
BODY_SECONDS = 30


@dataclass
class Replay:
    """A loaded, validated game record (stored like a game, so it has an id and expires)."""

    record: dict
    id: str = ""
    touched: float = field(default_factory=time.monotonic)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The body's bytes; 413 past ``limit`` bytes (declared, or counted while reading); 400 for
    a ``Content-Length`` that is not a number of bytes (``-1``, ``+5``, ``x``, ``\u00b2``) or a
    client that went away mid-body; 408 for a body not all sent within ``BODY_SECONDS``."""
    try:
        return await asyncio.wait_for(_read_body(request, limit), BODY_SECONDS)
    except asyncio.TimeoutError:  # a stalled upload must not hold the server's work for long
        raise GameError(408, f"the request body did not arrive within {BODY_SECONDS} s") from None
    except ClientDisconnect:  # a tab closed during an upload: no traceback in the log
        raise GameError(400, "the client closed the connection before the body arrived") \
            from None


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):  # RFC 9110: 1*DIGIT
            raise GameError(400, f"bad Content-Length {records.shown(declared)}: not a number "
                                 "of bytes")
        if len(declared.lstrip("0")) > 12 or int(declared) > limit:
            raise GameError(413, f"request body too large: at most {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise GameError(413, f"request body too large: at most {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes, what: str = "the request body"):
    """``body`` as JSON, decoded and parsed as record files are (None if empty); 400 if it is
    not JSON, naming ``what`` it is.  A 4 MB replay body takes tens of milliseconds: call it
    off the event loop."""
    if not body:
        return None
    try:
        return records.parse(decoded(body, "the body"))  # a BOM, UTF-16: as json.loads(bytes)
    except ValueError as problem:  # bad UTF-8, bad JSON, NaN, a key twice, too many values
        reason = str(problem).removeprefix("is not JSON: ").removeprefix("is not a game record: ")
        raise GameError(400, f"{what} is not valid JSON: {reason}"[:300]) from None


async def read_json(request: Request, limit: int = MAX_BODY):
    """The body as JSON (:func:`read_body`, then :func:`parse_json` in a worker thread)."""
    return await run_in_threadpool(parse_json, await read_body(request, limit))


def checked_record(body: bytes) -> dict:
    """An uploaded record, parsed and replayed to check it (about a second for a long one);
    422 if it is not a valid game record."""
    if not body.strip():  # (parse_json's None read as "a JSON object, got null")
        raise GameError(422, "not a valid game record: the uploaded file is empty")
    record = parse_json(body, "the uploaded file")
    try:
        records.validate(record)
    except records.RecordError as problem:
        raise GameError(422, f"not a valid game record: {problem}") from None
    except Exception as problem:  # an untrusted file: anything odd is the file's fault
        raise GameError(422, f"not a valid game record: {problem!r:.300}") from None
    return record


def object_body(body, fields: dict) -> dict:
    """Check a JSON object has exactly the int ``fields`` (name -> required)."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise GameError(422, "the request body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise GameError(422, f"unknown fields {records.shown(unknown)}; allowed: "
                             f"{sorted(fields)}")
    for name, required in fields.items():
        if name not in body:
            if required:
                raise GameError(422, f"missing field {name!r}")
            continue
        if type(body[name]) is not int:
            raise GameError(422, f"{name} must be an int, got {records.shown(body[name])}")
    return body


def board_box(request: Request) -> tuple[int, int, int, int]:
    """The board box the ``Sevenrocks-Board`` header asks for: ``wide`` (also without it) or
    ``tall``; 400 for any other value, or for the header given twice."""
    shapes = request.headers.getlist(BOARD_HEADER)
    if not shapes:
        return BOARD_BOX
    if len(shapes) > 1 or shapes[0] not in BOARD_BOXES:
        given = shapes if len(shapes) > 1 else shapes[0]
        raise GameError(400, f"the {BOARD_HEADER} header must be "
                             f"{' or '.join(map(repr, BOARD_BOXES))}, given once; got "
                             f"{records.shown(given)}")
    return BOARD_BOXES[shapes[0]]


def _index(text: str, name: str) -> int:
    """A round or move number from the URL: 1-6 digits, else 404 (no such step)."""
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise GameError(404, f"{name} must be a number of at most 6 digits, got "
                             f"{records.shown(text)}")
    return int(text)


def create_app(store: GameStore | None = None,
               host_names: frozenset[str] | None = None) -> Starlette:
    """The web application; ``store`` holds the games (a fresh :class:`GameStore` by default).
    Requests from other sites are refused (:mod:`.origin`); with ``host_names``
    (:func:`.origin.host_names_for`), so is any request whose ``Host`` is not one of them.
    Every answer has :data:`.origin.PROTECTIVE_HEADERS`."""
    store = store if store is not None else GameStore()
    replays_in_flight = 0  # uploads being checked (on the event loop's thread only)
    replays_arriving = 0   # uploads whose body is being read

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def agents(request: Request) -> Response:
        return JSONResponse({"agents": [{"spec": spec, "label": label}
                                        for spec, label in store.menu],
                             "default_target": 250})

    async def create_game(request: Request) -> Response:
        box = board_box(request)
        setup = store.check_setup(await read_json(request))
        game = await run_in_threadpool(store.new_game, setup)
        return JSONResponse(game.view_for(box), status_code=201)

    def locked(game: Game, work, box=None):
        """``work()`` holding the game's lock; 409 if another request is moving it (a bot move
        runs in a worker thread, and a record built while it changes the match could see a
        round half closed).  Never waits: a waiting request would hold a worker thread.  With
        ``box``, the view after the work with its boards in that box (:func:`board_box`)."""
        if not game.lock.acquire(blocking=False):
            raise GameError(409, "another move of this game is being computed; try again",
                            retry_after=1)
        try:
            answer = work()
            return answer if box is None else game.view_for(box)
        finally:
            game.lock.release()

    async def game_resource(request: Request) -> Response:
        """GET: the view kept after the game's latest move, answered at once, even while a
        bot's move is being computed.  DELETE: the page leaves the game (a new match, a
        rematch), and its place is free at once."""
        if request.method == "DELETE":
            store.remove(request.path_params["game"])
            return Response(status_code=204)
        box = board_box(request)
        return JSONResponse(store.get(request.path_params["game"]).view_for(box))

    async def move(request: Request) -> Response:
        box, game = board_box(request), store.get(request.path_params["game"])
        body = object_body(await read_json(request), {"ply": True, "action": True})
        view = locked(game, lambda: game.play_human(body["action"], body["ply"]), box)
        return JSONResponse(view)

    async def step(request: Request) -> Response:
        box, game = board_box(request), store.get(request.path_params["game"])
        body = object_body(await read_json(request), {"ply": True})
        view = await run_in_threadpool(locked, game, lambda: game.play_bot(body["ply"]), box)
        return JSONResponse(view)

    async def rematch(request: Request) -> Response:
        box, game = board_box(request), store.get(request.path_params["game"])
        if not game.match.over:
            raise GameError(409, "the match is not over yet: the same deals are replayed only "
                                 "after it ends")
        new = await run_in_threadpool(store.new_game, game.setup.swapped())
        return JSONResponse(new.view_for(box), status_code=201)

    async def download(request: Request) -> Response:
        game = store.get(request.path_params["game"])
        record = await run_in_threadpool(locked, game, lambda: player_record(game))
        return JSONResponse(record, headers={
            "content-disposition": f'attachment; filename="sevenrocks-{game.id[:8]}.json"'})

    async def load_replay(request: Request) -> Response:
        nonlocal replays_in_flight, replays_arriving
        store.check_room()  # before the work, not only when storing it
        if replays_arriving >= REPLAYS_ARRIVING:  # each holds up to 4 MB while it arrives
            raise GameError(429, f"{REPLAYS_ARRIVING} uploaded records are arriving already; "
                                 "try again in a moment", retry_after=math.ceil(BODY_SECONDS))
        replays_arriving += 1
        try:
            uploaded = await read_body(request, MAX_REPLAY_BODY)  # bounded in size and time
        finally:
            replays_arriving -= 1
        if replays_in_flight >= REPLAYS_AT_ONCE:  # each costs up to ~80 MB while checked
            raise GameError(429, f"the server is already checking {REPLAYS_AT_ONCE} uploaded "
                                 "records; try again in a moment", retry_after=1)
        replays_in_flight += 1  # counted while checked only: a stalled upload holds no place
        try:  # parse and replay: off the event loop, so other games go on meanwhile
            body = await run_in_threadpool(checked_record, uploaded)
        finally:
            replays_in_flight -= 1
        replay = Replay(body)
        store.add(replay)
        rounds = [{"round": i, "moves": len(r["moves"]), "result": r["result"],
                   "scores": r["scores"]} for i, r in enumerate(body["rounds"])]
        return JSONResponse({"id": replay.id, "rounds": rounds, "target": body["target"],
                             "winner": body["winner"], "scores": body["scores"],
                             "ending": records.ending(body)},
                            status_code=201)

    async def drop_replay(request: Request) -> Response:
        """The page closed the replay (or loaded another record): its place is free at once."""
        store.remove(request.path_params["replay"], Replay)
        return Response(status_code=204)

    async def replay_step(request: Request) -> Response:
        box, replay = board_box(request), store.get(request.path_params["replay"], Replay)
        rounds = replay.record["rounds"]
        r, m = (_index(request.path_params[name], name) for name in ("round", "move"))
        if not 0 <= r < len(rounds):
            raise GameError(404, f"round {r} not in this record (it has {len(rounds)})")
        if not 0 <= m <= len(rounds[r]["moves"]):
            raise GameError(404, f"round {r} has {len(rounds[r]['moves'])} moves, not {m}")
        return JSONResponse(replay_frame(replay.record, r, m, box))

    async def game_error(request: Request, problem: GameError) -> Response:
        response = error(problem.status, problem.message)
        if problem.retry_after is not None:
            response.headers["retry-after"] = str(problem.retry_after)
        return response

    async def http_error(request: Request, problem: HTTPException) -> Response:
        response = error(problem.status_code, str(problem.detail))
        response.headers.update(problem.headers or {})  # e.g. a 405's Allow (RFC 9110)
        return response

    async def server_error(request: Request, problem: Exception) -> Response:
        # Starlette sends this answer from outside every middleware: the protective headers
        # are set here (its own plain-text 500 had none); the error is logged as before
        response = error(500, "internal server error: the server's log says more")
        response.headers.update(dict(PROTECTIVE_HEADERS))
        return response

    routes = [
        Route("/", page),
        Route("/api/agents", agents),
        Route("/api/games", create_game, methods=["POST"]),
        Route("/api/games/{game}", game_resource, methods=["GET", "DELETE"]),
        Route("/api/games/{game}/move", move, methods=["POST"]),
        Route("/api/games/{game}/step", step, methods=["POST"]),
        Route("/api/games/{game}/rematch", rematch, methods=["POST"]),
        Route("/api/games/{game}/record", download),
        Route("/api/replays", load_replay, methods=["POST"]),
        Route("/api/replays/{replay}", drop_replay, methods=["DELETE"]),
        # not {round:int}: Starlette's int() of a path past 4300 digits fails before any handler
        Route("/api/replays/{replay}/{round}/{move}", replay_step),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={GameError: game_error,
                                                       HTTPException: http_error,
                                                       Exception: server_error},
                    middleware=[Middleware(ProtectiveHeaders),
                                Middleware(SameSiteOnly, host_names=host_names)])
    app.state.store = store
    return app


def player_record(game: Game) -> dict:
    """The game record the human may have: whole once the match is over, else the ended rounds.

    A record lists every dealt hand, so the round in progress is left out until it ends (R1).
    """
    try:
        record = records.game_record(game.match, ended_only=not game.match.over)
    except ValueError as error:  # more rounds than a record holds (a match to 5000, say)
        raise GameError(409, f"no record can be downloaded: {error}") from None
    if not record["rounds"]:
        raise GameError(409, "no round has ended yet: the record (which shows every dealt hand) "
                             "can be downloaded once the first round ends")
    return record


__all__ = ["MAX_BODY", "Replay", "create_app", "player_record"]
