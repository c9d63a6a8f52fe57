"""Text views of a match: the board for ``render_mode="ansi"``/``"human"`` and one-line move descriptions.

Notation (printed as a legend under the board):

* ``2|1``  an ordinary tile, halves in reading direction (west -> east in the line, spinner
  -> outward in a branch);
* ``[4:4]`` a double, laid crosswise (R3);
* ``<1:1>`` the spinner (R4), the only double with branches;
* ``(3)`` an open end that is counted (R5); ``(1?)`` a legal continuation point that counts 0
  (an unopened branch).
"""

from __future__ import annotations

from ..checks import is_int, shown
from ..rules import WON, Match, apply_action, checked_match, team_of
from ..scoring import end_sum, placement_points
from ..tiles import (
    EAST, KNOCK, NORTH, NUM_SEATS, SLOT_NAMES, SOUTH, TILE_IS_DOUBLE, WEST, decode_action, tile_name,
    tiles_of,
)
from .layout import BoardDrawing, PlacedTile, build_layout, moves_of

BRANCH_NAMES = {NORTH: "branch A (north)", SOUTH: "branch B (south)"}
LEGEND = ("legend: 2|1 tile  [4:4] double (crosswise)  <1:1> spinner  (3) open number, counted  "
          "(1?) open number, counts 0")


def _tile_text(placed: PlacedTile, spinner: bool) -> str:
    a, b = placed.halves
    if spinner:
        return f"<{a}:{b}>"
    if placed.crosswise:
        return f"[{a}:{b}]"
    return f"{a}|{b}"


def _end_text(layout: BoardDrawing, slot: int) -> str:
    points = layout.continuation_points()
    if slot not in points:
        return ""
    if slot in layout.counted_ends():  # a lone opening spinner counts once, at its west side
        return f"({points[slot]})"
    return f"({points[slot]}?)"


def layout_lines(layout: BoardDrawing) -> list[str]:
    """The line west -> east and the spinner's branches, one text row each."""
    if layout.empty:
        return ["line: (empty: the opener may play any tile)"]
    spinner_at = layout.spinner_index
    row = [_end_text(layout, WEST)]
    row += [_tile_text(t, i == spinner_at) for i, t in enumerate(layout.line)]
    row.append(_end_text(layout, EAST))
    lines = ["line (west -> east):  W " + " ".join(row) + " E"]
    if spinner_at is None:
        lines.append("spinner: none yet (the first double played becomes the spinner)")
        return lines
    spinner = layout.spinner
    if not layout.spinner_internal:
        lines.append(f"spinner: <{spinner}:{spinner}> at an outer end (counts both halves); "
                     f"its branches open once both straight sides are filled")
        return lines
    for slot in (NORTH, SOUTH):
        arm = layout.branch(slot)
        tiles = " ".join(_tile_text(t, False) for t in arm)
        state = tiles + " " + _end_text(layout, slot) if arm else _end_text(layout, slot) + " not started"
        lines.append(f"{BRANCH_NAMES[slot]:>16} from <{spinner}:{spinner}>: {state}")
    return lines


def counted_text(layout: BoardDrawing) -> str:
    """``"counted west 2 + east 3 = 5 -> 5 points"`` for the current layout (R5)."""
    counted = layout.counted_ends()
    if not counted:
        return "counted: nothing on the table"
    total = sum(counted.values())
    terms = " + ".join(f"{SLOT_NAMES[slot]} {value}" for slot, value in counted.items())
    points = placement_points(total)
    return f"counted ends: {terms} = end sum {total} -> {points} points"


def shown_round(match: Match):
    """The log of the round a board shows: the match's latest (:class:`rules.Round`), or
    ``None`` when it keeps no history (before any deal, or ``Match.clone()``/``from_state``)."""
    return match.history[-1] if match.history else None


#: What a board says in place of the layout of a match that keeps no history but has tiles down
#: (``Match.from_state``, ``clone()``): the layout is drawn from the round's moves.
LAYOUT_NOT_KNOWN = "layout not known: this match keeps no history of the round's moves"


def layout_known(match: Match) -> bool:
    """Whether a board can draw ``match``'s layout: it keeps the round's moves, or none is down."""
    return bool(match.history) or not match.placements


def round_number(match: Match) -> int:
    """The 1-based number of the round a board shows.  A round that ended other than by a win
    (R7) has moved ``round_index`` on already: to the next deal, or past ``max_rounds``."""
    log = shown_round(match)
    ended_and_counted_on = log is not None and log.result not in (None, WON)
    return match.round_index + (0 if ended_and_counted_on else 1)


def just_ended_round(match: Match) -> Match | None:
    """The round that has just ended, as it stood at its end (every hand shown, deductions and
    scores, R7), while the next round is dealt and no tile of it is down; ``None`` otherwise.
    A match deals the next round at once, so a board drawn after the round's last move would
    show the fresh deal and never how the round ended.  Replayed from the round's log."""
    history = match.history
    if not history or len(history) < 2 or history[-1].moves or history[-2].result is None:
        return None
    log = history[-2]
    start = list(log.scores)  # the scores the round began with (a match may start at any)
    for seat, _, _, points in log.moves:
        start[team_of(seat)] -= points
    for seat in range(NUM_SEATS):
        start[team_of(seat)] += log.deductions[seat]
    # seedless, the replay waits at the round's end
    view = Match.from_deal(log.hands, log.opener, target=match.target, scores=start,
                           round_index=match.round_index - 1)
    for _, action, _, _ in log.moves:
        apply_action(view, action)
    return view


def checked_observer(observer) -> int | None:
    """``observer`` as a seat 0-3 or ``None``; ``ValueError`` naming anything else (a board
    that quietly showed no hand for seat 4 or ``"1"`` hid a caller's mistake)."""
    if observer is not None and not is_int(observer, 0, NUM_SEATS - 1):
        raise ValueError(f"observer must be a seat 0..3 or None, got {shown(observer)}")
    return None if observer is None else int(observer)


def render_text(match: Match, observer: int | None = None) -> str:
    """Text board: scores, layout, counted ends and end sum, seat to move, hand sizes, hands.

    ``observer`` shows only that seat's hand; ``None`` (spectator) shows every hand.
    ``ValueError`` for an observer that is not a seat, ``TypeError`` for a match that is no
    :class:`~sevenrocks_env.rules.Match`.
    """
    observer = checked_observer(observer)
    target = checked_match(match).target
    log = shown_round(match)
    layout = build_layout(log.moves) if log is not None else BoardDrawing()
    out = [f"Seven Rocks - round {round_number(match)} - target {target}"]
    for team in (0, 1):
        seats = " & ".join(str(s) for s in range(NUM_SEATS) if team_of(s) == team)
        mark = "  WINNER" if match.winner == team else ""
        out.append(f"  team {team} (seats {seats}): {match.scores[team]:>4} / {target}{mark}")
    if layout_known(match):
        out += ["  " + line for line in layout_lines(layout)]
        out.append("  " + counted_text(layout))
    else:
        total = end_sum(match.ends, match.end_double, match.branch_started)
        out.append(f"  {LAYOUT_NOT_KNOWN}; end sum {total}")
    if log is not None and log.moves:
        out.append("  last: " + describe_move(log, len(log.moves) - 1))
    if log is not None and log.result is not None:
        out.append("  " + round_end_text(log))
    if match.over:
        out.append("  match over" + (f": team {match.winner} wins" if match.winner is not None else
                                     " (round limit reached)"))
    elif match.turn >= 0:
        out.append(f"  to move: seat {match.turn} (team {team_of(match.turn)})"
                   + (" - opens the round" if match.opening else ""))
    counts = ", ".join(f"seat {s}: {match.hands[s].bit_count()}" for s in range(NUM_SEATS))
    out.append(f"  tiles in hand: {counts}")
    for seat in range(NUM_SEATS):
        if observer is None or seat == observer:
            hand = " ".join(tile_name(t) for t in tiles_of(match.hands[seat])) or "(empty)"
            out.append(f"  seat {seat} hand: {hand}")
    out.append("  " + LEGEND)
    return "\n".join(out)


def round_result(log) -> str:
    """How a round ended, in words (R6, R7, R8)."""
    if log.result == "won":
        return "match won: the round is not counted, no deductions (R8)"
    if log.result == "domino":
        return f"round over: seat {log.finisher} dominoed"
    return "round over: blocked, nobody can place a tile (R6)"


def deduction_text(points: int) -> str:
    """A deduction as shown: ``-15``, or ``0`` for none (not ``-0``) (R7)."""
    return f"-{points}" if points else "0"


def round_end_text(log) -> str:
    """How a round ended: result, finisher, deductions and the scores after it (R7, R8)."""
    text = round_result(log)
    if log.result != "won":
        text += ". Deductions: " + ", ".join(f"seat {s} {deduction_text(d)}"
                                             for s, d in enumerate(log.deductions))
    if log.scores is not None:
        text += f". Scores: team 0 {log.scores[0]}, team 1 {log.scores[1]}"
    return text


def where_text(before: BoardDrawing, slot: int) -> str:
    """Where a placement goes, in the rule book's words ("the spinner's line B (west)")."""
    joined = before.outer_tile(slot)
    number = before.continuation_points()[slot]
    if slot in (WEST, EAST):
        if before.spinner_index is not None and joined is before.line[before.spinner_index]:
            side = "B" if slot == before.spinner_line_b else "A"
            return f"on the spinner's line {side} ({SLOT_NAMES[slot]})"
        return f"on the {SLOT_NAMES[slot]} end, joining the {number} of {joined.name}"
    arm = before.branch(slot)
    if not arm:
        return f"on {BRANCH_NAMES[slot]}, opening it from the spinner"
    return f"on {BRANCH_NAMES[slot]}, joining the {number} of {arm[-1].name}"


def describe_move(round_log, index: int) -> str:
    """One line in the rule book's style for move ``index`` of a round.

    ``round_log`` is a :class:`~sevenrocks_env.rules.Round`, a record's round dict or a move
    list.  Example: ``"seat 0: 1|2 on the spinner's line B (west): spinner now internal;
    continuation points west 2, east 3, north 1, south 1; counted 2 + 3 = 5 -> 5 points"``.
    """
    moves = moves_of(round_log)
    if not -len(moves) <= index < len(moves):
        raise IndexError(f"move {index} out of range: the round has {len(moves)} moves")
    index %= len(moves)
    seat, action = moves[index]
    if action == KNOCK:
        return f"seat {seat} knocks"
    tile, slot = decode_action(action)
    before = build_layout(moves[:index])
    after = build_layout(moves[:index + 1])
    notes = []
    if before.empty:
        head = f"{tile_name(tile)} opens the round"
        if after.spinner_index is not None:
            notes.append("the spinner: line A (west) and line B (east) open")
    else:
        head = f"{tile_name(tile)} {where_text(before, slot)}"
        if before.spinner_index is None and after.spinner_index is not None:
            notes.append("first double: the spinner, attached by line A")
        elif TILE_IS_DOUBLE[tile]:
            notes.append("ordinary double, crosswise")
        if after.spinner_internal and not before.spinner_internal:
            notes.append("spinner now internal")
    points_now = after.continuation_points()
    notes.append("continuation points " + ", ".join(
        f"{SLOT_NAMES[s]} {n}" for s, n in points_now.items()))
    counted = after.counted_ends()
    total = sum(counted.values())
    points = placement_points(total)
    terms = " + ".join(str(v) for v in counted.values())
    notes.append(f"counted {terms} = {total} -> {points} points")
    return f"seat {seat}: {head}: " + "; ".join(notes)


__all__ = ["LEGEND", "checked_observer", "counted_text", "describe_move", "layout_lines",
           "render_text", "round_end_text", "where_text"]
