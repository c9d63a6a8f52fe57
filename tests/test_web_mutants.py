"""Tests from a mutation audit of the web server (sevenrocks_env.web): each pins a behaviour
that a small change of the code left unnoticed by the other web tests -- the command line's
defaults and what it hands the app, the Host and Origin checks, the store's room and expiry
(the API, the views and the move refusals: test_web_mutants_api.py)."""

from __future__ import annotations

import socket

import pytest
from web_client import game_of

from sevenrocks_env.web.games import GameStore


def free_port(family=socket.AF_INET, host="127.0.0.1") -> int:
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@pytest.fixture()
def served(monkeypatch):
    """``main`` with uvicorn's ``Server.run`` replaced: what it would have served, no server."""
    import uvicorn

    seen = {}

    def run(self, sockets=None):
        seen["app"], seen["sockets"] = self.config.app, sockets
        seen["family"] = sockets[0].family
    monkeypatch.setattr(uvicorn.Server, "run", run)
    return seen


def host_names_of(app):
    """The ``host_names`` the app's :class:`SameSiteOnly` middleware was given."""
    from sevenrocks_env.web.origin import SameSiteOnly

    (middleware,) = [m for m in app.user_middleware if m.cls is SameSiteOnly]
    return middleware.kwargs.get("host_names")


# --- server.py: the command line ---------------------------------------------------------

def test_serve_defaults_are_the_documented_ones():
    from sevenrocks_env.web.server import _parser

    args = _parser().parse_args([])
    assert (args.host, args.port, args.max_games, args.idle_minutes, args.agent) == \
        ("127.0.0.1", 8000, 64, 30.0, [])


def test_a_bad_option_is_exit_2_and_help_is_exit_0(capsys):
    from sevenrocks_env.web.server import main

    assert main(["--port", "eighty"]) == 2
    assert main(["--help"]) == 0
    capsys.readouterr()


def test_serve_hands_its_settings_to_the_store_and_the_app(served, capsys):
    from sevenrocks_env.web.server import main

    port = free_port()
    assert main(["--port", str(port), "--max-games", "3", "--idle-minutes", "0.5",
                 "--agent", "search:samples=4"]) == 0
    app = served["app"]
    store = app.state.store
    assert (store.max_games, store.idle_seconds) == (3, 30.0)
    assert ("search:samples=4", "search:samples=4") in store.menu
    assert host_names_of(app) == frozenset({"localhost", "127.0.0.1", "::1"})
    out = capsys.readouterr().out
    assert out == f"Seven Rocks: open http://127.0.0.1:{port}/ in a browser (Ctrl-C stops)\n"


def test_serve_on_127_1_answers_at_its_bound_address(served, capsys):
    from sevenrocks_env.web.server import main

    assert main(["--host", "127.1", "--port", str(free_port())]) == 0
    assert host_names_of(served["app"]) == \
        frozenset({"localhost", "127.0.0.1", "::1", "127.1"})
    assert "note:" not in capsys.readouterr().out


def test_serve_on_a_network_address_says_anyone_may_play(served, capsys):
    from sevenrocks_env.web.server import main

    from sevenrocks_env.web.origin import NetworkNames

    assert main(["--host", "0.0.0.0", "--port", str(free_port(host="0.0.0.0"))]) == 0
    assert isinstance(host_names_of(served["app"]), NetworkNames)  # addresses, its own names
    assert "note: listening on 0.0.0.0: anyone on the network" in capsys.readouterr().out


def test_serve_on_ipv6_loopback_shows_the_address_in_brackets(served, capsys):
    from sevenrocks_env.web.server import main

    port = free_port(socket.AF_INET6, "::1")
    assert main(["--host", "::1", "--port", str(port)]) == 0
    assert served["family"] == socket.AF_INET6
    assert f"open http://[::1]:{port}/ in a browser" in capsys.readouterr().out


@pytest.mark.parametrize("minutes, code", [("10080", 0), ("10080.5", 2)])
def test_idle_minutes_may_be_a_week_not_more(served, capsys, minutes, code):
    from sevenrocks_env.web.server import main

    assert main(["--port", str(free_port()), "--idle-minutes", minutes]) == code
    if code:
        assert "--idle-minutes must be in (0, 10080], got 10080.5" in capsys.readouterr().err


def test_ctrl_c_during_the_run_is_exit_0(monkeypatch, capsys):
    import uvicorn

    from sevenrocks_env.web.server import main

    def interrupted(self, sockets=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(uvicorn.Server, "run", interrupted)
    assert main(["--port", str(free_port())]) == 0


def test_without_the_web_extra_serve_says_so(monkeypatch, capsys):
    import sys

    from sevenrocks_env.web.server import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn: ImportError
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("error: the web page needs the [web] extra")


def test_the_listening_socket_reuses_the_address_as_uvicorn_does():
    from sevenrocks_env.web.server import listening_socket

    with listening_socket("127.0.0.1", free_port()) as listening:
        assert listening.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0


# --- origin.py: Host and Origin ------------------------------------------------------------

@pytest.mark.parametrize("host, name", [
    (" Example.COM:8000 ", "example.com"), ("localhost", "localhost"), ("[::1]:8000", "::1"),
    ("[::1]", "::1"), ("[::1", "[::1"), ("::1", "::1"), ("127.0.0.1:80", "127.0.0.1"),
])
def test_the_name_in_a_host_header(host, name):
    from sevenrocks_env.web.origin import host_name

    assert host_name(host) == name


def test_a_refused_host_is_told_the_names_the_server_answers_at():
    from starlette.datastructures import Headers

    from sevenrocks_env.web.origin import host_names_for, refusal

    status, message = refusal("GET", Headers({"host": "evil.example"}), host_names_for("::1"))
    assert status == 400
    assert message == "this server answers only at 127.0.0.1, [::1], localhost, " \
                      "not at 'evil.example' (to open it at another name, start it with " \
                      "--allow-host NAME)"
    assert refusal("GET", Headers({"host": "[::1]:8000"}), host_names_for("::1")) is None
    assert refusal("GET", Headers({"host": " LOCALHOST:8000"}), host_names_for("::1")) is None


def test_origin_and_host_are_compared_without_case_and_head_is_safe():
    from starlette.datastructures import Headers

    from sevenrocks_env.web.origin import refusal

    same = Headers({"host": "LocalHost:8000", "origin": "http://localhost:8000"})
    assert refusal("POST", same, None) is None
    other = Headers({"host": "localhost:8000", "origin": "http://evil.example"})
    assert refusal("HEAD", other, None) is None and refusal("GET", other, None) is None
    assert refusal("PUT", other, None)[0] == 403
    port = Headers({"host": "localhost:8000", "origin": "http://localhost:9000"})
    assert refusal("POST", port, None)[0] == 403  # another port is another site


# --- games.py: the store and the setup ------------------------------------------------------

def test_the_start_panel_offers_the_four_rule_based_bots_and_target_250(client):
    answer = client.get("/api/agents").json()
    assert [a["spec"] for a in answer["agents"][:4]] == ["random", "greedy", "heuristic", "search"]
    assert answer["default_target"] == 250


def test_an_empty_setup_is_seat_0_against_greedy_bots_to_250(client, app):
    view = client.post("/api/games", json={}).json()
    game = game_of(app, view)
    assert (view["seat"], view["target"], game.match.target) == (0, 250, 250)
    chosen = client.post("/api/games", json={"seat": 2, "target": 60}).json()
    assert (chosen["seat"], chosen["target"], game_of(app, chosen).match.target) == (2, 60, 60)
    assert [s["label"] for s in view["seats"]] == ["you", "greedy", "greedy", "greedy"]
    assert game.setup.specs() == {1: "greedy", 2: "greedy", 3: "greedy"}


def test_the_setup_s_seed_and_target_bounds_are_inclusive():
    from sevenrocks_env.dealing import MAX_SEED
    from sevenrocks_env.web.games import MAX_TARGET, GameError

    store = GameStore()
    assert store.check_setup({"seed": 0, "target": 1}).seed == 0
    assert store.check_setup({"seed": str(MAX_SEED), "target": MAX_TARGET}).seed == MAX_SEED
    assert store.check_setup({"seat": 3}).seat == 3
    for bad in ({"seat": 4}, {"target": 0}, {"target": MAX_TARGET + 1}, {"seed": -1},
                {"seed": MAX_SEED + 1}, {"seed": "\u00b2"}, {"partner": ["greedy"]}):
        with pytest.raises(GameError) as refused:
            store.check_setup(bad)
        assert refused.value.status == 422, bad


def test_game_ids_are_long_and_a_stored_item_is_touched_when_stored_and_read():
    from sevenrocks_env.web.api import Replay

    store = GameStore(max_games=2, idle_seconds=100.0)
    replay = Replay({}, touched=0.0)
    key = store.add(replay)
    assert len(key) >= 24 and replay.id == key
    assert replay.touched > 0.0  # not idle since the clock's start
    replay.touched -= 60
    before = replay.touched
    assert store.get(key, Replay) is replay and replay.touched > before


def test_a_full_store_s_retry_after_rounds_up(monkeypatch):
    from sevenrocks_env.web import games
    from sevenrocks_env.web.games import GameError, Setup

    store = GameStore(max_games=1, idle_seconds=10.0)
    game = store.new_game(Setup(0, "greedy", "greedy", "greedy", 250, 1))
    monkeypatch.setattr(games.time, "monotonic", lambda: 1000.0)
    game.touched = 992.5  # 2.5 s left
    with pytest.raises(GameError) as full:
        store.check_room()
    assert (full.value.status, full.value.retry_after) == (429, 3)


def test_the_store_s_room_drops_only_the_oldest_finished_game_and_only_when_storing():
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.api import Replay
    from sevenrocks_env.web.games import Setup

    store = GameStore(max_games=3)
    games = [store.new_game(Setup(0, "greedy", "greedy", "greedy", 10, seed))
             for seed in range(3)]
    for game in games[:2]:
        while not game.match.over:
            apply_action(game.match, legal_actions(game.match)[0])
    games[0].touched, games[1].touched = games[1].touched, games[0].touched - 1
    store.check_room()  # room (a finished game may go), and nothing dropped for asking
    assert len(store) == 3
    store.add(Replay({}))
    assert len(store) == 3 and games[1].id not in store._games and games[0].id in store._games


def test_a_replay_s_id_is_not_a_game_s_to_remove():
    from sevenrocks_env.web.api import Replay
    from sevenrocks_env.web.games import Game, GameError

    store = GameStore()
    key = store.add(Replay({}))
    with pytest.raises(GameError) as refused:
        store.remove(key, Game)
    assert refused.value.status == 404 and len(store) == 1
    store.remove(key)
    assert len(store) == 0


def test_serve_leaves_the_callers_logging_handlers_open(served, capsys):
    """uvicorn's default log config (``logging.config.dictConfig``) closes every handler of the
    process: a caller's log file, or absl's handler on pytest's captured stderr (after an
    OpenSpiel test, the next test's capture then crashed the whole run: "lost sys.stderr")."""
    import logging

    from sevenrocks_env.web.server import main

    class Kept(logging.Handler):
        closed = False

        def emit(self, record):
            pass

        def close(self):
            self.closed = True
            super().close()

    kept = Kept()
    logging.getLogger().addHandler(kept)
    try:
        assert main(["--port", str(free_port())]) == 0
        assert not kept.closed and kept in logging.getLogger().handlers
    finally:
        logging.getLogger().removeHandler(kept)
    capsys.readouterr()
