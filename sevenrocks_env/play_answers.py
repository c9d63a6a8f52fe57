"""A human's answer at ``sevenrocks play``: a number from the list of legal moves, or a tile and
an end in words (``3-5 e``, ``3|5 east``; the end may be left out when only one fits).
:func:`parse_answer` turns it into an action or says, in one line, why it is not one (R6: a seat
that holds a fitting tile must place one; R4: branches open once the spinner is internal).
"""

from __future__ import annotations

from . import record as records
from .rules import Match
from .tiles import KNOCK, SLOT_NAMES, describe_action, parse_tile, tile_name

#: The words that name an end (or a branch) in an answer.
SLOT_WORDS = {"w": 0, "west": 0, "e": 1, "east": 1, "n": 2, "north": 2, "a": 2,
              "s": 3, "south": 3, "b": 3}

#: Longest answer read (a move is a few characters: "12", "3-5 east"); longer lines are refused.
MAX_ANSWER = 64


def printable(text: str) -> str:
    """``text`` with control characters (escape sequences, bells) shown as ``\\x1b`` and cut."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:MAX_ANSWER])


def parse_answer(answer: str, match: Match, legal: list[int]) -> int:
    """The action meant by ``answer`` (a list number or a tile and end); ``ValueError`` says why not."""
    text = answer.strip().lower()
    if not text:
        raise ValueError("empty answer")
    if text.isascii() and text.isdigit():  # not '²', which isdigit() also accepts
        held = _held_tile(text, match)  # '04' also spells the tile 0|4 ('04 e' does)
        digits = text.lstrip("0") or "0"  # '01' is 1 (and a long run of zeros is 0)
        if len(digits) > 3 or not 1 <= int(digits) <= len(legal):
            if held is not None:
                return _tile_answer([text], None, answer, match, legal)
            number = digits if len(digits) <= 12 else f"{digits[:6]}...({len(digits)} digits)"
            raise ValueError(f"{number} is not on the list: choose 1..{len(legal)}")
        action = legal[int(digits) - 1]
        # a tile is written low half first (R1): '04' may mean 0|4, but '10' is move 10, not 0|1
        low_first = held is not None and text[0] <= text[-1]
        if low_first and (action == KNOCK or action >> 2 != held):
            move = "k" if action == KNOCK else \
                f"{tile_name(action >> 2).replace('|', '-')} {SLOT_NAMES[action & 3]}"
            raise ValueError(f"{text} is both move {int(digits)} on the list "
                             f"({describe_action(action)}) and your tile {tile_name(held)}: "
                             f"answer '{move}' for the move, or "
                             f"'{tile_name(held).replace('|', '-')}' (and its end) for the tile")
        return action
    if text in ("k", "knock", "pass"):
        if legal == [KNOCK]:
            return KNOCK
        raise ValueError("you hold a tile that fits, so you must place one (R6, see docs/rules.md)")
    if legal == [KNOCK]:
        raise ValueError("no tile of yours fits any open end: answer 1 to knock (R6, see docs/rules.md)")
    parts = text.replace(",", " ").split()
    slot = None
    if len(parts) >= 2 and parts[-1] in SLOT_WORDS:
        slot = SLOT_WORDS[parts.pop()]
    return _tile_answer(parts, slot, answer, match, legal)


def branch_closed_text(match: Match) -> str:
    """Why the spinner's branches are not open yet (R4), in the words of both front ends."""
    if match.spinner < 0:
        return "there is no spinner yet, so no branch: the first double played becomes it (R4)"
    return ("the spinner's branches open only once both its straight continuations are "
            "filled (R4)")


def _spelled_tile(text: str) -> int | None:
    """The tile ``text`` spells ('04': 0|4), or ``None``."""
    try:
        return parse_tile(text)
    except ValueError:
        return None


def _held_tile(text: str, match: Match) -> int | None:
    """The tile ``text`` spells, if the seat on turn holds it; else ``None``."""
    tile = _spelled_tile(text)
    return tile if tile is not None and (match.hands[match.turn] >> tile) & 1 else None


def _tile_answer(parts: list[str], slot: int | None, answer: str, match: Match,
                 legal: list[int]) -> int:
    """The action of a tile answer (``parts`` spell the tile, ``slot`` the end named, if any)."""
    try:
        tile = parse_tile("".join(parts))
    except ValueError:
        if len(parts) >= 2 and parts[-1].isalpha() \
                and _spelled_tile("".join(parts[:-1])) is not None:
            if slot is not None and parts[-1] in SLOT_WORDS:  # '3|5 east west'
                raise ValueError("name only one end (w, e, n or s)") from None
            raise ValueError(f"{records.shown(parts[-1])} is not an end: name one as w, e, n or s "
                             "(west, east, north, south)") from None
        raise ValueError(f"not understood: {records.shown(answer.strip())} (answer a number, a "
                         f"tile and end like '3-5 e', or q)") from None
    if not (match.hands[match.turn] >> tile) & 1:
        raise ValueError(f"you do not hold {tile_name(tile)}")
    fits = [a for a in legal if a != KNOCK and a >> 2 == tile]
    if not fits:
        open_ends = ", ".join(f"{SLOT_NAMES[s]} {n}" for s, n in enumerate(match.ends) if n >= 0)
        raise ValueError(f"{tile_name(tile)} fits no open end (open: {open_ends})")
    if slot is None:
        if len(fits) > 1:
            ends = " or ".join(SLOT_NAMES[a & 3][0] for a in fits)
            raise ValueError(f"{tile_name(tile)} fits more than one end: add {ends}")
        return fits[0]
    if match.opening:
        return fits[0]  # the opening tile goes in the middle whatever end was named
    if match.ends[slot] < 0:
        why = f" ({branch_closed_text(match)}, see docs/rules.md)" if slot >= 2 else ""
        raise ValueError(f"the {SLOT_NAMES[slot]} end is not open{why}")
    if 4 * tile + slot not in fits:
        raise ValueError(f"{tile_name(tile)} does not fit the {SLOT_NAMES[slot]} end "
                         f"(open number {match.ends[slot]})")
    return 4 * tile + slot
