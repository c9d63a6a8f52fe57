"""The web API (sevenrocks_env.web) through Starlette's test client: whole matches against bots,
hidden tiles never sent (R1), what every view counts, the bots' seats and seeds, rematches.
Records and replays: ``test_web_api_replays.py``; bad input: ``test_hostile_web_moves.py``,
``test_hostile_web_setups.py``, ``test_hostile_web_store.py``."""

from __future__ import annotations

import json

import pytest
from web_client import BOTS, game_of, play_out

from sevenrocks_env import record as records
from sevenrocks_env.render.text import describe_move
from sevenrocks_env.scoring import round_to_five
from sevenrocks_env.tiles import KNOCK


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
        assert summary["last_move"]["text"] == describe_move(rnd["moves"], len(rnd["moves"]) - 1)
        assert summary["last_move"]["seat"] == rnd["moves"][-1]["seat"]
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
    # (docs/web.md says which fields are empty once the match is over, and where they went)
    assert view["turn"] is None and view["opening"] is False
    assert [seat["tiles"] for seat in view["seats"]] == [None] * 4
    assert view["last_round"]["board"]["tiles"] and len(view["last_round"]["tiles_left"]) == 4
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


def test_a_rematch_keeps_each_bot_s_spec(client, app):
    """The same deals from the next seat, against the same partner and opponents."""
    setup = {"seat": 0, "partner": "random", "left": "greedy", "right": "heuristic", "seed": 11,
             "target": 30}
    view = play_out(client, app, client.post("/api/games", json=setup).json())
    again = client.post(f"/api/games/{view['id']}/rematch")
    assert again.status_code == 201
    new = game_of(app, again.json()).setup
    assert (new.seat, new.partner, new.left, new.right) == (1, "random", "greedy", "heuristic")
