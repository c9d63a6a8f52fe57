"""Tests from a mutation audit of the web server (sevenrocks_env.web), continued from
test_web_mutants.py: the API's limits, statuses and locks, what a view or a replay frame holds,
and why a move is refused."""

from __future__ import annotations

from web_client import BOTS, game_of

from sevenrocks_env.web.games import GameStore


# --- api.py: limits, statuses, locks ----------------------------------------------------------

def test_a_move_body_of_64_kib_is_read_and_one_byte_more_is_413(client):
    """docs/web.md: bodies over 64 kB are refused (413)."""
    body = b"{}" + b" " * (64 * 1024 - 2)
    assert client.post("/api/games", content=body).status_code == 201
    refused = client.post("/api/games", content=body + b" ")
    assert refused.status_code == 413
    assert refused.json()["error"] == "request body too large: at most 65536 bytes"


def test_a_record_of_4_mib_is_read_and_one_byte_more_is_413(client):
    """docs/web.md: a record to replay over 4 MB is refused (413) -- up to it, it is parsed."""
    body = b" " * (4 * 2**20)
    read = client.post("/api/replays", content=body)
    assert read.status_code in (400, 422), read.text  # read, then found not to be a record
    assert client.post("/api/replays", content=body + b" ").status_code == 413


def test_a_body_has_30_seconds_to_arrive(client, monkeypatch):
    import asyncio

    from sevenrocks_env.web import api

    waits = []
    real = asyncio.wait_for

    async def wait_for(awaitable, timeout):
        waits.append(timeout)
        return await real(awaitable, timeout)
    monkeypatch.setattr(api.asyncio, "wait_for", wait_for)
    assert client.post("/api/games", json=BOTS).status_code == 201
    assert waits == [30]


def test_replay_step_numbers_have_at_most_6_ascii_digits(client):
    from web_client import one_round_record

    replay = client.post("/api/replays", json=one_round_record()).json()["id"]
    assert client.get(f"/api/replays/{replay}/0/000000").status_code == 200
    for move in ("0000000", "\u00b2", "-1"):
        refused = client.get(f"/api/replays/{replay}/0/{move}")
        assert refused.status_code == 404, move
        assert "must be a number of at most 6 digits" in refused.json()["error"]


def test_a_move_or_step_without_ply_is_a_422_naming_it(client):
    view = client.post("/api/games", json={"seat": 1, **BOTS, "seed": 3}).json()
    for path, body in (("move", {"action": 0}), ("step", {}), ("step", None)):
        refused = client.post(f"/api/games/{view['id']}/{path}", json=body)
        assert refused.status_code == 422, (path, body)
        assert refused.json()["error"] == "missing field 'ply'"


def test_a_game_whose_lock_is_held_answers_409_with_retry_after(client, app):
    from sevenrocks_env.rules import legal_actions

    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 3}).json()
    game = game_of(app, view)
    while game.match.history[0].result is None:  # a round ends: its record may be downloaded
        if game.human_to_move():
            game.play_human(legal_actions(game.match)[0], game.ply)
        else:
            game.play_bot(game.ply)
    ply = game.ply
    with game.lock:
        answers = [client.post(f"/api/games/{view['id']}/move", json={"ply": ply, "action": 0}),
                   client.post(f"/api/games/{view['id']}/step", json={"ply": ply}),
                   client.get(f"/api/games/{view['id']}/record")]
    for answer in answers:
        assert answer.status_code == 409 and answer.headers["retry-after"] == "1", answer.text
        assert "another move of this game is being computed" in answer.json()["error"]
    assert game.ply == ply
    download = client.get(f"/api/games/{view['id']}/record")
    assert download.headers["content-disposition"] == \
        f'attachment; filename="sevenrocks-{view["id"][:8]}.json"'


def test_a_body_that_is_not_json_is_named_once(client):
    refused = client.post("/api/games", content=b"{not json")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error.startswith("the request body is not valid JSON: ")
    assert "is not JSON" not in error and len(error) <= 300
    # an uploaded replay is a file the player chose: named as one, not as a request body
    refused = client.post("/api/replays", content=b"\x89PNG not a record")
    assert refused.status_code == 400
    assert refused.json()["error"].startswith(
        "the uploaded file is not valid JSON: "), refused.text


# --- views.py: what the page is sent --------------------------------------------------------

def first_round_ended(seed: int, target: int = 250):
    """A match played with the first legal move until its first round has ended."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(seed, target=target)
    while match.history[0].result is None:
        apply_action(match, legal_actions(match)[0])
    return match


def test_the_board_passes_on_the_picture_renderer_s_geometry():
    """Every tile and end marker as :mod:`render.geometry` places it (the SVG and the PNG
    pictures agree), the counted ends in slot order and the end sum (R5)."""
    from sevenrocks_env.render.geometry import board_geometry
    from sevenrocks_env.render.layout import build_layout
    from sevenrocks_env.web.views import BOARD_BOX, PLACES, board_view

    log = first_round_ended(1).history[0]
    for count in range(1, len(log.moves) + 1):
        moves = log.moves[:count]
        layout = build_layout(moves)
        geometry = board_geometry(layout, BOARD_BOX)
        board = board_view(moves)
        assert [(t["box"], t["vertical"], t["halves"], t["spinner"], t["double"], t["seat"])
                for t in board["tiles"]] == \
            [(list(t.box), t.vertical, [t.first_half, t.second_half], t.spinner,
              t.placed.crosswise, t.placed.seat) for t in geometry.tiles]
        assert [(m["slot"], m["place"], m["center"], m["counted"], m["value"])
                for m in board["markers"]] == \
            [(m.slot, PLACES[m.slot], list(m.center), m.counted, m.value)
             for m in geometry.markers]
        counted = layout.counted_ends()
        assert board["counted"] == [counted[s] for s in sorted(counted)]
        assert board["end_sum"] == layout.end_sum() == sum(board["counted"])
    assert {t["vertical"] for t in board["tiles"]} == {True, False}
    assert any(t["halves"][0] != t["halves"][1] for t in board["tiles"])
    assert any(t["double"] != t["spinner"] for t in board["tiles"])
    assert len({m["slot"] for m in board["markers"]}) > 1


def test_an_ended_round_s_summary_counts_each_hand():
    """R7: each remaining hand's pips rounded to five, the deductions by team (seats 0 and 2,
    1 and 3), the move that ended it, and its board without a last tile outlined."""
    from sevenrocks_env.render.text import describe_move
    from sevenrocks_env.rules import round_to_five
    from sevenrocks_env.web.views import round_summary

    log = first_round_ended(1).history[0]
    d = log.deductions
    summary = round_summary(log, 0, with_board=True)
    assert summary["team_deductions"] == [d[0] + d[2], d[1] + d[3]] != [d[0] + d[1], d[2] + d[3]]
    assert [h["rounded"] for h in summary["hands"]] == \
        [round_to_five(h["pips"]) for h in summary["hands"]]
    assert any(h["rounded"] != h["pips"] for h in summary["hands"])
    assert summary["last_move"]["text"] == describe_move(log, len(log.moves) - 1) != \
        describe_move(log, 0)
    assert summary["board"]["tiles"] and not any(t["last"] for t in summary["board"]["tiles"])
    assert "board" not in round_summary(log, 0, with_board=False)


def test_a_won_round_lists_no_hands():
    """R8: the round that wins the match is not counted: no hands, no deductions."""
    from sevenrocks_env.web.views import round_summary

    log = first_round_ended(5, target=10).history[0]
    assert log.result == "won"
    assert round_summary(log, 0, with_board=False)["hands"] == []


def test_the_opening_tile_s_place_is_open_and_each_place_names_its_slot():
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from sevenrocks_env.tiles import KNOCK
    from sevenrocks_env.web.views import PLACES, hand_view

    match = Match.new(2)
    opening = hand_view(match, match.turn)
    assert {p["place"] for t in opening for p in t["places"]} == {"open"}
    while not any(a != KNOCK and a & 3 >= 2 for a in legal_actions(match)):  # a branch
        apply_action(match, legal_actions(match)[0])
    places = [p for t in hand_view(match, match.turn) for p in t["places"]]
    assert all(p["slot"] == p["action"] & 3 and p["place"] == PLACES[p["action"] & 3]
               for p in places)
    assert {p["slot"] for p in places} & {2, 3}


def test_after_the_match_no_tile_of_the_hand_has_a_reason(client, app):
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.views import hand_view

    view = client.post("/api/games", json={"seat": 0, **BOTS, "seed": 1, "target": 10}).json()
    match = game_of(app, view).match
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    match.turn = 0
    assert all(t["reason"] == "" and not t["places"] for t in hand_view(match, 0))


# --- moves.py: why a move is refused ----------------------------------------------------------

def test_an_action_that_is_not_an_int_in_range_is_named():
    from sevenrocks_env.rules import Match
    from sevenrocks_env.web.moves import why_illegal

    match = Match.new(1)
    for action in (True, 113, -1, 1.0):
        assert why_illegal(match, action) == \
            f"an action is an int from 0 to 112, got {action!r}", action


def test_any_action_after_the_match_is_refused_as_the_match_being_over():
    from sevenrocks_env.web.moves import why_illegal

    match = first_round_ended(5, target=10)
    assert match.over
    held = next(t for t in range(28) if (match.hands[match.turn] >> t) & 1)
    assert why_illegal(match, 4 * held + 1) == why_illegal(match, 112) == "the match is over"


def test_a_tile_that_fits_only_the_south_branch_has_no_reason():
    """R4: a tile whose one place is branch B (slot 3) may be played: no reason against it."""
    from sevenrocks_env.rules import Match, apply_action, is_legal, legal_actions
    from sevenrocks_env.web.moves import tile_reason

    match = Match.new(0)
    for _ in range(4):
        apply_action(match, legal_actions(match)[0])
    assert [a & 3 for a in range(24, 28) if is_legal(match, a)] == [3]  # tile 6: slot 3 only
    assert tile_reason(match, 6) == ""


def test_a_replay_frame_says_how_many_moves_its_round_has_and_names_the_slots(client):
    from web_client import one_round_record

    record = one_round_record()
    replay = client.post("/api/replays", json=record).json()
    moves = len(record["rounds"][0]["moves"])
    assert replay["rounds"][0]["moves"] == moves
    first = client.get(f"/api/replays/{replay['id']}/0/0").json()
    assert first["moves_in_round"] == moves > 0 and first["moves"] == []
    assert first["slot_names"] == ["west", "east", "north", "south"]
    assert (first["result"], first["deductions"], first["scores"]) == (None, None, [0, 0])


def test_an_extra_agent_given_twice_is_listed_once():
    from sevenrocks_env.web.games import agent_menu

    menu = agent_menu(("search:samples=4", "search:samples=4", "random"))
    assert [spec for spec, _ in menu].count("search:samples=4") == 1
    assert menu[-1] == ("search:samples=4", "search:samples=4")


def test_a_bot_seat_is_labelled_as_the_menu_labels_its_spec():
    from sevenrocks_env.web.games import Setup

    store = GameStore()
    store.menu = [("greedy", "the greedy bot"), ("random", "a random bot")]
    game = store.new_game(Setup(1, "greedy", "random", "greedy", 250, 7))
    # seat 1 + 1 is the left opponent, + 3 the right, + 2 the partner
    assert [s["label"] for s in game.view["seats"]] == \
        ["the greedy bot", "you", "a random bot", "the greedy bot"]


def test_a_ninth_upload_arriving_at_once_is_a_429_retrying_after_the_body_time(app, monkeypatch):
    """docs/web.md: a record uploaded while eight are arriving is a 429, ``Retry-After`` the
    seconds a body may take to arrive (rounded up)."""
    import asyncio

    from test_hostile_web_uploads import _post_raw

    from sevenrocks_env.web import api

    monkeypatch.setattr(api, "BODY_SECONDS", 1.5)

    async def scenario():
        stalled = [asyncio.create_task(_post_raw(app, "/api/replays", [b"{"], "stalls", 100))
                   for _ in range(8)]
        await asyncio.sleep(0.1)
        ninth = await _post_raw(app, "/api/replays", [b"{}"], "ends", 2)
        return ninth, await asyncio.gather(*stalled)

    ninth, stalled = asyncio.run(scenario())
    assert ninth["status"] == 429, ninth
    assert ninth["body"].startswith(b'{"error":"8 uploaded records are arriving already')
    assert ninth["headers"][b"retry-after"] == b"2"
    assert [answer["status"] for answer in stalled] == [408] * 8


def test_a_third_upload_checked_at_once_is_a_429(client, monkeypatch):
    """docs/web.md: a record uploaded while two others are being checked is a 429."""
    import json
    import threading

    from web_client import one_round_record

    from sevenrocks_env import record as records

    release, checking = threading.Event(), []
    validate = records.validate

    def slow_validate(record):
        checking.append(1)
        release.wait(10)
        return validate(record)
    monkeypatch.setattr(records, "validate", slow_validate)
    body = json.dumps(one_round_record())
    answers = []
    uploads = [threading.Thread(target=lambda: answers.append(
        client.post("/api/replays", content=body).status_code)) for _ in range(2)]
    for upload in uploads:
        upload.start()
    for _ in range(1000):  # (at most 10 s)
        if len(checking) == 2:
            break
        release.wait(0.01)
    third = []
    late = threading.Thread(target=lambda: third.append(client.post("/api/replays",
                                                                    content=body)))
    late.start()
    late.join(2)
    release.set()
    for upload in uploads + [late]:
        upload.join(10)
    assert third[0].status_code == 429 and third[0].headers["retry-after"] == "1"
    assert "already checking 2 uploaded records" in third[0].json()["error"]
    assert answers == [201, 201]


def test_a_view_numbers_the_round_in_progress_from_0():
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.web.games import Setup
    from sevenrocks_env.web.views import game_view

    game = GameStore().new_game(Setup(0, "greedy", "greedy", "greedy", 250, 1))
    assert (game.view["round"], game.view["rounds_ended"]) == (0, 0)
    while game.match.history[0].result is None:
        apply_action(game.match, legal_actions(game.match)[0])
    view = game_view(game)
    assert (view["round"], view["rounds_ended"], view["last_round"]["round"]) == (1, 1, 0)


def test_a_required_knock_is_described_in_words():
    from sevenrocks_env.play import move_words
    from sevenrocks_env.rules import apply_action, legal_actions
    from sevenrocks_env.tiles import KNOCK
    from sevenrocks_env.web.games import Setup
    from sevenrocks_env.web.views import game_view

    game = GameStore().new_game(Setup(0, "greedy", "greedy", "greedy", 250, 0))
    match = game.match
    while not (game.human_to_move() and legal_actions(match) == [KNOCK]):
        apply_action(match, legal_actions(match)[0])
    knock = game_view(game)["knock"]
    assert knock["required"] and knock["words"] == move_words(match, KNOCK) != ""
