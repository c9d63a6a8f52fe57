"""The web API's game store under load (sevenrocks_env.web.games): at most --max-games open,
a full server says when to retry (Retry-After, never too early) and makes room from finished
games, idle games expire after --idle-minutes (named as given), and a game whose bot is
thinking is busy without stalling the others.  Bad moves: ``test_hostile_web_moves.py``; bad
setups and bodies: ``test_hostile_web_setups.py``."""

from __future__ import annotations

import threading
import time

import pytest
from web_client import BOTS, game_of

from sevenrocks_env.tiles import KNOCK


def test_game_cap_and_idle_expiry(client, app):
    store = app.state.store
    for _ in range(store.max_games):
        assert client.post("/api/games", json=BOTS).status_code == 201
    full = client.post("/api/games", json=BOTS)
    assert full.status_code == 429 and "open games" in full.json()["error"]
    store.idle_seconds = 0.0
    time.sleep(0.01)
    assert client.post("/api/games", json=BOTS).status_code == 201  # the idle ones expired
    assert len(store) == 1


def test_a_full_server_says_when_to_retry_and_makes_room_from_finished_games(client, app):
    """New match / Play again on the page left the old game holding a place for 30 minutes:
    the page now drops it (DELETE), a full store drops its finished game touched longest ago,
    and a 429 says (Retry-After) when the first idle game expires."""
    from sevenrocks_env.rules import apply_action, legal_actions

    store = app.state.store
    views = [client.post("/api/games", json=BOTS).json() for _ in range(store.max_games)]
    game_of(app, views[2]).touched = time.monotonic() - 100  # idle 100 s: it expires first
    full = client.post("/api/games", json=BOTS)
    assert full.status_code == 429  # in idle - 100 s, less the time this request took
    assert int(full.headers["retry-after"]) in (store.idle_seconds - 101,
                                                store.idle_seconds - 100)
    assert client.delete(f"/api/games/{views[0]['id']}").status_code == 204
    assert client.get(f"/api/games/{views[0]['id']}").status_code == 404
    assert client.delete(f"/api/games/{views[0]['id']}").status_code == 404
    refused = client.put(f"/api/games/{views[1]['id']}")
    assert refused.status_code == 405 and "DELETE" in refused.headers["allow"]
    views[0] = client.post("/api/games", json=BOTS).json()  # the freed place
    game = game_of(app, views[3])
    while not game.match.over:  # finish one game (as the page's bot steps would)
        apply_action(game.match, legal_actions(game.match)[0])
    assert client.post("/api/replays", content=b"{not json").status_code == 400
    assert client.get(f"/api/games/{views[3]['id']}").status_code == 200  # a failed request
    assert client.post("/api/games", json=BOTS).status_code == 201  # in the finished one's place
    assert client.get(f"/api/games/{views[3]['id']}").status_code == 404
    assert len(store) == store.max_games
    assert client.get(f"/api/games/{views[4]['id']}").status_code == 200  # unfinished: kept


def test_a_slow_bot_does_not_stall_other_games(client, app):
    """A bot move runs in a worker thread: another game answers while it is thinking."""
    slow = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 1}).json()
    while slow["next"] != "bot":
        places = [p for t in slow["hand"] for p in t["places"]]
        slow = client.post(f"/api/games/{slow['id']}/move",
                           json={"ply": slow["ply"], "action": places[0]["action"]}).json()
    game = game_of(app, slow)
    release = threading.Event()
    bot = game.agents[game.match.turn]
    original = bot.act

    def thinking(*args):
        release.wait(5)
        return original(*args)
    bot.act = thinking
    other = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 2}).json()
    done = {}
    worker = threading.Thread(target=lambda: done.setdefault("r", client.post(
        f"/api/games/{slow['id']}/step", json={"ply": slow["ply"]})))
    worker.start()
    try:  # (a failed assertion with the bot still thinking hung the whole run)
        started = time.monotonic()
        while not game.lock.locked() and time.monotonic() - started < 5:
            time.sleep(0.01)
        assert client.get(f"/api/games/{other['id']}").status_code == 200  # not stalled
        busy = client.post(f"/api/games/{slow['id']}/step", json={"ply": slow["ply"]})
        assert busy.status_code == 409 and "being computed" in busy.json()["error"]
        assert busy.headers["retry-after"] == "1"  # the page tries its bot step again (app.js)
        # a human move waits for the lock too: checked beside a bot move being applied, it could
        # pass the ply check before that move and be applied after it
        moved = client.post(f"/api/games/{slow['id']}/move",
                            json={"ply": slow["ply"], "action": KNOCK})
        assert moved.status_code == 409 and "being computed" in moved.json()["error"]
        # a GET of the busy game answers at once (it used to wait on the lock, holding a worker
        # thread: enough of them stalled every game) with the view from before the bot's move
        view = client.get(f"/api/games/{slow['id']}")
        assert not release.is_set() and view.status_code == 200 and view.json() == slow
        record = client.get(f"/api/games/{slow['id']}/record")
        assert record.status_code == 409 and "being computed" in record.json()["error"]
    finally:
        release.set()
        worker.join(10)
    assert done["r"].status_code == 200
    assert client.get(f"/api/games/{slow['id']}").json() == done["r"].json()


def test_a_game_expires_once_idle_for_idle_seconds_not_later(client, app):
    """``--idle-minutes`` is when a game is dropped: one idle for longer is gone, one idle for
    less stays (and a request touches it again)."""
    store = app.state.store
    store.idle_seconds = 100.0
    old, fresh = (client.post("/api/games", json=BOTS).json() for _ in range(2))
    game_of(app, old).touched = time.monotonic() - 150
    game_of(app, fresh).touched = time.monotonic() - 60
    assert client.get(f"/api/games/{old['id']}").status_code == 404
    assert client.get(f"/api/games/{fresh['id']}").status_code == 200
    assert time.monotonic() - game_of(app, fresh).touched < 50  # touched by the request


def test_refusals_name_idle_minutes_as_given_not_rounded_down():
    """``--idle-minutes 0.5``: a game gone, or a full server, said "0 idle minutes" and "0
    minutes without a move" (the seconds floor-divided by 60)."""
    from sevenrocks_env.web.games import GameError, GameStore, Setup

    store = GameStore(max_games=1, idle_seconds=30.0)
    with pytest.raises(GameError) as gone:
        store.get("nope")
    assert "expired after 0.5 minutes idle" in gone.value.message
    store.new_game(Setup(0, "greedy", "greedy", "greedy", 250, 1))
    with pytest.raises(GameError) as full:
        store.new_game(Setup(0, "greedy", "greedy", "greedy", 250, 2))
    assert full.value.status == 429 and ("(0.5 minutes without a request; any request, a GET "
                                         "too, keeps a game open)") in full.value.message
    assert "30 minutes" in GameStore().idle_text()


def test_retry_after_is_never_before_the_first_idle_game_expires():
    """A full server's ``Retry-After`` rounds the seconds left up: rounded down, the page's
    retry came before the place was free and met another 429."""
    from sevenrocks_env.web.games import GameError, GameStore, Setup

    store = GameStore(max_games=1, idle_seconds=100.0)
    game = store.new_game(Setup(0, "greedy", "greedy", "greedy", 250, 1))
    game.touched = time.monotonic() - 0.5  # 99.5 s left
    with pytest.raises(GameError) as full:
        store.check_room()
    left = game.touched + store.idle_seconds - time.monotonic()
    assert full.value.status == 429 and left <= full.value.retry_after < left + 1
