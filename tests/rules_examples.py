"""The worked examples of docs/rules.md, loaded from the package's data file, and a match that has
played them (shared by the tests and by docs/make_rule_pictures.py).

The data lives in ``sevenrocks_env/data/worked_examples.json`` (shipped with the package):
``tests/test_rules_examples.py`` plays it through the engine, ``tests/test_docs_rules.py`` checks
that docs/rules.md's tables say the same.
"""

import json
from importlib import resources

from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import (ALL_TILES, NORTH, SLOT_NAMES, encode_action, mask_of,
                                  parse_tile)

DATA_FILE = "data/worked_examples.json"
STEP_KEYS = {"tile", "slot", "counted", "end_sum", "points"}


def load_worked_examples() -> dict:
    """The raw data file as a dict (``examples`` A-D and ``deductions``, example E)."""
    text = resources.files("sevenrocks_env").joinpath(DATA_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    if data.get("format") != "sevenrocks-worked-examples/1":
        raise ValueError(f"{DATA_FILE}: unknown format {data.get('format')!r}")
    for name, example in data["examples"].items():
        for index, step in enumerate(example["steps"] + example.get("alternatives", []), start=1):
            where = f"{DATA_FILE}: example {name}, step {index}"
            if set(step) != STEP_KEYS:
                raise ValueError(f"{where}: keys must be {sorted(STEP_KEYS)}, got {sorted(step)}")
            if step["slot"] not in SLOT_NAMES or any(s not in SLOT_NAMES for s in step["counted"]):
                raise ValueError(f"{where}: slots are {SLOT_NAMES}, got {step['slot']!r}, {step['counted']}")
            parse_tile(step["tile"])  # raises on a malformed tile
    return data


def slot_index(name: str) -> int:
    """``"west"`` -> 0, ..., ``"south"`` -> 3 (the env's slots)."""
    return SLOT_NAMES.index(name)


WORKED = load_worked_examples()

#: example name -> [(tile, slot, end sum, points)], the placements in order (slot as an int).
EXAMPLES = {
    name: [(s["tile"], slot_index(s["slot"]), s["end_sum"], s["points"]) for s in example["steps"]]
    for name, example in WORKED["examples"].items()
}


def example_match(sequence, steps=None):
    """A match that has played the first ``steps`` placements of ``sequence`` (seat i % 4 plays step i).

    Every seat is dealt its example tiles, topped up to 7 with tiles the example does not use.
    """
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
        assert action in legal_actions(match), (tile, slot, legal_actions(match))
        apply_action(match, action)
    return match


def example_e_position() -> tuple[Match, int, list[int]]:
    """Example E in a round that ends: seats 1 and 3 hold its hands, seat 0 is on turn with its
    last tile; returns ``(match, that tile's action, the scores after it)``: team ``team`` loses
    ``team_loss`` (R7), the other nothing (seat 2 keeps 0|0, 0 pips)."""
    data = WORKED["deductions"]
    held = {h["seat"]: mask_of(parse_tile(t) for t in h["tiles"]) for h in data["hands"]}
    last, spare = parse_tile("1|3"), parse_tile("0|0")  # seat 0's last tile; seat 2 keeps 0 pips
    held[0], held[2] = 1 << last, 1 << spare
    rest = [t for t in range(28) if not (held[0] | held[1] | held[2] | held[3]) >> t & 1]
    played_by = [mask_of(rest[6 * seat: 6 * seat + 6]) for seat in range(4)]
    state = Match.from_deal([mask_of(range(7 * s, 7 * s + 7)) for s in range(4)], 0).to_state()
    # a layout the 24 played tiles can make (from_state checks it): 0 and 2 open once each,
    # both branches of the 6|6 spinner started and showing 1
    state.update(seed=None, hands=[held[s] for s in range(4)], played_by=played_by,
                 played=ALL_TILES & ~sum(held.values()), placements=24, spinner=6, turn=0,
                 ends=[0, 2, 1, 1], end_double=[False] * 4,
                 branch_started=[False, False, True, True], last_end_sum=4)
    lost = [0, 0]
    lost[data["team"]] = data["team_loss"]
    # 1|3 on a 1: end sum 0+2+3+1 = 6, 0 points; no floor below zero (R7)
    return Match.from_state(state), encode_action(last, NORTH), [-lost[0], -lost[1]]
