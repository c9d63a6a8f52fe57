"""docs/rules.md agrees with the package's worked-example data, and its anchors and pictures exist.

The data file (``sevenrocks_env/data/worked_examples.json``) is played through the engine by
test_rules_examples.py; this file parses the markdown tables of docs/rules.md and checks that
they show exactly that data, so docs, data and engine cannot drift apart.
"""

import re
import sys
from pathlib import Path

import pytest

from rules_examples import WORKED

ROOT = Path(__file__).resolve().parents[1]
RULES_MD = ROOT / "docs" / "rules.md"
TEXT = RULES_MD.read_text(encoding="utf-8")

#: The anchors other files link to (README, CLI help, error messages): renaming a section breaks them.
SECTION_ANCHORS = [
    "r1-players-partnerships-and-the-deal",
    "r2-who-opens-a-round",
    "r3-placing-a-tile",
    "r4-the-spinner",
    "r5-counting-the-ends-and-scoring",
    "r6-playing-or-knocking-and-blocked-rounds",
    "r7-end-of-a-round-and-deductions",
    "r8-winning-the-match",
]
SLOTS = ("west", "east", "north", "south")


# -- a small markdown reader -----------------------------------------------------------------------

def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every ATX heading outside code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#{1,6}) (.+)", line)):
            out.append((len(m.group(1)), m.group(2).strip()))
    return out


def split_row(line: str) -> list[str]:
    """Cells of a table row; ``\\|`` inside a cell is a literal pipe."""
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    cells = re.split(r"(?<!\\)\|", line)
    return [cell.strip().replace("\\|", "|") for cell in cells]


def tables(text: str) -> list[list[list[str]]]:
    """Every table as a list of rows (header first, the ``|---|`` line dropped)."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
            continue
        if current:
            rows = [split_row(row) for row in current]
            assert re.fullmatch(r"[\s|:\-]+", current[1]), f"not a table: {current[:2]}"
            found.append([rows[0]] + rows[2:])
            current = []
    return found


def section(text: str, title_start: str) -> str:
    """The text under the heading that starts with ``title_start``, up to the next heading."""
    match = re.search(rf"^#+ {re.escape(title_start)}.*?$(.*?)(?=^#+ |\Z)", text, re.M | re.S)
    assert match, f"docs/rules.md has no heading starting with {title_start!r}"
    return match.group(1)


def table_with_header(text: str, first_column: str) -> list[dict]:
    """The rows (as dicts by header) of the only table in ``text`` whose first header is ``first_column``."""
    found = [t for t in tables(text) if t[0][0] == first_column]
    assert len(found) == 1, f"expected one table starting with {first_column!r}, found {len(found)}"
    header, *rows = found[0]
    return [dict(zip(header, row)) for row in rows]


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def counted_ends(cell: str) -> dict:
    """``"west 2 + east 3"`` -> ``{"west": 2, "east": 3}``."""
    out = {}
    for term in cell.split("+"):
        slot, value = term.split()
        out[slot] = int(value)
    return out


# -- sections and anchors ----------------------------------------------------------------------------

def test_sections_r1_to_r8_have_the_documented_anchors():
    r_headings = [title for level, title in headings(TEXT) if re.match(r"R\d ", title)]
    assert [title.split()[0] for title in r_headings] == [f"R{i}" for i in range(1, 9)]
    assert all(level == 2 for level, title in headings(TEXT) if re.match(r"R\d ", title))
    assert [github_slug(title) for title in r_headings] == SECTION_ANCHORS


def test_github_slug_matches_githubs_rules():
    assert github_slug("R6 Playing or knocking, and blocked rounds") == \
        "r6-playing-or-knocking-and-blocked-rounds"
    assert github_slug("Example A: doubles at an end and inside") == "example-a-doubles-at-an-end-and-inside"


def test_every_internal_link_resolves():
    slugs = {github_slug(title) for _, title in headings(TEXT)}
    links = re.findall(r"\]\(#([^)]+)\)", TEXT)
    assert links, "the contents list links the sections"
    assert set(links) <= slugs, sorted(set(links) - slugs)
    for target in re.findall(r"\]\(((?!#|https?:)[^)#]+)(?:#[^)]*)?\)", TEXT):
        assert (RULES_MD.parent / target).exists(), f"docs/rules.md links a missing file: {target}"


def test_pictures_exist_and_are_the_ones_the_script_draws():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import make_rule_pictures
    finally:
        sys.path.remove(str(ROOT / "docs"))
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", TEXT)
    drawn = [make_rule_pictures.picture_name(name, step) for name, step in make_rule_pictures.PICTURES]
    assert sorted(shown) == sorted(drawn)
    for name in shown:
        assert (RULES_MD.parent / name).is_file(), f"missing picture docs/{name}: run docs/make_rule_pictures.py"
    for name, step in make_rule_pictures.PICTURES:
        assert 1 <= step <= len(WORKED["examples"][name]["steps"])


def test_tables_are_well_formed():
    """An unescaped ``|`` inside a cell (write ``1\\|4``) would add a column."""
    for table in tables(TEXT):
        assert all(len(row) == len(table[0]) for row in table), table[0]


def test_no_link_outside_the_repository():
    assert "shared/" not in TEXT and "RULES.md" not in TEXT


# -- the worked examples against the data ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(WORKED["examples"]))
def test_example_table_matches_the_data(name):
    example = WORKED["examples"][name]
    rows = table_with_header(section(TEXT, f"Example {name}:"), "step")
    expected = [(str(i), s) for i, s in enumerate(example["steps"], start=1)]
    expected += [("1 instead", s) for s in example.get("alternatives", [])]
    assert len(rows) == len(expected)
    for row, (step, data) in zip(rows, expected):
        assert row["step"] == step
        assert int(row["seat"]) == (int(step.split()[0]) - 1) % 4
        assert code_spans(row["tile"]) == [data["tile"]], f"step {step}"
        assert row["slot"] == data["slot"], f"step {step}"
        assert counted_ends(row["counted ends"]) == data["counted"], f"step {step}"
        assert list(counted_ends(row["counted ends"])) == [s for s in SLOTS if s in data["counted"]]
        assert int(row["end sum"]) == data["end_sum"], f"step {step}"
        assert int(row["points"]) == data["points"], f"step {step}"


@pytest.mark.parametrize("name", sorted(WORKED["examples"]))
def test_continuation_tables_match_the_data(name):
    points = WORKED["examples"][name].get("continuation_points", {})
    text = section(TEXT, f"Example {name}:")
    if not points:
        assert not [t for t in tables(text) if t[0][0] == "after step"]
        return
    rows = table_with_header(text, "after step")
    assert [row["after step"] for row in rows] == sorted(points, key=int)
    for row in rows:
        by_slot = {p["slot"]: p for p in points[row["after step"]]}
        for slot in SLOTS:
            if slot not in by_slot:
                assert row[slot] == "closed", (row, slot)
            else:
                p = by_slot[slot]
                assert row[slot] == f"{p['number']}, {'counted' if p['counted'] else 'not counted'}"


def test_example_a_final_scores_match_the_data():
    team0, team1 = WORKED["examples"]["A"]["team_scores"]
    assert f"has {team0} points, team 1 (steps 2, 4, 6, 8) has {team1}" in section(TEXT, "Example A:")


def test_example_e_tables_match_the_data():
    data = WORKED["deductions"]
    text = section(TEXT, "Example E:")
    rows = table_with_header(text, "seat")
    assert [(int(r["seat"]), int(r["team"]), code_spans(r["tiles left"]), int(r["pips"]), int(r["deduction"]))
            for r in rows] == [(h["seat"], h["seat"] % 2, h["tiles"], h["pips"], h["deduction"])
                               for h in data["hands"]]
    loss = " + ".join(str(h["deduction"]) for h in data["hands"])
    assert f"Team {data['team']} loses {loss} = **{data['team_loss']}** points" in text
    assert f"partners' {data['not_this']['pips']} pips together would give {data['not_this']['deduction']}" in text
    singles = table_with_header(text, "tiles left")
    assert [(code_spans(r["tiles left"]), int(r["pips"]), int(r["deduction"])) for r in singles] == \
        [(h["tiles"], h["pips"], h["deduction"]) for h in data["single_hands"]]
    rounding = table_with_header(text, "pips")
    assert [[int(r["pips"]), int(r["rounded"])] for r in rounding] == data["rounding"]


# -- every citation points inside the repository ------------------------------------------------------

OUTSIDE = ("shared/" + "RULES.md", "../" + "shared")  # split so this file does not find itself


def _files_mentioning(needle: str) -> list[str]:
    """Tracked files (``git grep``), or every text file outside dot-folders without git."""
    import subprocess

    try:
        proc = subprocess.run(["git", "grep", "-n", "-F", needle, "--", ".",
                               ":!tests/test_docs_rules.py"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        if proc.returncode in (0, 1):
            return proc.stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        pass
    hits = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if path.is_file() and not any(p.startswith(".") for p in parts) \
                and path.suffix in (".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", "") \
                and path.name != "test_docs_rules.py":
            text = path.read_text(encoding="utf-8", errors="replace")
            hits += [f"{path}:{n}" for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits


@pytest.mark.parametrize("needle", OUTSIDE)
def test_nothing_cites_the_rules_outside_the_repository(needle):
    assert _files_mentioning(needle) == []


def test_links_to_rule_sections_name_real_sections():
    anchors = set(SECTION_ANCHORS) | {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", TEXT, flags=re.M)}
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    links = [(doc.name, a) for doc in docs if doc.exists()
             for a in re.findall(r"rules\.md#([\w-]+)", doc.read_text(encoding="utf-8"))]
    assert links, "no document links a rule section"
    assert [link for link in links if link[1] not in anchors] == []
