"""What one player of ``python_sevenrocks`` knows, as OpenSpiel strings and tensors.

* **Observation** (``observation_tensor``/``observation_string``): the env's observation,
  :func:`sevenrocks_env.observation.encode` (238 floats, seat-relative, its named pieces as the
  observer's ``dict``).  While a round is being dealt only the tiles dealt to the player so far
  and the scores are set.
* **Information state** (``information_state_tensor``/``information_state_string``), perfect
  recall.  The string holds everything the player has seen: per round the opener, its own dealt
  hand, every move and knock in order (R6), and at a round's count the four remaining hands,
  which are shown (R1, R7).  The tensor is the observation plus the current round's full
  sequence -- own dealt hand, the seat that moved first, and ``MAX_ROUND_MOVES`` x 113 one-hot
  moves -- so it has perfect recall within a round; earlier rounds are public and reach the
  future only through the scores, which the observation holds.
"""

from __future__ import annotations

import numpy as np

from .. import observation
from ..rules import BLOCKED, DOMINO
from ..tiles import KNOCK, NUM_ACTIONS, NUM_SEATS, NUM_TILES, SLOT_NAMES, tile_name, tiles_of

HAND = 7
#: Player moves in one round: 28 placements and at most 3 knocks between two placements (a
#: fourth would mean nobody can play, which ends the round as blocked at once: R6), 109: it
#: sizes the information-state tensor, so it stays this count, tighter than the loose bound
#: records and pair logs are checked against (``match_state.MAX_ROUND_MOVES``, 112).
MAX_ROUND_MOVES = NUM_TILES + 3 * (NUM_TILES - 1)
INFO_PIECES = (("dealt_hand", NUM_TILES, (NUM_TILES,)), ("first_mover", NUM_SEATS, (NUM_SEATS,)),
               ("moves", MAX_ROUND_MOVES * NUM_ACTIONS, (MAX_ROUND_MOVES, NUM_ACTIONS)))
_SCORES = observation.OFFSETS["scores"]
_HAND = observation.OFFSETS["hand"]


class SevenRocksObserver:
    """OpenSpiel's Python observer protocol: ``tensor``, ``dict``, ``set_from``, ``string_from``."""

    def __init__(self, perfect_recall: bool):
        self.perfect_recall = perfect_recall
        pieces = [(name, size, (size,)) for name, size in observation.PIECES]
        if perfect_recall:
            pieces += list(INFO_PIECES)
        self.tensor = np.zeros(sum(size for _, size, _ in pieces), np.float32)
        self.dict = {}
        offset = 0
        for name, size, shape in pieces:
            self.dict[name] = self.tensor[offset:offset + size].reshape(shape)
            offset += size

    def set_from(self, state, player: int) -> None:
        self.tensor.fill(0.0)
        match = state._match
        dealing = state._dealing or state._drawing_opener
        if dealing or match is None:
            own = _dealt_to(state._dealt, player)
            for tile in own:
                self.tensor[_HAND.start + tile] = 1.0
            target = state._target
            if match is not None:
                ours, theirs = match.scores[player & 1], match.scores[(player & 1) ^ 1]
                self.tensor[_SCORES] = (ours / target, theirs / target, target / 1000.0)
            else:
                self.tensor[_SCORES] = (0.0, 0.0, target / 1000.0)
        else:
            self.tensor[:observation.OBS_SIZE] = observation.encode(match, player)
        if not self.perfect_recall:
            return
        if dealing or match is None:
            for tile in _dealt_to(state._dealt, player):
                self.dict["dealt_hand"][tile] = 1.0
            return
        log = match.history[-1]
        for tile in tiles_of(log.hands[player]):
            self.dict["dealt_hand"][tile] = 1.0
        self.dict["first_mover"][(log.opener - player) & 3] = 1.0
        moves = self.dict["moves"]
        for i, (_, action, _, _) in enumerate(log.moves):
            moves[i, action] = 1.0

    def string_from(self, state, player: int) -> str:
        return info_state_text(state, player) if self.perfect_recall else observation_text(
            state, player)


def _tiles_text(tiles) -> str:
    return " ".join(tile_name(t) for t in tiles)


def _dealt_to(dealt: list[int], seat: int) -> list[int]:
    return sorted(t for k, t in enumerate(dealt) if k // HAND == seat)


def layout_text(match) -> str:
    """The layout: each slot's open number (``d`` marks a double), started branches, spinner."""
    if match.placements == 0:
        return "layout empty"
    slots = []
    for slot, name in enumerate(SLOT_NAMES):
        number = match.ends[slot]
        text = "-" if number < 0 else f"{number}{'d' if match.end_double[slot] else ''}"
        if match.branch_started[slot]:
            text += "+"
        slots.append(f"{name[0].upper()}:{text}")
    spinner = "none" if match.spinner < 0 else str(match.spinner)
    return f"layout {' '.join(slots)} spinner {spinner} sum {match.end_sum()}"


def position_text(match, player: int | None) -> str:
    """The public position (plus ``player``'s hand unless None): tiles each seat played this
    round, tiles each seat holds, numbers each seat showed it lacks (R6), layout, scores, turn."""
    parts = [] if player is None else [f"hand[{_tiles_text(tiles_of(match.hands[player]))}]"]
    parts.append("played " + " ".join(f"{s}[{_tiles_text(tiles_of(match.played_by[s]))}]"
                                      for s in range(NUM_SEATS)))
    parts.append("holding " + " ".join(str(match.hands[s].bit_count()) for s in range(NUM_SEATS)))
    parts.append("lacks " + " ".join(
        f"{s}{{{''.join(str(n) for n in range(7) if (match.voids[s] >> n) & 1)}}}"
        for s in range(NUM_SEATS)))
    parts.append(layout_text(match))
    parts.append(f"scores {match.scores[0]}:{match.scores[1]}")
    parts.append("over" if match.over or match.turn < 0 else f"turn {match.turn}")
    return " | ".join(parts)


def observation_text(state, player: int) -> str:
    match = state._match
    if state._dealing or state._drawing_opener or match is None:
        scores = "0:0" if match is None else f"{match.scores[0]}:{match.scores[1]}"
        return (f"p{player} dealing: hand[{_tiles_text(_dealt_to(state._dealt, player))}] "
                f"| scores {scores}")
    return f"p{player} " + position_text(match, player)


def info_state_text(state, player: int) -> str:
    """Perfect recall: every round's opener, own deal, moves in order, and revealed hands."""
    parts = [f"p{player}"]
    if state._position:
        parts.append(f"from[{state._position}]")
    match = state._match
    if match is not None:
        for r, log in enumerate(match.history):
            moves = " ".join(f"{seat}:{'k' if action == KNOCK else action}"
                             for seat, action, _, _ in log.moves)
            text = (f"r{r} first {log.opener} mine[{_tiles_text(tiles_of(log.hands[player]))}] "
                    f"moves {moves}")
            if log.result in (DOMINO, BLOCKED):
                shown = "/".join(_tiles_text(tiles_of(h)) for h in log.remaining_hands())
                text += f" {log.result} shown[{shown}]"
            elif log.result is not None:
                text += f" {log.result}"
            parts.append(text)
    if state._dealing or state._drawing_opener:
        mine = _tiles_text(_dealt_to(state._dealt, player))
        parts.append(f"deal {len(state._dealt)} mine[{mine}]")
    return "\n".join(parts)
