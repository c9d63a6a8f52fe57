"""The web API's answers to bad moves (sevenrocks_env.web): malformed, illegal, out-of-turn,
oversized, fuzzed and deeply nested bodies, hostile URLs and headers get a short 4xx with a
clear message (an illegal move's in the rules' words), and the game is left as it was.  Bad
setups and bodies: ``test_hostile_web_setups.py``; the store's limits:
``test_hostile_web_store.py``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_client import BOTS, game_of, one_round_record

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
    (b'{"ply": -1, "action": 3}', 422, "ply must be an int >= 0"),  # not a stale request (409)
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
