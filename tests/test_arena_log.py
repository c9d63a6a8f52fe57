"""The arena's pair log (``--log``): a run in several sittings equals one run; a log is checked
like any file from elsewhere (its header must name this run, every value is bounded)."""

import json

import pytest

from sevenrocks_env import arena, arena_cli
from sevenrocks_env.arena_log import MAX_LINE, PairLog, PairLogError
from sevenrocks_env.fingerprints import files_fingerprint

torch = pytest.importorskip("torch")
from sevenrocks_env.arena_batched import evaluate_batched  # noqa: E402

A, B = "greedy", "random"


def _lines(path):
    return path.read_text().splitlines()


@pytest.mark.parametrize("engine", ["python", "batched"])
def test_a_run_in_sittings_equals_one_run(tmp_path, engine):
    play = (lambda pairs, log=None: arena.evaluate(A, B, pairs, seed=3, log=log)) \
        if engine == "python" else \
        (lambda pairs, log=None: evaluate_batched(A, B, pairs, seed=3, batch=2, log=log))
    whole = play(5).as_dict(timing=False)
    log = tmp_path / "a_vs_b.jsonl"
    assert play(2, log).as_dict(timing=False) == play(2).as_dict(timing=False)
    assert len(_lines(log)) == 1 + 2
    assert play(5, log).as_dict(timing=False) == whole  # pairs 2..4 played, 0..1 read
    assert len(_lines(log)) == 1 + 5
    assert [json.loads(line)["pair"] for line in _lines(log)[1:]] == [0, 1, 2, 3, 4]
    # fewer pairs than logged: the first ones, nothing played or written
    before = log.read_bytes()
    assert play(3, log).as_dict(timing=False) == play(3).as_dict(timing=False)
    assert log.read_bytes() == before


def test_a_log_of_another_run_is_refused_by_name(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 1, seed=3, log=log)
    with pytest.raises(PairLogError, match="its seed is 3, this run's is 4"):
        arena.evaluate(A, B, 2, seed=4, log=log)
    with pytest.raises(PairLogError, match='its agent_b is "random", this run.s is "heuristic"'):
        arena.evaluate(A, "heuristic", 2, seed=3, log=log)
    with pytest.raises(PairLogError, match='its engine is "python"'):
        evaluate_batched(A, B, 2, seed=3, log=log)


def test_a_line_cut_short_by_a_kill_is_played_again(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 3, seed=3, log=log)
    text = log.read_text()
    log.write_text(text[: len(text) - 40])  # the last pair's line, half written
    again = arena.evaluate(A, B, 3, seed=3, log=log)
    assert again.as_dict(timing=False) == arena.evaluate(A, B, 3, seed=3).as_dict(timing=False)
    assert log.read_text().count("\n") == 4 and log.read_text().endswith("\n")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(score=3.5), "score must be a number in"),
    (lambda d: d.update(rounds=-1), "rounds must be an int in"),
    (lambda d: d.update(decisions=[1]), "decisions must be a list of two"),
    (lambda d: d.update(think_s=[0.0, "x"]), "think_s"),
    (lambda d: d.update(pair=7), "pair 1 expected, found 7"),
    (lambda d: d.update(round_wins_a=1e9), "round_wins_a"),
    (lambda d: d.update(margin=10 ** 400), "margin must be"),  # past a float: was OverflowError
    (lambda d: d.update(pair=1.0), "pair 1 expected, found 1.0"),
    (lambda d: d.update(note="x"), "the pair line has an unknown key 'note'"),
    (lambda d: d.pop("think_cpu_s"), "the pair line misses 'think_cpu_s'"),
])
def test_every_value_of_a_logged_pair_is_checked(tmp_path, change, message):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 3, seed=3, log=log)
    lines = _lines(log)
    data = json.loads(lines[2])
    change(data)
    lines[2] = json.dumps(data)
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(PairLogError, match=message) as error:
        arena.evaluate(A, B, 3, seed=3, log=log)
    assert ":3:" in str(error.value)  # the line number


@pytest.mark.parametrize("content, message", [
    ('{"format": "something else"}\n', "not an arena pair log"),
    ("not json\n", "not JSON"),
    ('{"format": "sevenrocks-arena-pairs/2"}\n' + "x" * 5000 + "\n", None),
])
def test_a_file_that_is_not_a_pair_log_is_refused(tmp_path, content, message):
    log = tmp_path / "l.jsonl"
    log.write_text(content)
    with pytest.raises(PairLogError, match=message or "."):
        arena.evaluate(A, B, 1, seed=3, log=log)


def test_a_key_given_twice_or_a_header_value_of_another_type_is_refused(tmp_path):
    """JSON readers differ on which of two equal keys wins; a seed of 1.0 is not the run's 1."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    header, *pairs = _lines(log)
    log.write_text("\n".join([header, pairs[0].replace('{"pair": 0', '{"pair": 0, "pair": 0'),
                              pairs[1]]) + "\n")
    with pytest.raises(PairLogError, match=":2: not JSON .*key 'pair' given twice"):
        arena.evaluate(A, B, 2, seed=3, log=log)
    log.write_text("\n".join([header.replace('"seed": 3', '"seed": 3.0'), *pairs]) + "\n")
    with pytest.raises(PairLogError, match="its seed is 3.0, this run's is 3"):
        arena.evaluate(A, B, 2, seed=3, log=log)


@pytest.mark.parametrize("line, message", [
    (json.dumps({"pair": 2, "x": "y" * MAX_LINE}), f":3: line longer than {MAX_LINE} bytes"),
    ("[" * 3000, ":3: not JSON"),  # fits a line; json.loads recursed past Python's limit
])
def test_a_pair_line_too_long_or_too_deep_is_refused_in_words(tmp_path, line, message):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 3, seed=3, log=log)
    lines = _lines(log)
    lines[2] = line
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(PairLogError, match=message):
        arena.evaluate(A, B, 3, seed=3, log=log)


def test_cli_log_errors_are_one_line(tmp_path, capsys):
    log = tmp_path / "l.jsonl"
    log.write_text("junk\n")
    assert arena_cli.main([A, B, "--pairs", "1", "--log", str(log), "--no-progress"]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert arena_cli.main(["--round-robin", A, B, "random", "--log", str(log)]) == 2
    assert "--round-robin" in capsys.readouterr().err


def test_logged_pairs_are_read_not_played_again(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    lines = _lines(log)
    first = json.loads(lines[1])
    # what the log says is what counts (a pair some match could give: A lost both, by 1235)
    first.update(score=0.0, truncated=0, margin=-1235, round_wins_a=0.0)
    first["points_a"] = first["points_b"] - 1235
    lines[1] = json.dumps(first)
    log.write_text("\n".join(lines) + "\n")
    result = arena.evaluate(A, B, 2, seed=3, log=log)
    assert result.mean_margin == (-1235 + json.loads(lines[2])["margin"]) / 4


#: A pair line whose values agree with each other except for its rounds (none scored, none won).
NO_POINTS = {"round_wins_a": 0, "points_a": 0, "points_b": 0, "margin": 0}


@pytest.mark.parametrize("change", [
    {"score": 0.3}, {"score": 1.0, "truncated": 1}, {"truncated": 2, "score": 2.0},
    {"rounds": 0, **NO_POINTS}, {"rounds": 1, **NO_POINTS}, {"margin": 5},
    {"points_a": 10 ** 12}, {"round_wins_a": 0.3},
    {"score": 2.0, "truncated": 0, "margin": -10, "points_a": 0, "points_b": 10},
    {"score": 0.0, "truncated": 0, "margin": 395, "points_a": 395, "points_b": 0},
    {"score": 2.0, "truncated": 0, "margin": 0, "points_a": 100, "points_b": 100},
    {"score": 0.0, "truncated": 0, "margin": 0, "points_a": 100, "points_b": 100},
])
def test_a_logged_pair_no_match_can_give_is_refused(tmp_path, change):
    """Values each in range but not together: a damaged or hostile log (rounds 0 used to end
    in a ZeroDivisionError, a margin unlike the points in a self-contradicting result)."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    _rewrite(log, 1, change)
    words = (f"{change['rounds']} rounds for two matches" if "rounds" in change
             else "not a pair any match can give|must be")
    with pytest.raises(PairLogError, match=words):
        arena.evaluate(A, B, 2, seed=3, log=log)


def test_a_header_cut_short_starts_the_log_again_but_another_file_is_never_overwritten(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 1, seed=3, log=log)
    header = _lines(log)[0]
    for cut in (30, 0):  # killed while writing the header, or before
        log.write_text(header[:cut])
        assert arena.evaluate(A, B, 2, seed=3, log=log).pairs == 2
        assert len(_lines(log)) == 3
    other = tmp_path / "notes.txt"
    other.write_text("my notes, no newline")
    with pytest.raises(PairLogError, match="no complete header line"):
        arena.evaluate(A, B, 1, seed=3, log=other)
    assert other.read_text() == "my notes, no newline"


def test_long_matches_are_logged_and_read_back(tmp_path):
    # a pair's rounds are bounded by the run's own max_rounds, not by a fixed number
    log = tmp_path / "l.jsonl"
    first = arena.evaluate(A, B, 2, seed=3, target=2000, max_rounds=1000, log=log)
    again = arena.evaluate(A, B, 2, seed=3, target=2000, max_rounds=1000, log=log)
    assert first.as_dict(timing=False) == again.as_dict(timing=False)
    assert first.rounds_per_match > 20


def test_overlong_specs_are_refused_before_any_file_is_written(tmp_path):
    log = tmp_path / "l.jsonl"
    with pytest.raises(ValueError, match="too long for a pair log"):
        PairLog(log, "ckpt:" + "x" * 5000, B, 3, 250, 100, "python")
    assert not log.exists()


def test_a_run_with_worker_processes_resumes_too(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, workers=2, log=log)
    resumed = arena.evaluate(A, B, 4, seed=3, workers=2, log=log)
    assert resumed.as_dict(timing=False) == arena.evaluate(A, B, 4, seed=3).as_dict(timing=False)
    assert [json.loads(line)["pair"] for line in _lines(log)[1:]] == [0, 1, 2, 3]


def test_a_checkpoint_changed_between_sittings_is_refused(tmp_path):
    """The header keeps the SHA-256 of every file a spec loads: the same spec with other weights
    (the file overwritten between sittings) cannot continue the log."""
    from sevenrocks_env.policy import shipped_path

    ckpt, log = tmp_path / "policy.pt", tmp_path / "l.jsonl"
    ckpt.write_bytes(shipped_path().read_bytes())
    spec = f"ckpt:{ckpt}"
    first = arena.evaluate(spec, A, 1, seed=3, log=log)
    header = json.loads(_lines(log)[0])
    assert header["files_a"] is not None and header["files_b"] is None
    assert arena.evaluate(spec, A, 1, seed=3, log=log).as_dict(timing=False) == \
        first.as_dict(timing=False)                      # same bytes: resumes
    data = torch.load(ckpt, weights_only=True)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name] + 0.01
    torch.save(data, ckpt)
    with pytest.raises(PairLogError, match="agent A .* was played with files of SHA-256 "
                                           f"{header['files_a'][:16]}.*other weights"):
        arena.evaluate(spec, A, 2, seed=3, log=log)
    # a policy search reads the same file, so it has the same fingerprint
    assert files_fingerprint(f"search:policy={ckpt},samples=2") == files_fingerprint(spec)
    assert files_fingerprint(spec) != header["files_a"] and files_fingerprint(A) is None


def test_a_log_from_before_fingerprints_resumes_rule_agents_but_not_checkpoints(tmp_path):
    from sevenrocks_env.policy import shipped_path

    rules_log, ckpt_log = tmp_path / "rules.jsonl", tmp_path / "ckpt.jsonl"
    for log, spec in ((rules_log, A), (ckpt_log, f"ckpt:{shipped_path()}")):
        arena.evaluate(spec, B, 1, seed=3, log=log)
        lines = _lines(log)
        header = json.loads(lines[0])
        del header["files_a"], header["files_b"]          # as the first version wrote it
        log.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert arena.evaluate(A, B, 2, seed=3, log=rules_log).as_dict(timing=False) == \
        arena.evaluate(A, B, 2, seed=3).as_dict(timing=False)
    with pytest.raises(PairLogError, match="does not record what its files held"):
        arena.evaluate(f"ckpt:{shipped_path()}", B, 2, seed=3, log=ckpt_log)


def _rewrite(log, index: int, change: dict) -> None:
    """Change the values of line ``index`` of a pair log."""
    lines = _lines(log)
    entry = json.loads(lines[index])
    entry.update(change)
    lines[index] = json.dumps(entry)
    log.write_text("\n".join(lines) + "\n")


def test_a_pair_of_two_truncated_matches_is_read_back(tmp_path):
    """max_rounds=1 and a target out of reach: both matches are cut after one round, so the
    pair has 2 * max_rounds rounds, the most a pair can have; its log still reads back."""
    log = tmp_path / "l.jsonl"
    first = arena.evaluate(A, B, 1, seed=3, target=2000, max_rounds=1, log=log)
    assert json.loads(_lines(log)[1])["rounds"] == 2 and first.truncated == 2
    again = arena.evaluate(A, B, 1, seed=3, target=2000, max_rounds=1, log=log)
    assert again.as_dict(timing=False) == first.as_dict(timing=False)


@pytest.mark.parametrize("line, change, message", [
    # each change breaks exactly one rule (max_rounds is 100), named by its message
    (1, {"score": 1.0, "truncated": 1, "rounds": 150, "round_wins_a": 0.0},
     "score 1.0 with 1 truncated matches"),
    (1, {"score": 0.0, "truncated": 2, "rounds": 200, "round_wins_a": 0.0,
         "decisions": [100, 100]},
     "two truncated matches score 1/2 each"),
    (1, {"score": 0.5, "truncated": 1, "rounds": 100, "round_wins_a": 0.0},
     "100 rounds for two matches, 1 cut at 100"),
    (2, {"pair": True}, "pair 1 expected"),  # == 1 in Python, but not the pair number
])
def test_each_rule_of_a_logged_pair_is_checked_on_its_own(tmp_path, line, change, message):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    _rewrite(log, line, change)
    with pytest.raises(PairLogError, match=message):
        arena.evaluate(A, B, 2, seed=3, log=log)


def test_points_beyond_the_most_a_round_can_move_are_refused(tmp_path):
    """R5: at most 14 placements of 35 points a round (490), with a margin that agrees."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    first = json.loads(_lines(log)[1])
    points_a = 490 * first["rounds"] + 5
    _rewrite(log, 1, {"points_a": points_a, "margin": points_a - first["points_b"]})
    with pytest.raises(PairLogError, match="points beyond 490 a round"):
        arena.evaluate(A, B, 2, seed=3, log=log)


def test_a_long_cut_short_last_line_leaves_no_garbage(tmp_path):
    """A partial last line longer than the pair line written in its place is cut away."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 3, seed=3, log=log)
    lines = _lines(log)
    log.write_text("\n".join(lines[:3]) + "\n" + '{"pair": 2, "x": "' + "y" * 2000)
    again = arena.evaluate(A, B, 3, seed=3, log=log)
    assert again.as_dict(timing=False) == arena.evaluate(A, B, 3, seed=3).as_dict(timing=False)
    text = log.read_text()
    assert text.endswith("\n") and text.count("\n") == 4
    assert [json.loads(line)["pair"] for line in text.splitlines()[1:]] == [0, 1, 2]


def test_a_header_of_exactly_max_line_bytes_is_refused(tmp_path):
    """The header line and its newline must fit in MAX_LINE, or the log could not be read back."""
    def header_length(n):
        return len(json.dumps(PairLog(tmp_path / "h", "x" * n, B, 3, 250, 100, "python").header))
    n = MAX_LINE - header_length(0)
    assert header_length(n - 1) == MAX_LINE - 1
    with pytest.raises(ValueError, match="too long"):
        PairLog(tmp_path / "l.jsonl", "x" * n, B, 3, 250, 100, "python")


def test_a_header_key_this_module_does_not_write_is_refused_by_name(tmp_path):
    """A log of another tool or a newer format is not read as if its extra keys meant nothing;
    the headers every version of this module wrote still read back."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    header, *pairs = _lines(log)
    data = json.loads(header)
    for extra, message in (({"deals": "v2"}, "unknown key 'deals' "),
                           ({"b": 1, "a": 2}, "unknown keys 'a', 'b' ")):
        log.write_text("\n".join([json.dumps({**data, **extra}), *pairs]) + "\n")
        with pytest.raises(PairLogError, match=message + r"\(a log of another tool"):
            arena.evaluate(A, B, 2, seed=3, log=log)
    whole = arena.evaluate(A, B, 3, seed=3).as_dict(timing=False)
    for dropped in (("version",), ("version", "files_a", "files_b")):  # as older versions wrote
        old = {key: value for key, value in data.items() if key not in dropped}
        log.write_text("\n".join([json.dumps(old), *pairs]) + "\n")
        assert arena.evaluate(A, B, 3, seed=3, log=log).as_dict(timing=False) == whole


def test_the_header_records_the_version_but_a_log_of_any_version_resumes(tmp_path):
    from sevenrocks_env import __version__

    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 1, seed=3, log=log)
    header, *pairs = _lines(log)
    data = json.loads(header)
    assert data["version"] == __version__ and list(data)[-1] == "version"
    older = json.dumps({**data, "version": "0.0.1"})
    log.write_text("\n".join([older, *pairs]) + "\n")
    resumed = arena.evaluate(A, B, 2, seed=3, log=log)
    assert resumed.as_dict(timing=False) == arena.evaluate(A, B, 2, seed=3).as_dict(timing=False)
    assert _lines(log)[0] == older  # the version that began the log
    log.write_text("\n".join([json.dumps({**data, "version": 1}), *pairs]) + "\n")
    with pytest.raises(PairLogError, match="version must be a string, got 1"):
        arena.evaluate(A, B, 2, seed=3, log=log)


def test_a_rerun_with_every_pair_in_its_log_says_it_played_none(tmp_path, capsys):
    """It printed "decisions per second 0", as if the agents had been measured at zero."""
    log = tmp_path / "pairs.jsonl"
    command = ["random", "greedy", "--pairs", "2", "--log", str(log), "--no-progress"]
    assert arena_cli.main(command) == 0
    assert "this run played no pair" not in capsys.readouterr().out
    assert arena_cli.main(command) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "decisions per second - (this run played no pair: all came from its --log)" in out


@pytest.mark.parametrize("engine", [[], ["--batched"]])
def test_two_different_agents_under_one_name_are_refused(capsys, engine):
    """``a=heuristic a=greedy`` was played and printed as "a (A) vs a (B)"."""
    assert arena_cli.main(["a=heuristic", "a=greedy", "--pairs", "1", *engine]) == 2
    assert "both agents are named 'a' but differ (heuristic / greedy)" in capsys.readouterr().err
    assert arena_cli.main(["a=greedy", "a=greedy", "--pairs", "1", "--no-progress",
                           *engine]) == 0


def test_a_log_resumes_under_another_spelling_of_the_same_agent(tmp_path):
    """``search:samples=2`` and ``search:win_bonus=50.0, samples=2`` are one agent
    (``agents.spec_text``): the second continues the first's log; another agent does not."""
    log = tmp_path / "l.jsonl"
    once = arena.evaluate("search:samples=2", B, 2, seed=3).as_dict(timing=False)
    arena.evaluate("search:samples=2", B, 1, seed=3, log=log)
    resumed = arena.evaluate("search:win_bonus=50.0, samples=2", B, 2, seed=3, log=log)
    names = ("agent_a", "spec_a")  # (the display name is the spec as given)
    assert {key: value for key, value in resumed.as_dict(timing=False).items()
            if key not in names} == {key: value for key, value in once.items() if key not in names}
    assert len(_lines(log)) == 1 + 2
    assert json.loads(_lines(log)[0])["agent_a"] == "search:samples=2"  # as first written
    with pytest.raises(PairLogError, match="its agent_a is"):
        arena.evaluate("search:samples=3", B, 3, seed=3, log=log)


@pytest.mark.parametrize("engine", [[], ["--batched"]])
def test_a_rerun_with_every_pair_in_its_log_saves_no_speed(tmp_path, capsys, engine):
    """Its ``--json`` said ``"decisions_per_s": 0.0``, a speed no agent had; now ``null``, and a
    sitting that played some pairs keeps a positive figure."""
    log = tmp_path / "pairs.jsonl"
    command = ["random", "greedy", "--pairs", "2", "--log", str(log), "--no-progress", "--json",
               *engine]
    assert arena_cli.main(command) == 0
    assert json.loads(capsys.readouterr().out)["decisions_per_s"] > 0
    assert arena_cli.main(command) == 0
    assert json.loads(capsys.readouterr().out)["decisions_per_s"] is None
    assert arena_cli.main([*command[:3], "3", *command[4:]]) == 0
    assert json.loads(capsys.readouterr().out)["decisions_per_s"] > 0
