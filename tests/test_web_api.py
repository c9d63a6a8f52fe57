"""The web API (sevenrocks_env.web) through Starlette's test client: whole matches against bots,
hidden tiles never sent (R1), records and replays.  Bad input: ``test_hostile_web.py``."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from web_client import BOTS, game_of

from sevenrocks_env import record as records
from sevenrocks_env.render.text import describe_move
from sevenrocks_env.scoring import round_to_five
from sevenrocks_env.tiles import KNOCK, tile_name, tiles_of
from sevenrocks_env.web.views import game_view

TILE_TEXT = re.compile(r"\d\|\d")


def hidden_tiles(game) -> set[str]:
    """Names of the tiles in the other seats' hands in the round in progress."""
    match = game.match
    if match.history[-1].result is not None:
        return set()
    return {tile_name(t) for s in range(4) if s != game.seat for t in tiles_of(match.hands[s])}


def visible_strings_and_tiles(view):
    """Every string and every tile index in the view outside the ended rounds' summaries."""
    strings, tiles = [], []

    def walk(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                if k != "last_round":
                    walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            strings.append(value)
        elif key == "tile" and isinstance(value, int):
            tiles.append(tile_name(value))
        elif key == "action" and isinstance(value, int) and value != KNOCK:
            tiles.append(tile_name(value >> 2))
    walk(view)
    return strings, tiles


def assert_nothing_hidden(game, view) -> None:
    """R1: no tile of another seat's current hand anywhere in what the page receives."""
    hidden = hidden_tiles(game)
    strings, tiles = visible_strings_and_tiles(view)
    shown = {t for text in strings for t in TILE_TEXT.findall(text)} | set(tiles)
    assert not shown & hidden, f"hidden tiles sent to the page: {sorted(shown & hidden)}"
    assert view["seed"] is None or game.match.over  # the seed would give every deal away
    # and in any form (a hand's bit set, a list of indices under any key): a tile exchanged
    # between two other hands of the round in progress changes nothing the page receives
    match = game.match
    if match.history[-1].result is None:
        assert json.loads(json.dumps(game_view(game))) == view
        others = [s for s in range(4) if s != game.seat and match.hands[s]]
        for a, b in itertools.combinations(others, 2):
            one, two = tiles_of(match.hands[a])[0], tiles_of(match.hands[b])[0]
            saved = list(match.hands)
            try:
                match.hands[a] ^= (1 << one) | (1 << two)
                match.hands[b] ^= (1 << one) | (1 << two)
                assert json.loads(json.dumps(game_view(game))) == view, (a, b)
            finally:
                match.hands[:] = saved
    if view["last_round"] is not None:
        assert view["last_round"]["result"] is not None  # hands only for ended rounds (R7)


def play_out(client, app, view, max_requests=3000, summaries=None):
    """Play the human's seat with its first legal move until the match ends; check every view.
    ``summaries`` (a list) gets each ended round's summary, from the view where it first shows."""
    game = game_of(app, view)
    for _ in range(max_requests):
        assert_nothing_hidden(game, view)
        if summaries is not None and view["rounds_ended"] > len(summaries):
            assert view["rounds_ended"] == len(summaries) + 1  # a move ends one round at most
            summaries.append(view["last_round"])
        if view["over"]:
            return view
        if view["next"] == "bot":
            response = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
        else:
            playable = [p for tile in view["hand"] for p in tile["places"]]
            action = playable[0]["action"] if playable else KNOCK
            assert (not playable) == view["knock"]["required"]
            response = client.post(f"/api/games/{view['id']}/move",
                                   json={"ply": view["ply"], "action": action})
        assert response.status_code == 200, response.text
        view = response.json()
    raise AssertionError("the match did not end")


def test_full_match_against_bots_never_shows_hidden_tiles(client, app):
    response = client.post("/api/games", json={"seat": 1, **BOTS, "seed": 7, "target": 100})
    assert response.status_code == 201
    summaries = []
    view = play_out(client, app, response.json(), summaries=summaries)
    game = game_of(app, view)
    assert view["winner"] == game.match.winner is not None
    assert view["scores"] == game.match.scores
    assert max(view["scores"]) >= 100  # R8: the winner reached the target
    assert view["seed"] == "7"  # revealed once the match is over (text: exact past 2^53)
    record = client.get(f"/api/games/{view['id']}/record").json()
    records.validate(record)
    assert record["scores"] == view["scores"] and record["winner"] == view["winner"]
    assert view["rounds_ended"] == len(summaries) == len(record["rounds"])
    for index, (summary, rnd) in enumerate(zip(summaries, record["rounds"])):
        assert summary["round"] == index
        assert summary["scores"] == rnd["scores"] and summary["deductions"] == rnd["deductions"]
        d = rnd["deductions"]
        assert summary["team_deductions"] == [d[0] + d[2], d[1] + d[3]]  # partners: 0+2, 1+3
        # each hand left, counted and rounded (R7); none shown after the winning tile (R8)
        assert len(summary["hands"]) == (0 if rnd["result"] == "won" else 4)
        for hand in summary["hands"]:
            pips = sum(int(n) for tile in hand["tiles"] for n in tile.split("|"))
            assert hand["pips"] == pips and hand["rounded"] == round_to_five(pips)
            assert hand["deduction"] == d[hand["seat"]] and hand["team"] == hand["seat"] & 1
        # the move that ended the round, which the page's move list (the next round's) lacks
        assert summary["last_move"] == describe_move(rnd["moves"], len(rnd["moves"]) - 1)
    assert view["last_round"] == summaries[-1]
    assert record["rounds"][-1]["result"] == "won" and any(
        summary["hands"] for summary in summaries)  # both kinds of summary were checked


def test_a_view_does_not_grow_with_the_rounds_played(client, app):
    """Every move returns a view: a view holding every ended round's summary would make a long
    match's traffic grow with the square of its length."""
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.views import game_view

    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 5, "target": 5000}).json()
    game = game_of(app, view)
    sizes = {}
    while len(game.match.history) <= 30:
        apply_action(game.match, legal_actions(game.match)[0])
        ended = len(game.match.history) - 1
        if ended in (2, 30) and ended not in sizes and game.match.history[-1].result is None:
            sizes[ended] = len(json.dumps(game_view(game)))
    assert sizes[30] < 1.5 * sizes[2], sizes


def test_rematch_replays_the_same_deals_from_the_next_seat(client, app):
    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 11, "target": 30}).json()
    assert client.post(f"/api/games/{view['id']}/rematch").status_code == 409  # not over yet
    view = play_out(client, app, view)
    again = client.post(f"/api/games/{view['id']}/rematch")
    assert again.status_code == 201
    new = game_of(app, again.json())
    old = game_of(app, view)
    assert new.seat == 1 and new.setup.seed == old.setup.seed
    assert new.match.history[0].hands == old.match.history[0].hands  # duplicate deals


def test_the_bots_sit_where_the_setup_says(app):
    """``left`` plays right after the human, ``right`` right before (clockwise, R1)."""
    from sevenrocks_env.rules import next_seat
    from sevenrocks_env.web.games import Setup
    for seat in range(4):
        specs = Setup(seat, "random", "greedy", "heuristic", 250, 1).specs()
        assert specs[next_seat(seat)] == "greedy"
        assert specs[next_seat(next_seat(seat))] == "random"
        assert specs[next(s for s in range(4) if next_seat(s) == seat)] == "heuristic"
        assert seat not in specs


@pytest.mark.parametrize("seed", range(6))
def test_after_the_match_nobody_is_to_move(client, app, seed):
    """Whoever played the last move stays "on turn" in the rules state: the human, in some of
    these matches, must not then be offered (or allowed) a move."""
    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": seed, "target": 30}).json()
    view = play_out(client, app, view)
    game = game_of(app, view)
    assert view["next"] == "over" and not game.human_to_move()
    step = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
    assert step.status_code == 409 and "over" in step.json()["error"]  # (was a 500 "stuck")
    # the last round's moves stay listed at the end (the list was empty once the match was over)
    last = game.match.history[-1]
    assert [m["text"] for m in view["moves"]] == [describe_move(last, i)
                                                  for i in range(len(last.moves))]
    assert view["moves"]
    assert view["board"] is None and view["hand"] == []  # the last board is in last_round
    response = client.post(f"/api/games/{view['id']}/move", json={"ply": view["ply"],
                                                                  "action": KNOCK})
    assert response.status_code == 409 and game.ply == view["ply"]


def test_each_bot_is_seeded_from_the_deal_seed_and_its_seat(client, app, monkeypatch):
    """Bots of one spec at different seats draw differently: seeded seed * 4 + seat."""
    from sevenrocks_env.web import games

    made = []
    real = games.make_agent
    monkeypatch.setattr(games, "make_agent", lambda spec, seed: made.append((spec, seed)) or
                        real(spec, seed=seed))
    everyone = {"seat": 1, "partner": "random", "left": "random", "right": "random", "seed": 9}
    assert client.post("/api/games", json=everyone).status_code == 201
    assert sorted(made) == [("random", 9 * 4 + seat) for seat in (0, 2, 3)]


def test_record_mid_match_holds_only_ended_rounds(client, app):
    """Mid-match the record holds the ended rounds only (the round in progress shows every
    dealt hand), with the scores they ended at: it validates and loads as a replay (scores
    taken from the match in progress made it fail both)."""
    view = client.post("/api/games", json={"seat": 2, **BOTS, "seed": 5}).json()
    response = client.get(f"/api/games/{view['id']}/record")
    assert response.status_code == 409 and "no round has ended" in response.json()["error"]
    game = game_of(app, view)
    match = game.match
    # play until the second round has scored (a download right at a round's end could not
    # tell the scores of the ended rounds from the match's)
    while len(match.history) < 2 or match.scores == match.history[-2].scores:
        if view["next"] == "bot":
            view = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]}).json()
        else:
            places = [p for t in view["hand"] for p in t["places"]]
            action = places[0]["action"] if places else KNOCK
            view = client.post(f"/api/games/{view['id']}/move",
                               json={"ply": view["ply"], "action": action}).json()
    assert not match.over and len(match.history) == 2
    record = client.get(f"/api/games/{view['id']}/record").json()
    records.validate(record)
    assert [r["result"] is not None for r in record["rounds"]] == [True]
    assert record["scores"] == match.history[0].scores != match.scores
    dealt = [[tile_name(t) for t in tiles_of(hand)] for hand in match.history[-1].hands]
    assert dealt not in [r["hands"] for r in record["rounds"]]  # the round in progress: absent
    assert "sevenrocks-record/1" in json.dumps(record)
    assert client.post("/api/replays", json=record).status_code == 201


def test_replays_are_dropped_by_the_page_and_make_room_when_full(client, app):
    """A stored replay held a place of --max-games for its idle minutes and could not be
    pushed out (only finished games were), and the page never dropped one: a few loads and
    Close filled the server.  Now a full store drops the finished game or replay touched
    longest ago, and DELETE /api/replays/{id} (Close, or loading another record) frees one."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(4)
    for _ in range(12):
        apply_action(match, legal_actions(match)[0])
    record = records.game_record(match)
    store = app.state.store
    ids = [client.post("/api/replays", json=record).json()["id"] for _ in range(store.max_games)]
    assert client.get(f"/api/replays/{ids[0]}/0/1").status_code == 200  # touched: ids[1] oldest
    assert client.post("/api/games", json=BOTS).status_code == 201  # in the oldest's place
    gone = client.get(f"/api/replays/{ids[1]}/0/0")
    assert gone.status_code == 404  # the page shows why: a replay, not "a finished game", dropped
    assert "or a replay dropped to make room" in gone.json()["error"], gone.json()
    assert client.get(f"/api/replays/{ids[0]}/0/0").status_code == 200
    assert client.delete(f"/api/replays/{ids[2]}").status_code == 204
    assert client.get(f"/api/replays/{ids[2]}/0/0").status_code == 404
    assert client.delete(f"/api/replays/{ids[2]}").status_code == 404
    game = client.post("/api/games", json=BOTS).json()  # in the place freed
    assert client.delete(f"/api/replays/{game['id']}").status_code == 404  # a game, not a replay
    assert client.get(f"/api/games/{game['id']}").status_code == 200
    assert len(store) == store.max_games


def test_uploads_one_after_another_never_run_out(client, app):
    """The counts of records arriving and being checked go back down after each upload
    (without that, the server refused every upload after a handful for good)."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from sevenrocks_env.web.api import REPLAYS_ARRIVING, REPLAYS_AT_ONCE

    match = Match.new(4)
    for _ in range(12):
        apply_action(match, legal_actions(match)[0])
    record = records.game_record(match)
    for _ in range(max(REPLAYS_ARRIVING, REPLAYS_AT_ONCE) + 3):
        loaded = client.post("/api/replays", json=record)
        assert loaded.status_code == 201, loaded.text
        assert client.delete(f"/api/replays/{loaded.json()['id']}").status_code == 204


def test_replay_steps_through_a_record(client, app):
    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 2, "target": 60}).json()
    view = play_out(client, app, view)
    record = client.get(f"/api/games/{view['id']}/record").json()
    loaded = client.post("/api/replays", json=record)
    assert loaded.status_code == 201
    info = loaded.json()
    last = info["rounds"][-1]
    frame = client.get(f"/api/replays/{info['id']}/{last['round']}/{last['moves']}").json()
    assert frame["scores"] == record["scores"]
    first = client.get(f"/api/replays/{info['id']}/0/0").json()
    assert first["board"]["empty"] and all(len(h) == 7 for h in first["hands"])
    assert client.get(f"/api/replays/{info['id']}/0/999").status_code == 404
    assert client.get(f"/api/replays/{info['id']}/99/0").status_code == 404
    # one past the end, of the rounds and of a round's moves
    rounds = len(record["rounds"])
    assert client.get(f"/api/replays/{info['id']}/{rounds}/0").status_code == 404
    moves = len(record["rounds"][0]["moves"])
    assert client.get(f"/api/replays/{info['id']}/0/{moves}").status_code == 200
    assert client.get(f"/api/replays/{info['id']}/0/{moves + 1}").status_code == 404
    # every frame is the state the rules engine reaches: scores, hands, the round's end
    m = 0
    for match, move, r in records.replay(record):
        m = 0 if move is None else m + 1
        frame = client.get(f"/api/replays/{info['id']}/{r}/{m}").json()
        assert frame["scores"] == match.scores, (r, m)
        assert frame["hands"] == [[tile_name(t) for t in tiles_of(h)] for h in match.hands]
        ended = match.history[-1].result is not None
        assert frame["result"] == (match.history[-1].result if ended else None)
        assert frame["deductions"] == (match.history[-1].deductions if ended else None)
        log = match.history[-1]  # each move's points as played; a knock scores none (R6)
        assert [(mv["knock"], mv["points"]) for mv in frame["moves"]] == [
            (action == KNOCK, points) for _, action, _, points in log.moves[:m]]
    assert rounds >= 2 and m == len(record["rounds"][-1]["moves"])
    broken = dict(record, scores=[record["scores"][0] + 5, record["scores"][1]])
    response = client.post("/api/replays", json=broken)
    assert response.status_code == 422 and "scores" in response.json()["error"]
    assert client.post("/api/replays", json={"format": "x"}).status_code == 422


def test_a_replay_frame_gives_a_knock_no_points(client):
    """A knock (R6) is saved without points in a record: its frame says 0 points, as each move
    with points says its own, and the scores add them up."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(0, target=100)
    while KNOCK not in [action for _, action, _, _ in match.history[-1].moves]:
        apply_action(match, legal_actions(match)[0])
    log = match.history[-1]
    record = records.game_record(match)
    loaded = client.post("/api/replays", json=record).json()
    frame = client.get(f"/api/replays/{loaded['id']}/{len(match.history) - 1}/"
                       f"{len(log.moves)}").json()
    assert [(mv["knock"], mv["points"]) for mv in frame["moves"]] == [
        (action == KNOCK, points) for _, action, _, points in log.moves]
    assert frame["scores"] == match.scores and frame["moves"][-1] == {
        "seat": log.moves[-1][0], "knock": True, "points": 0, "text": frame["moves"][-1]["text"]}


@pytest.mark.parametrize("limit, ending", [
    (2, "no winner: cut off by its round limit (max_rounds 2)"),
    (None, "no winner: unfinished"),       # the same two rounds, no limit: a match in progress
    (0, "won by team 1"),                  # (0: no limit, played on to its winner)
])
def test_an_uploaded_record_says_how_its_match_ended(client, limit, ending):
    """The page said only "no winner" for a match cut off by its round limit and for one still
    going alike; the upload's answer now says which (the words of ``replay --check``)."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(3, target=100, max_rounds=None if limit == 0 else 2)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    record = records.game_record(match)
    if limit is None:
        record.pop("max_rounds")
    loaded = client.post("/api/replays", json=record)
    assert loaded.status_code == 201, loaded.text
    assert loaded.json()["ending"] == ending


def test_every_view_counts_the_match_s_moves_each_seat_s_tiles_and_who_is_to_move(client, app):
    """``ply`` counts the moves of the whole match (a round's count would start again at 0, and a
    move sent for an earlier round could be taken for one of this round); ``seats`` give every
    seat's number of tiles (not which) and the one seat to move, none once the match is over."""
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.views import game_view

    view = client.post("/api/games", json={"seat": 2, **BOTS, "seed": 4, "target": 150}).json()
    game = game_of(app, view)
    plies = [view["ply"]]
    while not game.match.over:
        apply_action(game.match, legal_actions(game.match)[0])
        view = game_view(game)
        plies.append(view["ply"])
        if not view["over"]:
            assert [s["tiles"] for s in view["seats"]] == [h.bit_count() for h in game.match.hands]
            assert [s["to_move"] for s in view["seats"]] == [s == game.match.turn for s in range(4)]
            assert view["turn"] == game.match.turn
            assert [(m["seat"], m["knock"], m["end_sum"], m["points"]) for m in view["moves"]] == [
                (seat, action == KNOCK, total, points)
                for seat, action, total, points in game.match.history[-1].moves]
            assert all(tile["playable"] == bool(tile["places"]) for tile in view["hand"])
            if view["last_round"] is not None:  # an ended round's board marks no tile as last
                assert not any(tile["last"] for tile in view["last_round"]["board"]["tiles"])
    assert len(game.match.history) >= 2  # the count went on across a new deal
    assert plies == list(range(len(plies)))
    assert view["over"] and not any(s["to_move"] for s in view["seats"])
    assert view["turn"] is None
    assert all(s["tiles"] is None for s in view["seats"])


def test_a_hand_tile_has_a_reason_only_on_the_human_s_turn(client, app):
    """While a bot is to move the human's tiles carry no reason: one worked out for the seat on
    turn said "you do not hold 3|5" of the human's own tile."""
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.views import game_view

    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 6}).json()
    game = game_of(app, view)
    waits = 0
    while len(game.match.history) == 1:
        view = game_view(game)
        if view["next"] == "bot" and not view["opening"]:
            waits += 1
            assert all(tile["reason"] == "" for tile in view["hand"]), view["hand"]
        apply_action(game.match, legal_actions(game.match)[0])
    assert waits > 5


def test_an_unfinished_round_s_last_frame_is_not_an_ended_round(client):
    """A record saved mid-round (``sevenrocks play`` quit): its last frame shows the moves so
    far, with no result and no deductions, as every frame before it."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(8, target=100)
    while len(match.history) == 1 or len(match.history[-1].moves) < 5 or \
            match.scores == list(match.history[0].scores):  # scored since the first round
        apply_action(match, legal_actions(match)[0])
    record = records.game_record(match)
    assert record["rounds"][-1]["result"] is None
    loaded = client.post("/api/replays", json=record)
    assert loaded.status_code == 201, loaded.text
    assert loaded.json()["scores"] == record["scores"] == match.scores
    last = loaded.json()["rounds"][-1]
    frame = client.get(f"/api/replays/{loaded.json()['id']}/{last['round']}/{last['moves']}")
    frame = frame.json()
    assert frame["result"] is None and frame["deductions"] is None
    assert frame["scores"] == match.scores


def test_a_rematch_keeps_each_bot_s_spec(client, app):
    """The same deals from the next seat, against the same partner and opponents."""
    setup = {"seat": 0, "partner": "random", "left": "greedy", "right": "heuristic", "seed": 11,
             "target": 30}
    view = play_out(client, app, client.post("/api/games", json=setup).json())
    again = client.post(f"/api/games/{view['id']}/rematch")
    assert again.status_code == 201
    new = game_of(app, again.json()).setup
    assert (new.seat, new.partner, new.left, new.right) == (1, "random", "greedy", "heuristic")
