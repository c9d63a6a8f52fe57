"""RULES.md's worked examples A-D as test data, and a match that has played them (shared by tests)."""

from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import EAST, NORTH, SOUTH, WEST, encode_action, mask_of, parse_tile

# RULES.md worked examples: (tile, slot, end sum, points)
EXAMPLES = {
    "A": [("1|4", WEST, 5, 5), ("1|1", WEST, 6, 0), ("4|4", EAST, 10, 10), ("3|4", EAST, 5, 5),
          ("1|2", WEST, 5, 5), ("1|5", NORTH, 10, 10), ("5|5", NORTH, 15, 15),
          ("0|5", NORTH, 5, 5), ("1|3", SOUTH, 8, 0)],
    "B": [("2|2", WEST, 4, 0)],
    "C": [("5|5", WEST, 10, 10), ("0|5", WEST, 10, 10), ("2|5", EAST, 2, 0), ("3|5", NORTH, 5, 5)],
    "D": [("3|6", WEST, 9, 0), ("6|6", EAST, 15, 15), ("2|6", EAST, 5, 5)],
}


def example_match(sequence, steps=None):
    """A match that has played the first ``steps`` placements of ``sequence`` (seat i % 4 plays step i)."""
    steps = len(sequence) if steps is None else steps
    tiles = [parse_tile(tile) for tile, *_ in sequence]
    hands = [[] for _ in range(4)]
    for i, tile in enumerate(tiles):
        hands[i % 4].append(tile)
    rest = [t for t in range(28) if t not in tiles]
    for hand in hands:
        while len(hand) < 7:
            hand.append(rest.pop())
    match = Match.from_deal([mask_of(h) for h in hands], opener=0)
    for i, (tile, slot, *_) in enumerate(sequence[:steps]):
        match.turn = i % 4
        action = encode_action(parse_tile(tile), slot)
        assert action in legal_actions(match)
        apply_action(match, action)
    return match
