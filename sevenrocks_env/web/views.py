"""What the page is sent: the game as the human's seat may see it, as plain JSON values.

Hidden information stays on the server (R1): the JSON holds the human's own hand, the tiles on
the table, how many tiles each other seat holds, and -- only for rounds that have ended -- the
remaining hands shown for the count (R7).  The deal seed is not sent while the match is on (it
would give away every hand).  ``tests/test_web_api_games.py`` checks this on every response.

The board is laid out by :mod:`sevenrocks_env.render.geometry`, the picture renderer's own
geometry, so the SVG on the page and the PNG pictures put every tile in the same place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..play import move_words
from ..render.geometry import Framing, board_geometry, frame_layout
from ..render.layout import build_layout, last_placement
from ..render.text import describe_move, round_result
from ..rules import Match, legal_actions, round_to_five, team_of
from ..tiles import KNOCK, NUM_SEATS, SLOT_NAMES, TILES, tile_name, tiles_of, pips_of
from .moves import tile_reason

if TYPE_CHECKING:  # games keeps each game's view: it imports this module
    from .games import Game

#: The SVG board's coordinate boxes (the page scales its box to the screen): ``wide`` by
#: default, ``tall`` for a narrow portrait screen (the page sends ``Sevenrocks-Board: tall``),
#: where a long line turns into its height instead of shrinking into a thin strip.
BOARD_BOXES = {"wide": (0, 0, 1000, 560), "tall": (0, 0, 560, 1000)}
BOARD_BOX = BOARD_BOXES["wide"]
PLACES = ("west end", "east end", "branch A (north)", "branch B (south)")


def board_view(moves, last_seat_highlight: bool = True, box=BOARD_BOX,
               framing: Framing | None = None) -> dict:
    """Tiles and end markers of one round's layout, in SVG coordinates of ``box`` (R3-R5);
    ``framing``: where the tiles go (a replay's, of its round's final layout: ``"framed"`` in
    the answer, and the page keeps the whole box in view), else this layout's own."""
    layout = build_layout(moves)
    geometry = board_geometry(layout, box, framing)
    last = (last_placement(moves) or (None,))[0]
    tiles = [{"box": list(t.box), "vertical": t.vertical, "halves": [t.first_half, t.second_half],
              "spinner": t.spinner, "double": t.placed.crosswise, "seat": t.placed.seat,
              "last": last_seat_highlight and t.placed.move == last}
             for t in geometry.tiles]
    markers = [{"slot": m.slot, "place": PLACES[m.slot], "center": list(m.center),
                "radius": m.radius, "counted": m.counted, "number": m.number, "value": m.value}
               for m in geometry.markers]
    counted = layout.counted_ends()
    return {"width": box[2], "height": box[3], "tiles": tiles, "markers": markers,
            "end_sum": layout.end_sum(), "counted": [counted[s] for s in sorted(counted)],
            "empty": layout.empty, "framed": framing is not None}


def move_entry(log, index: int) -> dict:
    """Move ``index`` of a round: who, a knock or not, its points and end sum, and its words."""
    seat, action, total, points = log.moves[index]
    return {"seat": seat, "knock": action == KNOCK, "points": points, "end_sum": total,
            "text": describe_move(log, index)}


def move_list(log) -> list[dict]:
    """Every move of a round, named in the rule book's words."""
    return [move_entry(log, index) for index in range(len(log.moves))]


def round_summary(log, index: int, with_board: bool, box=BOARD_BOX) -> dict:
    """A finished round: how it ended, each remaining hand with its rounding, deductions, scores."""
    remaining = log.remaining_hands()
    hands = []
    if log.result != "won":  # a won match is not counted: no count, no deductions (R8)
        for seat in range(NUM_SEATS):
            pips = pips_of(remaining[seat])
            hands.append({"seat": seat, "team": team_of(seat),
                          "tiles": [tile_name(t) for t in tiles_of(remaining[seat])],
                          "pips": pips, "rounded": round_to_five(pips),
                          "deduction": log.deductions[seat]})
    summary = {"round": index, "result": log.result, "finisher": log.finisher,
               "text": round_result(log), "hands": hands,
               "tiles_left": [len(tiles_of(hand)) for hand in remaining],
               "deductions": list(log.deductions),
               "team_deductions": [log.deductions[0] + log.deductions[2],
                                   log.deductions[1] + log.deductions[3]],
               "scores": list(log.scores),
               # the move that ended it (domino, block, or the winning tile), as the view's
               # moves give it: the page adds it to the round's move list under the summary
               "last_move": move_entry(log, len(log.moves) - 1) if log.moves else None}
    if with_board:
        summary["board"] = board_view(log, last_seat_highlight=False, box=box)
    return summary


def hand_view(match: Match, seat: int) -> list[dict]:
    """The human's tiles; on their turn each says where it may go, or why it may not (R3, R4)."""
    my_turn = match.turn == seat and not match.over
    legal = legal_actions(match) if my_turn else []
    out = []
    for tile in tiles_of(match.hands[seat]):
        places = [{"slot": a & 3, "action": a, "place": "open" if match.opening else PLACES[a & 3],
                   "words": move_words(match, a)} for a in legal if a != KNOCK and a >> 2 == tile]
        out.append({"tile": tile, "name": tile_name(tile), "halves": list(TILES[tile]),
                    "playable": bool(places), "places": places,
                    "reason": tile_reason(match, tile) if my_turn and not places else ""})
    return out


def game_view(game: Game, box=BOARD_BOX) -> dict:
    """The whole page state for the human at ``game.seat``, its boards laid out in ``box``
    (one of :data:`BOARD_BOXES`)."""
    match, seat = game.match, game.seat
    history = match.history
    current = history[-1]
    live = current.result is None
    finished = [i for i, log in enumerate(history) if log.result is not None]
    my_turn = game.human_to_move()
    legal = legal_actions(match) if my_turn else []
    seats = [{"seat": s, "team": team_of(s), "label": game.labels[s],
              "tiles": match.hands[s].bit_count() if live else None,
              "to_move": live and match.turn == s} for s in range(NUM_SEATS)]
    view = {
        "id": game.id, "ply": game.ply, "seat": seat, "team": team_of(seat),
        "target": match.target, "scores": list(match.scores), "round": len(history) - 1,
        "turn": match.turn if live else None, "over": match.over, "winner": match.winner,
        "next": "over" if match.over else "you" if my_turn else "bot",
        "seats": seats,
        "board": board_view(current, box=box) if live else None,
        "opening": live and match.opening,
        "hand": hand_view(match, seat) if live else [],
        "knock": {"required": legal == [KNOCK], "action": KNOCK,
                  "words": move_words(match, KNOCK) if legal == [KNOCK] else ""},
        "moves": move_list(current) if live or match.over else [],  # the winning round's too
        # only the latest ended round: the page summarises each round once, as it ends, and a
        # long match's whole list in every view would make the traffic grow with its square
        # (every ended round is in the record, GET /api/games/{id}/record)
        "rounds_ended": len(finished),
        "last_round": round_summary(history[finished[-1]], finished[-1], with_board=True,
                                    box=box) if finished else None,
        # as text: a JSON number past 2^53 is rounded by the browser, and another seed deals
        # other hands
        "seed": str(game.setup.seed) if match.over else None,
    }
    return view


def replay_frame(record: dict, round_index: int, move_count: int, box=BOARD_BOX) -> dict:
    """One step of a validated record: board, every hand (a record is public), scores, moves."""
    rnd = record["rounds"][round_index]
    moves = rnd["moves"][:move_count]
    scores = list(record["rounds"][round_index - 1]["scores"]) if round_index else [0, 0]
    for move in moves:
        if not move.get("pass"):
            scores[move["seat"] & 1] += move["points"]
    ended = move_count == len(rnd["moves"]) and rnd["result"] is not None
    if ended:
        scores = list(rnd["scores"])
    hands = []
    for seat in range(NUM_SEATS):
        held = [t for t in rnd["hands"][seat]
                if not any(m["seat"] == seat and m.get("tile") == t for m in moves)]
        hands.append(held)
    return {"round": round_index, "move": move_count, "moves_in_round": len(rnd["moves"]),
            "opener": rnd["opener"],
            # framed by the round's final layout, as the picture replays are: no tile moves
            "board": board_view(moves, box=box,
                                framing=frame_layout(build_layout(rnd["moves"]), box)),
            "hands": hands, "scores": scores,
            "target": record["target"],
            "moves": [{"seat": m["seat"], "knock": bool(m.get("pass")),
                       "points": m.get("points", 0), "text": describe_move(moves, i)}
                      for i, m in enumerate(moves)],
            "result": (rnd["result"] if ended else None),
            "deductions": rnd["deductions"] if ended else None,
            "slot_names": list(SLOT_NAMES)}


__all__ = ["BOARD_BOX", "BOARD_BOXES", "board_view", "game_view", "hand_view", "move_list",
           "replay_frame", "round_summary"]
