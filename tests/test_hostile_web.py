"""The web API's answers to bad input (sevenrocks_env.web): malformed, illegal, out-of-turn and
oversized requests, hostile URLs and headers and fuzzed bodies all get a short 4xx with a clear
message, and the game is left as it was."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_client import BOTS, game_of, one_round_record

from sevenrocks_env import record as records
from sevenrocks_env.tiles import KNOCK
from sevenrocks_env.web.api import MAX_BODY, MAX_REPLAY_BODY


@pytest.fixture()
def waiting(client, app):
    """A game where it is the human's turn to place a tile (not the opening)."""
    for seed in range(40):
        view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": seed}).json()
        while view["next"] == "bot":
            view = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]}).json()
        if not view["opening"] and not view["knock"]["required"]:
            return view
    raise AssertionError("no seed gave a placing turn")


def snapshot(app, view):
    game = game_of(app, view)
    return game.match.to_state(), game.ply


@pytest.mark.parametrize("body, status, words", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 422, "JSON object"),
    (b'{"ply": 0}', 422, "missing field 'action'"),
    (b'{"ply": "0", "action": 3}', 422, "ply must be an int"),
    (b'{"ply": 0, "action": 3, "extra": 1}', 422, "unknown fields"),
])
def test_malformed_move_bodies(client, app, waiting, body, status, words):
    before = snapshot(app, waiting)
    response = client.post(f"/api/games/{waiting['id']}/move", content=body,
                           headers={"content-type": "application/json"})
    assert response.status_code == status and words in response.json()["error"]
    assert snapshot(app, waiting) == before


def test_illegal_moves_say_why_in_the_rules_words(client, app, waiting):
    before = snapshot(app, waiting)
    url = f"/api/games/{waiting['id']}/move"
    game = game_of(app, waiting)
    not_held = next(t for t in range(28) if not (game.match.hands[0] >> t) & 1)
    answer = client.post(url, json={"ply": waiting["ply"], "action": 4 * not_held + 1})
    assert answer.status_code == 422 and "you do not hold" in answer.json()["error"]
    answer = client.post(url, json={"ply": waiting["ply"], "action": KNOCK})
    assert answer.status_code == 422 and "(R6)" in answer.json()["error"]
    stuck = [t for t in waiting["hand"] if not t["playable"]]
    if stuck:
        assert "(R3)" in stuck[0]["reason"]
        answer = client.post(url, json={"ply": waiting["ply"], "action": 4 * stuck[0]["tile"] + 1})
        assert answer.status_code == 422 and "fits no open end" in answer.json()["error"]
    if game.match.ends[2] < 0:  # a branch that is not open (R4)
        tile = next(t for t in waiting["hand"] if t["playable"])["tile"]
        answer = client.post(url, json={"ply": waiting["ply"], "action": 4 * tile + 2})
        assert answer.status_code == 422 and "(R4)" in answer.json()["error"]
    for action in (-1, 113, 10 ** 30, True):
        answer = client.post(url, json={"ply": waiting["ply"], "action": action})
        assert answer.status_code == 422
    assert snapshot(app, waiting) == before


def test_a_bot_illegal_move_is_a_409_that_does_not_tell_its_hand(client, app, capsys):
    """An agent bug: the answer says the game is stuck, and why the move was illegal (which
    would tell what the bot holds) goes to the server's log only."""
    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 3}).json()
    while view["next"] != "bot":
        action = next(p for t in view["hand"] for p in t["places"])["action"] \
            if not view["knock"]["required"] else KNOCK
        view = client.post(f"/api/games/{view['id']}/move",
                           json={"ply": view["ply"], "action": action}).json()
    game = game_of(app, view)
    seat = game.match.turn
    game.agents[seat].act = lambda observation, mask: KNOCK if mask[:KNOCK].any() else 0
    before = snapshot(app, view)
    answer = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert f"the agent at seat {seat} chose an illegal move" in error and "hold" not in error
    logged = capsys.readouterr().err
    assert f"the agent at seat {seat}" in logged and "hold" in logged  # R6's or the tile's words
    assert snapshot(app, view) == before


def test_move_out_of_turn_and_the_same_move_twice(client, app, waiting):
    url = f"/api/games/{waiting['id']}/move"
    action = next(p for t in waiting["hand"] for p in t["places"])["action"]
    assert client.post(f"/api/games/{waiting['id']}/step",
                       json={"ply": waiting["ply"]}).status_code == 409  # human's turn
    first = client.post(url, json={"ply": waiting["ply"], "action": action})
    assert first.status_code == 200
    after = snapshot(app, waiting)
    again = client.post(url, json={"ply": waiting["ply"], "action": action})
    assert again.status_code == 409 and "already sent" in again.json()["error"]
    ahead = client.post(url, json={"ply": waiting["ply"] + 5, "action": action})
    assert ahead.status_code == 409 and ahead.json()["error"].endswith(
        f"is at move {waiting['ply'] + 1}: the game has not reached it"), ahead.json()
    assert snapshot(app, waiting) == after
    view = first.json()
    if view["next"] == "bot":
        other = client.post(url, json={"ply": view["ply"], "action": KNOCK})
        assert other.status_code == 409 and "turn" in other.json()["error"]
        assert snapshot(app, waiting) == after
        step = client.post(f"/api/games/{waiting['id']}/step", json={"ply": view["ply"]})
        assert step.status_code == 200
        after = snapshot(app, waiting)
        twice = client.post(f"/api/games/{waiting['id']}/step", json={"ply": view["ply"]})
        assert twice.status_code == 409 and "already sent" in twice.json()["error"]
        assert snapshot(app, waiting) == after


def test_the_start_panel_offers_the_shipped_policy_by_a_spec_that_loads(client, monkeypatch,
                                                                        tmp_path):
    """``ckpt:shipped`` resolves through policy_file.shipped_path (the package's copy when
    installed), not through a checkout-relative folder."""
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.web import games

    offered = {agent["label"]: agent["spec"] for agent in client.get("/api/agents").json()["agents"]}
    assert offered["shipped policy"] == "ckpt:shipped"
    make_agent(offered["shipped policy"])
    make_agent(offered["shipped policy with search"])
    make_agent(offered["shipped policy with search and inference"])
    sampling = make_agent(offered["shipped policy, sampling at temperature 0.5"])
    assert (sampling.deterministic, sampling.temperature) == (False, 0.5)
    monkeypatch.setattr(games, "shipped_path", lambda: tmp_path / "missing.pt")  # no file: not offered
    assert "shipped policy" not in [label for _, label in games.agent_menu()]


def test_an_extra_agent_on_the_menu_already_is_listed_once():
    from sevenrocks_env.web import games

    specs = [spec for spec, _ in games.agent_menu(("random", "search:samples=4", "random"))]
    assert specs.count("random") == 1 and specs.count("search:samples=4") == 1


def test_unknown_game_and_replay_ids(client):
    for url in ("/api/games/nope", "/api/games/nope/record"):
        response = client.get(url)
        assert response.status_code == 404 and "no game" in response.json()["error"]
    assert client.post("/api/games/nope/move", json={"ply": 0, "action": 0}).status_code == 404
    assert client.post("/api/games/nope/step", json={"ply": 0}).status_code == 404
    assert client.get("/api/replays/nope/0/0").status_code == 404
    assert client.get("/api/nothing").status_code == 404


@pytest.mark.parametrize("body, words", [
    ({"partner": "alphago"}, "unknown agent spec for partner"),
    ({"left": "ckpt:/etc/passwd"}, "unknown agent spec"),  # no arbitrary file loading
    ({"seat": 4}, "seat must be"), ({"seat": True}, "seat must be"),  # JSON true is no seat 1
    ({"target": 0}, "target must be"),
    ({"target": records.MAX_TARGET + 1}, "target must be"),  # its record would not load back
    ({"seed": -1}, "seed must be null or an int"),  # refused here, not by an agent's check
    ({"seed": "-1"}, "seed must be"), ({"seed": "1e3"}, "seed must be"),
    ({"seed": "9" * 20}, "seed must be"), ({"seed": "١٢"}, "seed must be"),  # Arabic-Indic digits
    ({"seed": str(2 ** 63)}, "seed must be"), ({"seed": 1.0}, "seed must be"),
    ({"seed": "9" * 5000}, "seed must be"),  # past int()'s digit limit: a 422, not a 500
    ({"colour": "red"}, "unknown fields"),
    ([], "JSON object"), (False, "JSON object"),  # empty, but not a missing body
])
def test_bad_setups(client, app, body, words):
    response = client.post("/api/games", json=body)
    assert response.status_code == 422 and words in response.json()["error"], response.text
    assert len(app.state.store) == 0


def test_an_integer_past_python_s_digit_limit_is_a_400_not_a_500(client):
    response = client.post("/api/games", content=b'{"seed": ' + b"9" * 5000 + b"}")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


@pytest.mark.parametrize("body, words", [
    (b'{"seed": NaN}', "NaN"),
    (b"[" + b",".join([b"{}"] * 1_000_000) + b"]", "JSON values"),  # 3 MB: ~110 MB parsed
    (b'{"seed": "\xff"}', "not valid JSON"),
])
def test_bodies_are_parsed_as_records_are(client, body, words):
    response = client.post("/api/replays", content=body)
    assert response.status_code == 400 and words in response.json()["error"], response.text
    assert "game record" not in response.json()["error"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32-le"])
def test_bodies_in_any_json_encoding_are_read(client, encoding):
    """JSON may come as UTF-8 with a BOM, UTF-16 or UTF-32 (json.loads of bytes reads them)."""
    body = json.dumps({"seed": 12, "target": 30}).encode(encoding)
    assert client.post("/api/games", content=body).status_code == 201


def test_a_seed_comes_back_as_a_string_and_is_taken_back_as_one(client, app):
    """A view gives the seed as decimal digits (a JSON number past 2^53 is rounded in JS); a
    client sending those digits back gets the same deals."""
    seed = 2 ** 63 - 25
    as_number = client.post("/api/games", json={"seed": seed}).json()
    as_text = client.post("/api/games", json={"seed": str(seed)}).json()
    assert game_of(app, as_number).setup.seed == game_of(app, as_text).setup.seed == seed
    assert as_number["hand"] == as_text["hand"]


def test_bodies_are_parsed_off_the_event_loop(client, monkeypatch):
    """Parsing a 4 MB replay body takes tens of milliseconds: not on the loop serving games."""
    loops = []
    parse = records.parse

    def spy(text):
        try:
            loops.append(asyncio.get_running_loop())
        except RuntimeError:  # no loop in this thread: a worker thread
            loops.append(None)
        return parse(text)
    monkeypatch.setattr(records, "parse", spy)
    assert client.post("/api/games", json={"seed": 1}).status_code == 201
    assert loops == [None]


def test_a_long_match_record_replays_and_an_empty_setup_starts_a_game(client, app):
    """A match to 5000 against random bots (the page's largest target) downloads as ~1.4 MB:
    the page must be able to load it back.  POST /api/games with no body: all defaults."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(3, target=5000, max_rounds=1000)
    while not match.over:
        apply_action(match, legal_actions(match)[-1])
    text = json.dumps(records.game_record(match), indent=1).encode()
    assert MAX_BODY < len(text) < MAX_REPLAY_BODY
    assert client.post("/api/replays", content=text).status_code == 201
    created = client.post("/api/games")
    assert created.status_code == 201, created.json()
    assert created.json()["target"] == 250
    # the random seed is drawn from 2**63 values: one from 2**31 could be found by search from
    # a player's own hand, and then every hidden hand is known
    seeds = [app.state.store.get(client.post("/api/games").json()["id"]).setup.seed
             for _ in range(4)]
    assert max(seeds) >= 2 ** 32, seeds


def test_oversized_body_is_refused_before_parsing(client, waiting):
    big = b'{"ply": 0, "action": 1, "x": "' + b"a" * MAX_BODY + b'"}'
    response = client.post(f"/api/games/{waiting['id']}/move", content=big)
    assert response.status_code == 413 and "too large" in response.json()["error"]

    def chunks(limit):  # no content-length: the limit is enforced while reading
        for _ in range(limit // 1024 + 2):
            yield b"a" * 1024
    response = client.post(f"/api/games/{waiting['id']}/move", content=chunks(MAX_BODY))
    assert response.status_code == 413
    response = client.post("/api/replays", content=chunks(MAX_REPLAY_BODY))  # records are larger
    assert response.status_code == 413 and str(MAX_REPLAY_BODY) in response.json()["error"]


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


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["ply", "action", "seat", "partner", "left", "right", "target", "seed",
                         "format", "rounds", "x"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=json_values, raw=st.binary(max_size=40), use_raw=st.booleans(),
       route=st.sampled_from(["move", "step", "create", "replay"]))
def test_fuzzed_bodies_never_give_500_and_never_change_the_game(client, app, waiting, body, raw,
                                                                 use_raw, route):
    before = snapshot(app, waiting)
    url = {"move": f"/api/games/{waiting['id']}/move", "step": f"/api/games/{waiting['id']}/step",
           "create": "/api/games", "replay": "/api/replays"}[route]
    content = raw if use_raw else json.dumps(body).encode()
    response = client.post(url, content=content, headers={"content-type": "application/json"})
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["error"]
    if route in ("move", "step") and response.status_code != 200:
        assert snapshot(app, waiting) == before


def test_every_menu_agent_plays_at_the_largest_seed(client):
    """Bots are seeded from the deal seed (seed * 4 + seat); torch generators take seeds below
    2**64 only, so the shipped-policy bots refused every seed from 2**62 (half the seeds the
    server draws itself) before their seeds were folded."""
    from sevenrocks_env.web.games import MAX_SEED

    specs = [entry["spec"] for entry in client.get("/api/agents").json()["agents"]]
    assert "ckpt:shipped" in specs and any(s.startswith("search:policy") for s in specs)
    for spec in specs:
        response = client.post("/api/games", json={"seat": 0, "partner": spec, "left": spec,
                                                   "right": spec, "seed": MAX_SEED})
        assert response.status_code == 201, (spec, response.text)


def test_hostile_urls_and_headers_get_short_4xx_answers(client, waiting):
    game = waiting["id"]
    replay = client.post("/api/replays", json=one_round_record()).json()["id"]
    # a path number past Python's 4300-digit int limit failed in Starlette's router: a 500
    for path in (f"/api/replays/{replay}/{'9' * 5000}/0", f"/api/replays/{replay}/0/-1",
                 f"/api/replays/{replay}/x/0"):
        response = client.get(path)
        assert response.status_code == 404 and len(response.text) < 400, response.text
    # error messages never repeat a large value
    for response in (client.post("/api/games", json={"seat": "x" * 60000}),
                     client.get(f"/api/games/{'a' * 15000}"),
                     client.post(f"/api/games/{game}/move", json={"ply": 10 ** 4000,
                                                                 "action": 0}),
                     client.post("/api/games", json={"x" * 60000: 1})):
        assert 400 <= response.status_code < 500 and len(response.text) < 400, response.text
    response = client.post("/api/games", content=b'{"seat": 0, "seat": 3}')
    assert response.status_code == 400 and "given twice" in response.text
    response = client.delete("/api/games")
    assert response.status_code == 405 and "POST" in response.headers["allow"]
    response = client.post(f"/api/games/{game}/move", content=b"{}",
                           headers={"content-length": "9" * 5000})
    assert response.status_code == 413
    response = client.post(f"/api/games/{game}/move", content=b"{}",  # sent as UTF-8 by the
                           headers={"content-length": b"\xb2"})  # client: two characters
    assert response.status_code == 400  # the byte alone: tests/test_web_failures.py


@pytest.mark.parametrize("field", ["seat", "target", "seed", "partner", "ply", "action"])
def test_deeply_nested_values_are_refused_with_a_4xx_not_a_500(client, app, waiting, field):
    """A value nested nearly as deep as the parser allows: the refusal names it without a
    ``repr`` of the whole (which ran out of stack on the server's deeper call chain)."""
    import sys

    before = snapshot(app, waiting)
    url = "/api/games" if field in ("seat", "target", "seed", "partner") else \
        f"/api/games/{waiting['id']}/move"
    limit = sys.getrecursionlimit()
    for depth in range(limit - 120, limit + 5, 5):
        body = {"ply": waiting["ply"], "action": 3} if field in ("ply", "action") else {}
        body = (json.dumps(body)[:-1] + (", " if body else "") + f'"{field}": '
                + "[" * depth + "]" * depth + "}")
        response = client.post(url, content=body.encode(),
                               headers={"content-type": "application/json"})
        assert response.status_code in (400, 422), (depth, response.status_code)
    assert snapshot(app, waiting) == before


@pytest.mark.parametrize("body", [{"ply": True, "action": 1}, {"ply": 0, "action": False},
                                  {"ply": False}])
def test_true_and_false_are_not_ints_in_a_move_or_step(body):
    """JSON ``true`` is no ply or action: Python's ``True == 1`` would let it answer move 1."""
    from sevenrocks_env.web.api import object_body
    from sevenrocks_env.web.games import GameError

    fields = {"ply": True, "action": True} if "action" in body else {"ply": True}
    with pytest.raises(GameError) as refused:
        object_body(body, fields)
    assert refused.value.status == 422 and "must be an int" in refused.value.message


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


def test_a_tile_that_fits_nowhere_blames_closed_branches_only_while_they_are_closed():
    """"fits no open end" adds that the spinner's branches are not open (R4) only while they
    are not: once branch A is open, that would send the player looking for a rule that does
    not apply."""
    from sevenrocks_env.rules import Match, apply_action, is_legal, legal_actions
    from sevenrocks_env.tiles import NORTH
    from sevenrocks_env.web.moves import tile_reason

    seen = {True: 0, False: 0}
    for seed in range(30):
        match = Match.new(seed, target=5000)
        while len(match.history) == 1:
            if not match.opening:
                hand = match.hands[match.turn]
                stuck = [t for t in range(28) if (hand >> t) & 1
                         and not any(is_legal(match, a) for a in range(4 * t, 4 * t + 4))]
                for tile in stuck:
                    reason = tile_reason(match, tile)
                    assert "fits no open end" in reason
                    closed = match.ends[NORTH] < 0
                    assert ("(R4)" in reason) == closed, (match.ends, reason)
                    seen[closed] += 1
            apply_action(match, legal_actions(match)[0])
    assert seen[True] and seen[False]


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
    assert full.value.status == 429 and "(0.5 minutes without a move)" in full.value.message
    assert "30 minutes" in GameStore().idle_text()


def test_every_refused_placement_says_which_case_with_the_numbers_the_table_shows():
    """Against the rules engine's legal moves, in every position of 30 first rounds: a tile that
    fits nowhere lists every open end (one showing 0 too); one that fits elsewhere names the end
    it missed and the number that end shows (0 included), or that the end is not open; a tile
    that fits branch B only still fits; the spinner 0|0 is a spinner (R4); a legal move has no
    reason."""
    from sevenrocks_env.play import PLACE_WORDS
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from sevenrocks_env.tiles import NORTH
    from sevenrocks_env.web.moves import why_illegal

    seen = {"0 listed": 0, "0 missed": 0, "0|0 spinner": 0, "branch B only": 0}
    for seed in range(30):
        match = Match.new(seed, target=5000)
        while len(match.history) == 1:
            legal = legal_actions(match)
            assert why_illegal(match, legal[0]) == ""
            hand = match.hands[match.turn]
            for tile in (t for t in range(28) if (hand >> t) & 1 and not match.opening):
                fits = [a & 3 for a in legal if a != KNOCK and a >> 2 == tile]
                seen["branch B only"] += fits == [3]
                for slot in set(range(4)) - set(fits):
                    reason = why_illegal(match, 4 * tile + slot)
                    if not fits:
                        assert "fits no open end" in reason, (match.ends, reason)
                        for place, number in enumerate(match.ends):
                            if number >= 0:
                                assert f"{PLACE_WORDS[place]} shows {number}" in reason, reason
                        seen["0 listed"] += 0 in match.ends
                        if match.ends[NORTH] < 0 and match.spinner == 0:
                            assert "no spinner yet" not in reason, reason
                            seen["0|0 spinner"] += 1
                    elif match.ends[slot] < 0:
                        assert f"{PLACE_WORDS[slot]} is not open" in reason, reason
                    else:
                        assert f"does not fit {PLACE_WORDS[slot]}, which shows " \
                               f"{match.ends[slot]}:" in reason, (match.ends, reason)
                        seen["0 missed"] += match.ends[slot] == 0
            apply_action(match, legal[0])
    assert all(seen.values()), seen


def test_the_opener_s_tiles_go_in_the_middle_and_a_move_elsewhere_says_so(client, app):
    """The opening (R3): every tile of the opener's hand may open, in the middle (slot 0, the
    place "open"); an end is no place to open, and the refusal says that rather than "not
    open: there is no spinner yet"."""
    from sevenrocks_env.rules import Match

    seed = next(s for s in range(100) if Match.new(s, target=250).turn == 0)
    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": seed}).json()
    assert view["opening"] and view["next"] == "you"
    assert all(t["playable"] and [p["place"] for p in t["places"]] == ["open"]
               and [p["slot"] for p in t["places"]] == [0] for t in view["hand"]), view["hand"]
    tile = view["hand"][0]
    answer = client.post(f"/api/games/{view['id']}/move",
                         json={"ply": view["ply"], "action": 4 * tile["tile"] + 1})
    assert answer.status_code == 422
    assert f"the opening tile is played in the middle (slot 0): {tile['name']} opens the round" \
        in answer.json()["error"]


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
