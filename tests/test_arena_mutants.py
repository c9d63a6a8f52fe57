"""Arena details a mutation audit found unpinned: each test failed on one plausible slip in
:mod:`sevenrocks_env.arena`, :mod:`~sevenrocks_env.arena_report` or
:mod:`~sevenrocks_env.arena_log`."""

from __future__ import annotations

import json
import re

import pytest

from sevenrocks_env import arena


@pytest.mark.parametrize("count", [3, 5])
def test_a_match_needs_exactly_four_agents(count):
    """Five agents were not one too many: the fifth was silently left out."""
    with pytest.raises(ValueError, match=f"a match needs 4 agents .*got {count}"):
        arena.run_match(["random"] * count, seed=0, target=60, max_rounds=2)


# -- a saved result read from disk (untrusted) --------------------------------------------------

@pytest.fixture(scope="module")
def saved():
    """A real arena result (``--json``) of 4 pairs, as a dict."""
    return arena.evaluate("greedy", "random", 4, seed=3, target=60, max_rounds=20).as_dict()


@pytest.mark.parametrize("change, field", [
    ({"agent_a": ""}, "agent_a"), ({"spec_b": ""}, "spec_b"),
    ({"agent_b": "gree\ndy"}, "agent_b"), ({"spec_a": "a|b"}, "spec_a"),
    ({"seconds_per_decision": [-0.001, 0.001]}, "seconds_per_decision"),
    ({"cpu_seconds_per_decision": [0.001, -0.001]}, "cpu_seconds_per_decision"),
    ({"seed": -1}, "seed"), ({"seed": 2 ** 64}, "seed"), ({"seed": 1.0}, "seed"),
    ({"target": 0}, "target"), ({"target": -60}, "target"),
    ({"truncated": -1}, "truncated"), ({"max_rounds": 0}, "max_rounds"),
    ({"max_rounds": 10 ** 9}, "max_rounds"), ({"engine": "batched:tpu"}, "engine"),
    ({"wall_s": -1.0}, "wall_s"), ({"rounds_per_match": 0.5}, "rounds_per_match"),
    ({"mean_margin": 1e10}, "mean_margin"), ({"mean_margin": "5"}, "mean_margin"),
    ({"win_rate": 1.5}, "win_rate"), ({"matches": 8.0}, "matches"), ({"pairs": 4.0}, "pairs"),
    ({"ci95": [0.1, 1.2]}, "ci95"),
], ids=repr)
def test_a_saved_result_with_a_field_out_of_range_is_refused(tmp_path, saved, change, field):
    from sevenrocks_env.arena_report import read_result
    path = tmp_path / "result.json"
    path.write_text(json.dumps(saved))
    assert read_result(path)["pairs"] == 4  # as written: read
    path.write_text(json.dumps(saved | change))
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: {field} is missing or out"):
        read_result(path)


@pytest.mark.parametrize("text, words", [
    ("[1, 2]", "an arena result is a JSON object"),
    ('"win_rate"', "an arena result is a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "not a readable arena result"),  # RecursionError
    ('{"pairs": 1, "pairs": 2}', "not a readable arena result"),      # a key given twice
    (" " * 1_000_001 + "{}", "is larger than 1000000 bytes; not an arena result"),
], ids=["list", "string", "nested", "twice", "large"])
def test_a_saved_result_that_is_no_result_object_is_one_value_error(tmp_path, text, words):
    from sevenrocks_env.arena_report import read_result
    path = tmp_path / "result.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(words)):
        read_result(path)


def test_a_folder_given_as_a_saved_result_is_named_with_its_article(tmp_path):
    """ "is a folder, not an arena result" (it said "not a arena result")."""
    from sevenrocks_env.arena_report import read_result
    with pytest.raises(ValueError, match="is a folder, not an arena result$"):
        read_result(tmp_path)


# -- names and tables -------------------------------------------------------------------------

def test_only_a_checkpoint_is_shortened_to_its_file_stem():
    """A long ``search:...`` spec is cut in the middle, keeping its end (not shortened as if
    its parameters were a path); a checkpoint whose stem is still too long is cut too."""
    from sevenrocks_env.arena_report import MAX_NAME, short_name
    spec = "search:samples=64,win_bonus=25.0,rollout=heuristic"
    assert short_name(spec) == "search:sa...euristic"
    stem = "ckpt:runs/" + "x" * 40 + ".pt"
    assert len(short_name(stem)) <= MAX_NAME and "..." in short_name(stem)


def test_three_names_that_shorten_alike_get_three_suffixes():
    from sevenrocks_env.arena_report import MAX_NAME, short_names
    names = [f"search:samples=1,rollout=greedy,{filler},win_bonus=50.0"
             for filler in ("a", "b", "c")]
    shorts = short_names(names)
    assert len(set(shorts)) == 3 and all(len(s) <= MAX_NAME for s in shorts)
    assert shorts[1].endswith("~2") and shorts[2].endswith("~3")


def _result(agent_a, agent_b, spec_a="", spec_b=""):
    return arena.ArenaResult(agent_a, agent_b, 4, 8, 0, 250, 0.5, (0.2, 0.8), "Wilson", 0, 0.0,
                             (5.0, 5.0), 0.5, 6.0, (0.001, 0.001), 100.0, 1.0, spec_a, spec_b)


def test_a_pair_table_tells_two_names_that_shorten_alike_apart():
    a = "search:samples=1,rollout=greedy,a,win_bonus=50.0"
    b = "search:samples=1,rollout=greedy,b,win_bonus=50.0"
    title = _result(a, b).table().splitlines()[0]
    short_a, short_b = title.split(" (A) vs ")
    assert short_a != short_b.removesuffix(" (B)")


def test_a_pair_table_shows_each_agent_s_own_spec():
    table = _result("mine", "theirs", "heuristic", "greedy").table()
    rows = [line.split() for line in table.splitlines()]
    assert ["A", "=", "mine", "heuristic"] in rows and ["B", "=", "theirs", "greedy"] in rows


@pytest.mark.parametrize("one_sided, mark", [
    ("won every pair", ">= "), ("won every pair against the other groups", ">= "),
    ("lost every pair", "<= "), ("lost every pair against the other groups", "<= "),
    ("between groups", ""), ("between groups against the other groups", ""), (None, "")])
def test_a_rating_is_marked_only_when_it_is_a_bound(one_sided, mark):
    from sevenrocks_env.arena_report import rating_text
    assert rating_text({"rating": 12.4, "one_sided": one_sided}) == f"{mark}+12"


def test_a_long_name_never_runs_into_its_rating():
    """A 20-character name and a 9-character rating (``<= -996.0``): a space between them."""
    from types import SimpleNamespace

    from sevenrocks_env.arena_report import round_robin_table
    names = ["a" * 20, "b" * 20]
    game = SimpleNamespace(agent_a=names[0], agent_b=names[1], win_rate=1.0, ci95=(0.6, 1.0))
    result = SimpleNamespace(agents=names, games=[game], specs=names, ratings=[
        {"agent": names[0], "rating": 996.0, "stderr": 1.0, "one_sided": "won every pair"},
        {"agent": names[1], "rating": -996.0, "stderr": 1.0, "one_sided": "lost every pair"}])
    rows = [line.split()[:3] for line in round_robin_table(result).splitlines()
            if "set by the prior" in line]
    assert rows == [[names[0], ">=", "+996.0"], [names[1], "<=", "-996.0"]]


def test_every_pairing_of_a_round_robin_deals_from_its_seed():
    """The docs: the same seed, so the same deals, for every pairing (not only the first row's)."""
    result = arena.round_robin(["random", "greedy", "heuristic"], pairs=1, seed=7, target=60,
                               max_rounds=3)
    assert [(g.agent_a, g.agent_b, g.seed) for g in result.games] == [
        ("random", "greedy", 7), ("random", "heuristic", 7), ("greedy", "heuristic", 7)]


def test_a_bad_spec_is_refused_before_a_pair_log_is_made(tmp_path):
    log = tmp_path / "pairs.jsonl"
    with pytest.raises(ValueError):
        arena.evaluate("random", "greedy:depth=2", pairs=1, log=log)
    assert not log.exists()


# -- a pair log line read from disk (untrusted) -------------------------------------------------

LOST_TWICE = {"pair": 0, "score": 0.0, "truncated": 0, "margin": -200, "rounds": 4,
              "points_a": 100, "points_b": 300, "round_wins_a": 1.0, "decisions": [10, 10],
              "think_s": [0.1, 0.1], "think_cpu_s": [0.1, 0.1]}


@pytest.mark.parametrize("change", [{"truncated": False}, {"rounds": True},
                                    {"decisions": [True, 10]}, {"score": False}], ids=repr)
def test_a_pair_line_with_a_boolean_for_a_number_is_refused(change):
    from sevenrocks_env.arena_log import PairLogError, _checked_outcome
    assert _checked_outcome(dict(LOST_TWICE), 0, "log:2", 100)["rounds"] == 4  # as is: read
    with pytest.raises(PairLogError, match=r"^log:2: \w+ must be"):
        _checked_outcome(LOST_TWICE | change, 0, "log:2", 100)


def test_a_logged_fingerprint_is_each_file_s_bytes_then_a_nul(tmp_path):
    """The header's SHA-256 covers each file then a NUL (so [ab, c] and [a, bc] differ): logs
    written so far hold exactly this digest, and a run whose digest changed is refused."""
    import hashlib

    from sevenrocks_env.fingerprints import files_fingerprint
    path = tmp_path / "policy.pt"
    path.write_bytes(b"weights")
    assert files_fingerprint(f"ckpt:{path}") == hashlib.sha256(b"weights\0").hexdigest()
    assert files_fingerprint("greedy") is None
