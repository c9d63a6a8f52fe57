"""``Sevenrocks-Board: tall``: the page on a narrow portrait screen asks for a tall board box,
and the server lays the board out in it (a long line turns into the height); anything else is
a 400 that changes nothing."""

from __future__ import annotations

import pytest
from web_client import BOTS, game_of, one_round_record

from sevenrocks_env.render.geometry import board_geometry
from sevenrocks_env.render.layout import build_layout
from sevenrocks_env.web.views import BOARD_BOXES, board_view


TALL = {"sevenrocks-board": "tall"}


def _played(client, headers: dict):
    """A new game (seed 3) with bot moves until the board holds a few tiles."""
    view = client.post("/api/games", json={**BOTS, "seat": 0, "seed": 3},
                       headers=headers).json()
    while len((view["board"] or {"tiles": []})["tiles"]) < 4:
        if view["next"] == "you":
            action = next(p["action"] for t in view["hand"] for p in t["places"])
            view = client.post(f"/api/games/{view['id']}/move", headers=headers,
                               json={"ply": view["ply"], "action": action}).json()
        else:
            view = client.post(f"/api/games/{view['id']}/step", headers=headers,
                               json={"ply": view["ply"]}).json()
    return view


def test_a_tall_board_is_laid_out_in_the_tall_box(app, client):
    view = _played(client, TALL)
    game = game_of(app, view)
    moves = game.match.history[-1].moves
    assert (view["board"]["width"], view["board"]["height"]) == (560, 1000)
    assert view["board"] == board_view(moves, box=BOARD_BOXES["tall"])
    tall = board_geometry(build_layout(moves), BOARD_BOXES["tall"])
    assert [t["box"] for t in view["board"]["tiles"]] == [list(t.box) for t in tall.tiles]
    # the same game asked for without it (or with wide): the wide box, as before
    for headers in ({}, {"sevenrocks-board": "wide"}):
        wide = client.get(f"/api/games/{view['id']}", headers=headers).json()
        assert (wide["board"]["width"], wide["board"]["height"]) == (1000, 560)
        assert wide["board"] == board_view(moves)
        assert {k: v for k, v in wide.items() if k != "board"} == \
            {k: v for k, v in view.items() if k != "board"}
    assert client.get(f"/api/games/{view['id']}", headers=TALL).json() == view


def test_an_ended_round_s_board_is_tall_too(app, client):
    view = client.post("/api/games", headers=TALL,
                       json={**BOTS, "seat": 0, "seed": 3, "target": 10}).json()
    while not view["rounds_ended"]:
        if view["next"] == "you":
            action = (view["knock"]["action"] if view["knock"]["required"] else
                      next(p["action"] for t in view["hand"] for p in t["places"]))
            view = client.post(f"/api/games/{view['id']}/move", headers=TALL,
                               json={"ply": view["ply"], "action": action}).json()
        else:
            view = client.post(f"/api/games/{view['id']}/step", headers=TALL,
                               json={"ply": view["ply"]}).json()
    ended = game_of(app, view).match.history[0].moves
    assert view["last_round"]["board"] == board_view(ended, last_seat_highlight=False,
                                                     box=BOARD_BOXES["tall"])


def test_a_replay_frame_comes_in_the_tall_box(client):
    loaded = client.post("/api/replays", json=one_round_record()).json()
    frame = client.get(f"/api/replays/{loaded['id']}/0/5", headers=TALL).json()
    assert (frame["board"]["width"], frame["board"]["height"]) == (560, 1000)
    wide = client.get(f"/api/replays/{loaded['id']}/0/5").json()
    assert (wide["board"]["width"], wide["board"]["height"]) == (1000, 560)


@pytest.mark.parametrize("headers", [[("sevenrocks-board", "TALL")], [("sevenrocks-board", "")],
                                     [("sevenrocks-board", "square")],
                                     [("sevenrocks-board", "tall, wide")],
                                     [("sevenrocks-board", "tall"), ("sevenrocks-board", "tall")]])
def test_another_board_shape_is_refused_before_anything_is_done(app, client, headers):
    view = client.post("/api/games", json={**BOTS, "seat": 1, "seed": 5}).json()
    game = game_of(app, view)
    before = game.ply
    routes = [("POST", "/api/games", {**BOTS}), ("GET", f"/api/games/{view['id']}", None),
              ("POST", f"/api/games/{view['id']}/step", {"ply": view["ply"]})]
    for method, path, body in routes:
        answer = client.request(method, path, headers=headers, json=body)
        assert answer.status_code == 400, (path, answer.text)
        assert "Sevenrocks-Board header must be 'wide' or 'tall'" in answer.json()["error"]
    assert game.ply == before  # the step was not played
    assert len(app.state.store._games) == 1  # nor a game made
    loaded = client.post("/api/replays", json=one_round_record()).json()
    assert client.get(f"/api/replays/{loaded['id']}/0/1", headers=headers).status_code == 400
