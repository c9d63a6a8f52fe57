"""docs/records.md agrees with the record format's code (sevenrocks_env/record.py).

The doc's field tables must list exactly the keys ``record.validate`` accepts, its tables of
results and bounds the code's values, and its JSON example must be a valid record; the links to
and from the page must lead somewhere.
"""

import copy
import json
import re
from pathlib import Path

import pytest

from sevenrocks_env import record
from sevenrocks_env.record_writer import round_entry
from sevenrocks_env.tiles import KNOCK, TILES, tile_index

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "records.md"
TEXT = DOC.read_text(encoding="utf-8")


# -- a small markdown reader -----------------------------------------------------------------------

def split_row(line: str) -> list[str]:
    """Cells of a table row; ``\\|`` inside a cell is a literal pipe."""
    line = line.strip()[1:]
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]


def tables(text: str) -> list[list[list[str]]]:
    """Every table outside code blocks, as rows of cells (header row first, rule row dropped)."""
    out, current, fenced = [], None, False
    for line in text.splitlines() + [""]:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            if current is None:
                current = []
                out.append(current)
            if not re.fullmatch(r"\|[-| :]+\|", line.strip()):
                current.append(split_row(line))
        else:
            current = None
    return out


def table(header: list[str]) -> list[list[str]]:
    """The body rows of the one table of the doc with this header row."""
    found = [t for t in tables(TEXT) if t[0] == header]
    assert len(found) == 1, f"docs/records.md: expected one table headed {header}, got {found}"
    assert found[0][1:], f"docs/records.md: the table headed {header} is empty"
    return found[0][1:]


def field_table(heading: str) -> dict[str, str]:
    """``{key: required}`` of the field table right under ``### heading``."""
    part = TEXT.split(f"\n### {heading}\n", 1)
    assert len(part) == 2, f"docs/records.md has no section '### {heading}'"
    section = part[1].split("\n#", 1)[0]
    found = tables(section)
    assert found and found[0][0] == ["key", "required", "value"], \
        f"docs/records.md, '{heading}': no field table (key | required | value)"
    keys = {}
    for row in found[0][1:]:
        match = re.fullmatch(r"`(\w+)`", row[0])
        assert match and row[1] in ("yes", "no"), f"'{heading}': a malformed row {row}"
        assert match.group(1) not in keys, f"'{heading}': key {match.group(1)} listed twice"
        keys[match.group(1)] = row[1]
    return keys


def required(keys: dict[str, str], answer: str = "yes") -> set[str]:
    return {key for key, given in keys.items() if given == answer}


def example() -> dict:
    blocks = re.findall(r"```json\n(.*?)```", TEXT, re.S)
    assert len(blocks) == 1, "docs/records.md should hold one JSON example"
    return record.parse(blocks[0])


# -- the field tables ------------------------------------------------------------------------------

def test_the_record_table_lists_exactly_the_keys_of_a_record():
    keys = field_table("The record")
    assert required(keys) == record.RECORD_KEYS
    assert required(keys, "no") == record.OPTIONAL_RECORD_KEYS


def test_the_round_table_lists_exactly_the_keys_of_a_round():
    keys = field_table("A round")
    assert required(keys) == record.ROUND_KEYS and not required(keys, "no")


def test_the_placement_table_lists_exactly_the_keys_of_a_placement():
    keys = field_table("A placement")
    assert required(keys) == record.PLACEMENT_KEYS and not required(keys, "no")


def test_the_knock_table_lists_exactly_the_keys_of_a_knock():
    keys = field_table("A knock")
    assert not required(keys, "no")
    knock = round_entry(0, [0] * 4, [(1, KNOCK, 0, 0)], None, [0] * 4, [0, 0])["moves"][0]
    assert required(keys) == set(knock)  # what the writers write ...
    rec = example()
    moves = rec["rounds"][0]["moves"]
    at = next(i for i, move in enumerate(moves) if move["action"] == KNOCK)
    for key in keys:  # ... and what validate needs: each key, and no other
        broken = copy.deepcopy(rec)
        del broken["rounds"][0]["moves"][at][key]
        with pytest.raises(record.RecordError,
                           match=r"round 0, move \d+: a (knock is exactly|move is an object)"):
            record.validate(broken)
    broken = copy.deepcopy(rec)
    broken["rounds"][0]["moves"][at]["tile"] = moves[at - 1]["tile"]
    with pytest.raises(record.RecordError, match="a knock is exactly"):
        record.validate(broken)


def test_the_results_table_lists_exactly_the_results_and_null():
    results = {row[0] for row in table(["result", "meaning"])}
    assert results == {f'`"{name}"`' for name in record.RESULTS} | {"`null`"}


def test_the_bounds_table_gives_the_codes_values():
    rows = table(["bound", "value"])
    for name, value in rows:
        constant = re.fullmatch(r"`record\.(\w+)`", name)
        assert constant, f"bounds table: {name} is not a record constant"
        assert int(value.split()[0]) == getattr(record, constant.group(1)), name
    assert {"MAX_TARGET", "MAX_ROUNDS", "MAX_MOVES_PER_ROUND"} <= {
        re.fullmatch(r"`record\.(\w+)`", name).group(1) for name, _ in rows}


def test_the_tile_numbering_formula_is_the_codes():
    assert "`low * (13 - low) // 2 + high`" in TEXT
    assert all(tile_index(low, high) == low * (13 - low) // 2 + high for low, high in TILES)


# -- the example -----------------------------------------------------------------------------------

def test_the_json_example_is_a_valid_record_of_a_whole_match():
    rec = example()
    record.validate(rec)
    assert rec["winner"] is not None and not record.cut_off(rec)
    assert any(move["action"] == KNOCK for rnd in rec["rounds"] for move in rnd["moves"])


def test_the_example_cut_after_round_0_is_a_match_in_progress_or_cut_off():
    """What the doc says of its example: without its last round (winner null, the scores of
    round 0) it is a match in progress; with max_rounds 1, one cut off at its round limit."""
    rec = example()
    rec["rounds"].pop()
    rec["winner"], rec["scores"] = None, rec["rounds"][-1]["scores"]
    record.validate(rec)
    assert record.ending(rec) == "no winner: unfinished"
    rec["max_rounds"] = 1
    record.validate(rec)
    assert record.cut_off(rec)


@pytest.mark.parametrize("where", ["record", "round", "placement"])
def test_a_comment_anywhere_in_the_example_makes_it_invalid(where):
    rec = example()
    target = {"record": rec, "round": rec["rounds"][0],
              "placement": rec["rounds"][0]["moves"][0]}[where]
    target["comment"] = "a note"
    with pytest.raises(record.RecordError, match=r"unknown keys \['comment'\]"):
        record.validate(rec)


def test_the_example_as_the_doc_says_ints_must_be_plain_ints():
    for value in (30.0, True):
        rec = example()
        rec["target"] = value
        with pytest.raises(record.RecordError, match="target must be an int"):
            record.validate(rec)
    text = json.dumps(example()).replace('"target": 30', '"target": 3e1', 1)
    with pytest.raises(record.RecordError, match="target must be an int"):
        record.validate(record.parse(text))


# -- links -----------------------------------------------------------------------------------------

def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            out.add(github_slug(match.group(1)))
    return out


def test_every_relative_link_of_the_doc_leads_to_a_file_and_heading():
    links = re.findall(r"\]\(([^)]+)\)", TEXT)
    assert links
    for link in links:
        path, _, anchor = link.partition("#")
        target = (DOC.parent / path).resolve()
        assert target.is_file(), f"docs/records.md links to {link}: no such file"
        if anchor:
            assert anchor in anchors(target), f"docs/records.md links to {link}: no such heading"


@pytest.mark.parametrize("source, link", [("README.md", "docs/records.md"),
                                          ("docs/openspiel.md", "records.md")])
def test_the_doc_is_linked_from(source, link):
    assert f"]({link})" in (ROOT / source).read_text(encoding="utf-8")
