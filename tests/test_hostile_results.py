"""Hostile arena result files (``sevenrocks arena --json``): what ``training.ship
--extra-result`` and ``benchmarks/ladder.py`` read from one is checked before it is printed,
put into a model card (its Markdown and shell commands) or plotted; a bad file is one line."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402
from sevenrocks_env.ratings import wilson_interval  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ladder  # noqa: E402

SHIP = ["--pairs", "1", "--search-pairs", "0", "--agents", "random"]


@pytest.fixture
def policy_result(tmp_path):
    """A small policy file and a real arena result of it against random (as a dict)."""
    from sevenrocks_env.arena import evaluate

    source = save_policy(tmp_path / "plain.pt")
    return source, evaluate(f"ckpt:{source}", "random", 2, seed=1).as_dict()


def scaled(result: dict, pairs: int, win_rate: float) -> dict:
    """``result`` as if played over ``pairs`` pairs at ``win_rate`` (what read_result checks
    still holds: the matches and the Wilson interval)."""
    return result | {"pairs": pairs, "matches": 2 * pairs, "win_rate": win_rate,
                     "ci95": list(wilson_interval(win_rate, pairs))}


def ship_with(tmp_path, source, result: dict, out=None, name="result.json") -> int:
    from training.ship import main as ship

    path = tmp_path / name
    path.write_text(json.dumps(result))
    out = out or tmp_path / "shipped" / "policy.pt"
    return ship([str(source), "--out", str(out), *SHIP, "--extra-result", str(path)])


@pytest.mark.parametrize("option, agent", [
    ("--agents", "ckpt:a|b.pt"), ("--agents", "g=greedy`"), ("--search", "search:samples=2\x1b[31m"),
])
def test_an_opponent_given_on_the_command_line_that_would_break_the_card_is_refused(
        tmp_path, capsys, option, agent):
    """The card's opponents from ``--agents``/``--search`` go into its Markdown tables and
    commands as the names read from result files do, and are held to the same rule."""
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    argv = [str(source), "--out", str(tmp_path / "shipped" / "policy.pt"), "--pairs", "1",
            "--search-pairs", "1" if option == "--search" else "0", option, agent]
    assert ship(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: opponent ") and "one line of printable characters" in err
    assert err.count("\n") == 1 and len(err) < MESSAGE_LIMIT
    assert not (tmp_path / "shipped").exists()


@pytest.mark.parametrize("field, value", [
    ("agent_b", "random$(touch /tmp/PWNED)\n| x | y |\n```\nrm -rf ~ #"),
    ("agent_b", "random\ud800"),  # a lone surrogate: the card's write failed after the arena
    ("agent_b", "ran`dom"), ("agent_b", "a|b"), ("agent_b", "random\x1b[31m"),
    ("spec_b", "random\n```"), ("spec_b", "random\ud800"), ("agent_a", "ckpt:x|y"),
])
def test_a_result_name_that_would_break_the_model_card_is_refused_before_playing(
        tmp_path, capsys, policy_result, field, value):
    source, result = policy_result
    assert ship_with(tmp_path, source, result | {field: value}) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{field} is missing or out of range" in err, err[:300]
    assert err.count("\n") == 1 and len(err) < MESSAGE_LIMIT
    assert not (tmp_path / "shipped").exists()


def test_the_quality_bar_is_judged_by_the_opponent_s_spec_not_its_name(tmp_path, policy_result):
    """A result against random, its opponent named "heuristic" (``heuristic=random``), was
    shown as meeting the bar against heuristic."""
    source, result = policy_result
    named = scaled(result, 1000, 0.99) | {"agent_b": "heuristic"}
    assert ship_with(tmp_path, source, named) == 0
    card = (tmp_path / "shipped" / "MODEL_CARD.md").read_text()
    bars = card.split("## Against the project's quality bars")[1].split("## Commands")[0]
    assert "vs heuristic" not in bars and bars.count("| vs random >= 95% |") == 2, bars
    assert "| heuristic=random (from `result.json`) | 1000 |" in card
    commands = json.loads((tmp_path / "shipped" / "model_card.json").read_text())["commands"]
    assert shlex.split(commands[-1])[3] == "heuristic=random"


def test_a_result_played_under_another_round_limit_is_refused(tmp_path, capsys, policy_result):
    """``sevenrocks arena ckpt:X heuristic=random --max-rounds 1 --json``: every match cut
    after a round; the card's rows are of matches to 250 under the arena's round limit."""
    source, result = policy_result
    cut = scaled(result, 1000, 0.5) | {"agent_b": "heuristic", "max_rounds": 1,
                                       "rounds_per_match": 1.0, "truncated": 2000}
    assert ship_with(tmp_path, source, cut) == 2
    err = capsys.readouterr().err
    assert "max_rounds 100" in err and "max_rounds 1)" in err and err.count("\n") == 1, err
    assert not (tmp_path / "shipped").exists()


def test_the_card_s_commands_quote_every_piece_and_say_no_seed_for_an_unseeded_result(
        tmp_path, policy_result):
    source, result = policy_result
    out = tmp_path / "shipped here" / "my policy.pt"
    assert ship_with(tmp_path, source, result | {"seed": None}, out=out,
                     name="result $1.json") == 0
    commands = json.loads((out.parent / "model_card.json").read_text())["commands"]
    played, extra = commands[2], commands[3]
    assert shlex.split(played) == ["sevenrocks", "arena", f"ckpt:{out}", "random", "--pairs",
                                   "1", "--seed", "2025", "--batched"]
    command, _, target = extra.partition(" > ")
    assert shlex.split(command) == ["sevenrocks", "arena", f"ckpt:{out}", "random", "--pairs",
                                    "2", "--json"]  # (the result's own arena: not batched)
    assert shlex.split(target) == [str(tmp_path / "result $1.json")]
    assert "None" not in extra


@pytest.mark.parametrize("engine, batched", [
    ("batched:cpu", ["--batched"]), ("batched:cuda", ["--batched", "--device", "cuda"]),
    (None, []), ("", []),
])
def test_the_card_replays_a_result_on_the_engine_its_file_says_it_was_played_on(
        tmp_path, policy_result, engine, batched):
    """A result's command in the card says ``--batched`` exactly when the result file says it
    was played on the batched engine, with ``--device`` off the CPU (the card's own rows are the
    batched arena's either way); a file that does not say is replayed on the default arena."""
    source, result = policy_result
    assert ship_with(tmp_path, source, result | {"engine": engine}) == 0
    commands = json.loads((tmp_path / "shipped" / "model_card.json").read_text())["commands"]
    played, extra = commands[2], commands[3]
    assert shlex.split(played)[-1] == "--batched"
    command, _, target = extra.partition(" > ")
    assert shlex.split(command) == ["sevenrocks", "arena", f"ckpt:{tmp_path}/shipped/policy.pt",
                                    "random", "--pairs", "2", "--seed", "1",
                                    *batched, "--json"]
    assert shlex.split(target) == [str(tmp_path / "result.json")]


def test_an_out_that_is_an_extra_result_is_refused_and_the_result_kept(tmp_path, capsys,
                                                                        policy_result):
    from training.ship import main as ship

    source, result = policy_result
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    assert ship([str(source), "--out", str(path), *SHIP, "--extra-result", str(path)]) == 2
    assert json.loads(path.read_text()) == result
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("changes, words", [
    ({"max_rounds": "x"}, "max_rounds is missing or out of range"),
    ({"max_rounds": 0}, "max_rounds is missing or out of range"),
    ({"max_rounds": 1001}, "max_rounds is missing or out of range"),
    ({"rounds_per_match": 500.0}, "500.0 rounds per match, over its max_rounds 100"),
    ({"rounds_per_match": 0}, "rounds_per_match is missing or out of range"),
    ({"truncated": 99}, "99 truncated matches of 4"),
    ({"truncated": 10 ** 4000}, "<int of 13288 bits> truncated matches of 4"),  # (4,001 digits)
    ({"truncated": -1}, "truncated is missing or out of range"),
    ({"truncated": 1.5}, "truncated is missing or out of range"),
    ({"engine": "zz"}, "engine is missing or out of range"),
    ({"engine": ["python"]}, "engine is missing or out of range"),
    ({"cpu_seconds_per_decision": "fast"}, "cpu_seconds_per_decision is missing"),
    ({"wall_s": [1]}, "wall_s is missing or out of range"),
])
def test_a_result_s_other_fields_must_be_consistent_with_their_bounds(tmp_path, policy_result,
                                                                    changes, words):
    from sevenrocks_env.arena_report import read_result

    path = tmp_path / "result.json"
    path.write_text(json.dumps(policy_result[1] | changes))
    with pytest.raises(ValueError, match="^" + str(path).replace("\\", "\\\\")) as error:
        read_result(path)
    assert words in str(error.value)


def test_only_a_round_limit_the_result_gives_bounds_its_rounds(tmp_path, policy_result):
    """Older results lack max_rounds, engine and CPU times: only what is given is checked, and
    a result that says its round limit cannot have played more rounds a match."""
    from sevenrocks_env.arena_report import read_result

    path = tmp_path / "result.json"
    older = {k: v for k, v in policy_result[1].items()
             if k not in ("max_rounds", "engine", "cpu_seconds_per_decision", "truncated")}
    long = older | {"rounds_per_match": 150.0}
    for result in (long, long | {"max_rounds": None, "engine": None, "seed": None}):
        path.write_text(json.dumps(result))
        assert read_result(path)["rounds_per_match"] == 150.0
    path.write_text(json.dumps(long | {"max_rounds": 100}))
    with pytest.raises(ValueError, match="150.0 rounds per match, over its max_rounds 100"):
        read_result(path)


def test_a_folder_holding_a_deeply_nested_model_card_is_one_line(tmp_path, capsys):
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "model_card.json").write_text("[" * 200_000 + "]" * 200_000)
    assert ship([str(source), "--out", str(folder / "x.pt"), *SHIP]) == 2
    err = capsys.readouterr().err
    assert "cannot be read as a model card" in err and err.count("\n") == 1, err[:300]
    assert not (folder / "x.pt").exists()


def test_a_card_that_cannot_be_written_as_utf_8_is_refused_before_playing(tmp_path, capsys,
                                                                         monkeypatch):
    """An --out path with a byte that is not UTF-8 (a lone surrogate in Python) goes into the
    card's commands: its write failed after the whole arena had played."""
    from training import ship as module

    def played(*args, **kwargs):
        raise AssertionError("the arena played")
    monkeypatch.setattr(module, "_play", played)
    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped\udcff" / "policy.pt"
    assert module.main([str(source), "--out", str(out), *SHIP]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the model card cannot be written") and err.count("\n") == 1
    assert not out.parent.exists()


def ladder_file(tmp_path, changes: dict) -> Path:
    """A ladder folder whose greedy__random.json holds the ladder's own pairing, changed."""
    from sevenrocks_env.arena_batched import evaluate_batched

    out = tmp_path / "ladder"
    out.mkdir(exist_ok=True)
    result = evaluate_batched("greedy=greedy", "random=random", 1, seed=31337).as_dict()
    (out / "greedy__random.json").write_text(json.dumps(result | changes))
    return out


LADDER = ["--scale", "0.005", "--only", "random", "--skip", "heuristic"]


@pytest.mark.parametrize("changes", [
    {"cpu_seconds_per_decision": "fast"}, {"cpu_seconds_per_decision": 5},
    {"cpu_seconds_per_decision": [1, "x"]}, {"wall_s": "abc"}, {"wall_s": [1]},
    {"wall_s": -1.0},
])
def test_a_saved_pairing_s_bad_times_are_one_line_when_reused(tmp_path, capsys, changes):
    out = ladder_file(tmp_path, changes)
    before = (out / "greedy__random.json").read_text()
    assert ladder.main([*LADDER, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    field = next(iter(changes))
    assert err.startswith("error: ") and f"{field} is missing or out of range" in err, err
    assert err.count("\n") == 1 and (out / "greedy__random.json").read_text() == before


@pytest.mark.parametrize("changes, words", [
    # its specs are the ladder's, its names another pairing's: "shipped" was rated
    ({"agent_a": "shipped"}, "a result of 'shipped' against 'random', not of greedy against "
                             "random as its name says"),
    ({"agent_b": "greedy"}, "a result of 'greedy' against 'greedy', not of greedy against"),
    ({"agent_a": "greedy$\\foo{$"}, "not of greedy against random"),
    ({"agent_a": "greedy\ud800"}, "agent_a is missing or out of range"),
    ({"spec_a": "\x1b[31mgreedy"}, "spec_a is missing or out of range"),
])
def test_a_saved_pairing_is_rated_only_as_the_pairing_its_file_name_says(tmp_path, capsys,
                                                                         changes, words):
    out = ladder_file(tmp_path, changes)
    assert ladder.main(["--no-play", *LADDER, "--out", str(out),
                        "--plot", str(tmp_path / "ratings.png")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and words in captured.err, captured.err
    assert captured.err.count("\n") == 1 and "\x1b" not in captured.out + captured.err
    assert "| agent | rating |" not in captured.out and not (tmp_path / "ratings.png").exists()


def test_the_ratings_plot_shows_a_name_with_dollars_as_text(tmp_path):
    """A name holding ``$...$`` was read as mathtext: matplotlib's ParseFatalException."""
    results = [{"agent_a": "greedy$\\foo{$", "agent_b": "random", "win_rate": 0.7,
                "pairs": 10}]
    ladder.plot(ladder.ratings(results), str(tmp_path / "ratings.png"))
    assert (tmp_path / "ratings.png").stat().st_size > 1000
