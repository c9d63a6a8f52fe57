"""The web server when a bot fails mid-game (a network whose outputs go non-finite) and for a
malformed ``Content-Length`` (the app's check, which uvicorn's parser makes unreachable on the
real server): a JSON error, never a bare 500, and the server goes on."""

from __future__ import annotations

import pytest
from policy_files import save_policy_gone_non_finite
from web_client import BOTS, game_of

from sevenrocks_env.observation import encode
from sevenrocks_env.rules import Match
from sevenrocks_env.tiles import KNOCK
from sevenrocks_env.web.api import MAX_BODY, MAX_REPLAY_BODY, create_app
from sevenrocks_env.web.games import GameError, GameStore

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def until_bot_turn(client, view):
    """Play the human's first legal moves until a bot is to move."""
    while view["next"] == "you":
        action = KNOCK if view["knock"]["required"] else \
            next(p for t in view["hand"] for p in t["places"])["action"]
        view = client.post(f"/api/games/{view['id']}/move",
                           json={"ply": view["ply"], "action": action}).json()
    return view


def test_a_bot_that_raises_is_a_json_error_naming_it(client, app, capsys):
    view = until_bot_turn(client, client.post("/api/games", json={"seat": 0, **BOTS, "seed": 3})
                          .json())
    game = game_of(app, view)
    seat = game.match.turn

    def broken(observation, mask):
        raise RuntimeError("greedy: the network's outputs are not finite; it holds 3-5")
    game.agents[seat].act = broken
    before = game.match.to_state(), game.ply
    answer = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert f"the agent at seat {seat} (greedy) failed (RuntimeError" in error
    assert "stuck" in error and "3-5" not in error  # what it said stays in the server's log
    assert "3-5" in capsys.readouterr().err
    assert (game.match.to_state(), game.ply) == before
    assert client.get(f"/api/games/{view['id']}").json()["ply"] == view["ply"]
    assert client.post("/api/games", json={"seat": 0, **BOTS}).status_code == 201


def test_a_policy_gone_non_finite_mid_game_leaves_the_server_usable(tmp_path, capsys):
    """A checkpoint whose first layer is huge on inputs that are zero at the deal and at the
    positions the load check tries (``policy.probe_positions``): it loads, its first moves are
    fine, a later one overflows to non-finite outputs (a RuntimeError in act)."""
    from starlette.testclient import TestClient

    seed = 1
    opening = [encode(Match.new(seed), seat) for seat in range(4)]
    spec = f"ckpt:{save_policy_gone_non_finite(tmp_path / 'late_nan.pt', opening)}"
    app = create_app(GameStore(max_games=4, extra_agents=(spec,)))
    with TestClient(app, raise_server_exceptions=True) as client:
        view = client.post("/api/games", json={"seat": 0, "partner": spec, "left": spec,
                                               "right": spec, "seed": seed}).json()
        for _ in range(200):
            view = until_bot_turn(client, view)
            assert view["next"] == "bot", "the match ended without the policy failing"
            answer = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
            if answer.status_code != 200:
                break
            view = answer.json()
        assert answer.status_code == 500, answer.text
        assert f"({spec}) failed (RuntimeError" in answer.json()["error"]
        assert "not finite" in capsys.readouterr().err
        again = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
        assert again.status_code == 500  # stuck, answered the same way: not locked up
        assert client.post("/api/games", json={"seat": 0, **BOTS}).status_code == 201


@pytest.mark.parametrize("declared, status", [
    ("-1", 400), ("+2", 400), ("x", 400), ("2.0", 400), ("0x10", 400), ("", 400),
    (b"\xb2", 400),  # the test client sends it as UTF-8 ('\u00c2\u00b2'): the byte alone is below
    ("9" * 5000, 413), (str(MAX_REPLAY_BODY + 1), 413), ("0" * 30 + str(MAX_REPLAY_BODY + 1), 413),
])
def test_a_malformed_or_huge_content_length_is_a_clean_4xx(client, declared, status):
    """The app's own check, through Starlette's test client.  On the real server only the
    well-formed values (``4194305``) reach it: uvicorn's HTTP parser (h11) answers the others
    (not digits, or more than 20 of them) with a plain-text 400 "Invalid HTTP request
    received." (test_hostile_web_connections.py); the check is kept for ASGI servers that pass
    such a header on to the app."""
    for url in ("/api/games", "/api/replays"):
        answer = client.post(url, content=b"{}", headers={"content-length": declared})
        assert answer.status_code == status, (url, declared, answer.text)
        assert len(answer.json()["error"]) < 200


@pytest.mark.parametrize("raw", [b"\xb2", b"\xb9\xb2", b"1\xbd"])
def test_a_content_length_of_latin_1_digit_signs_is_a_400(raw):
    """The test client sends a str header as UTF-8 (the server then reads ``'\u00c2\u00b2'``),
    so the case above never reached the check: here the raw bytes a client may send, which
    the server reads as Latin-1 (``'\u00b2'``, a digit to ``str.isdigit`` but not to ``int``)."""
    import asyncio

    from starlette.requests import Request

    from sevenrocks_env.web.api import read_body

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}
    request = Request({"type": "http", "method": "POST", "path": "/api/games",
                       "headers": [(b"content-length", raw)]}, receive)
    with pytest.raises(GameError) as refused:
        asyncio.run(read_body(request))
    assert refused.value.status == 400 and "bad Content-Length" in refused.value.message


def test_a_content_length_with_leading_zeros_is_its_number(client):
    """``1*DIGIT`` (RFC 9110): twenty zeros and a 2 declare two bytes, not a huge body, to the
    app.  (uvicorn's h11 refuses this header with a plain-text 400 before the app sees it:
    test_hostile_web_connections.py.)"""
    answer = client.post("/api/games", content=b"{}", headers={"content-length": "0" * 20 + "2"})
    assert answer.status_code == 201, answer.text


def test_an_agent_that_cannot_be_built_is_a_json_error(client, capsys, monkeypatch):
    """Anything but a ValueError while building the agents (memory, a file gone unreadable)
    was a bare 500 from the framework."""
    from sevenrocks_env.web import games

    def failing(spec, seed=None):
        raise MemoryError("cannot allocate the network")
    monkeypatch.setattr(games, "make_agent", failing)
    answer = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 3})
    assert answer.status_code == 500
    assert answer.json()["error"] == ("cannot build the agents (MemoryError; the server's log "
                                      "says why)")
    assert "cannot allocate the network" in capsys.readouterr().err
    monkeypatch.undo()
    assert client.post("/api/games", json={"seat": 0, **BOTS}).status_code == 201


def test_an_agent_spec_the_agents_refuse_is_a_422_naming_why(client, app, capsys, monkeypatch):
    """A ValueError from building the agents is the setup's fault (422, with its words), not the
    server's (500); the store keeps no game for it."""
    from sevenrocks_env.web import games

    def refusing(spec, seed=None):
        raise ValueError(f"no such agent {spec!r}")
    monkeypatch.setattr(games, "make_agent", refusing)
    answer = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 3})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "cannot build the agents: no such agent 'greedy'"
    assert len(app.state.store) == 0


@pytest.mark.parametrize("limit", [MAX_REPLAY_BODY, MAX_BODY])
def test_a_body_without_content_length_may_have_limit_bytes_not_one_more(limit):
    """The limit is counted while reading when no ``Content-Length`` says it: ``limit`` bytes
    are read, one more is a 413."""
    import asyncio

    from starlette.requests import Request

    from sevenrocks_env.web.api import read_body

    def request(size):
        chunks = [b"a" * 1000] * (size // 1000) + [b"a" * (size % 1000)]

        async def receive():
            return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}
        return Request({"type": "http", "method": "POST", "path": "/api/replays",
                        "headers": []}, receive)
    assert len(asyncio.run(read_body(request(limit), limit))) == limit
    with pytest.raises(GameError) as refused:
        asyncio.run(read_body(request(limit + 1), limit))
    assert refused.value.status == 413 and f"at most {limit} bytes" in refused.value.message


def test_a_record_the_checker_trips_on_is_a_422_not_a_500(client, monkeypatch):
    """An uploaded record is untrusted: an exception other than ``RecordError`` from checking
    it is still the file's fault."""
    from sevenrocks_env import record as records

    def tripping(record):
        raise KeyError("rounds")
    monkeypatch.setattr(records, "validate", tripping)
    answer = client.post("/api/replays", json={"format": "sevenrocks-record/1"})
    assert answer.status_code == 422
    assert "not a valid game record: KeyError" in answer.json()["error"]
