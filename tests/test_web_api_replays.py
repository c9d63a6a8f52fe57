"""The web API's records and replays (sevenrocks_env.web) through Starlette's test client: a
record downloaded mid-match holds the ended rounds only, uploads load and say how their match
ended, every replay frame is the state the rules engine reaches, and stored replays are dropped
by the page or make room when the server is full.  Whole matches: ``test_web_api_games.py``."""

from __future__ import annotations

import json

import pytest
from web_client import BOTS, game_of, play_out

from sevenrocks_env import record as records
from sevenrocks_env.tiles import KNOCK, tile_name, tiles_of


def _play_while(client, view, going_on):
    """Step the bots and play the human's first legal move while ``going_on()``."""
    while going_on():
        if view["next"] == "bot":
            view = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]}).json()
        else:
            places = [p for t in view["hand"] for p in t["places"]]
            action = places[0]["action"] if places else KNOCK
            view = client.post(f"/api/games/{view['id']}/move",
                               json={"ply": view["ply"], "action": action}).json()
    return view


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
    view = _play_while(client, view, lambda: len(match.history) < 2
                       or match.scores == match.history[-2].scores)
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


def test_a_match_too_long_for_a_record_is_a_409_saying_so(client, app, monkeypatch):
    """A match without a round limit may outlast the rounds a record holds: its download was
    a record validate refuses (and then the server's 500), not a refusal in words.  Mid-match
    only the ended rounds count (the round in progress is not in the download)."""
    import sevenrocks_env.record_writer as record_writer
    monkeypatch.setattr(record_writer, "MAX_ROUNDS", 1)
    view = client.post("/api/games", json={"seat": 2, **BOTS, "seed": 5}).json()
    match = game_of(app, view).match
    view = _play_while(client, view, lambda: len(match.history) < 2)  # 1 ended, 1 in play
    response = client.get(f"/api/games/{view['id']}/record")
    assert response.status_code == 200 and len(response.json()["rounds"]) == 1
    view = _play_while(client, view, lambda: len(match.history) < 3)  # 2 ended
    response = client.get(f"/api/games/{view['id']}/record")
    assert response.status_code == 409
    assert response.json()["error"] == (
        "no record can be downloaded: this match has 2 rounds, more than the 1 a record holds "
        "(a match without a round limit played on that long)")
