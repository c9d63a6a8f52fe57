"""Mutation audit of the day's later changes (session 59, second part): the checks and texts
that survived their mutants -- ``benchmarks/algorithms.py``'s policy file per algorithm, the
numbers ``--reuse`` takes from run.json and the run it scores, ``train_speed.py``'s option
names, a search agent's spec name, the web app's answer to any unexpected failure and a
``self`` among the single-agent env's opponents."""

from __future__ import annotations

import json

import pytest

from script_modules import benchmark
from test_benchmarks_tables import usage_error

TAG = "8192/points"
NUMBERS = {"env_steps": 8192, "train_s": 12.5, "process_s": 20.0, "tag": TAG}


@pytest.fixture(scope="module")
def bench():
    return benchmark("algorithms")


# -- benchmarks/algorithms.py: the policy file a run in --out saved --------------------------

@pytest.mark.parametrize("algo, option", [
    ("sb3-heuristic", "--save"), ("rllib", "--export"), ("openspiel-dqn", "--save")])
def test_the_file_scored_is_the_file_the_training_command_writes(bench, tmp_path, monkeypatch,
                                                                 algo, option):
    """``artifact`` names the file each trainer was told to write: a --reuse'd run scores the
    policy its own training saved (``rllib``'s ``policy.pt``, the DQN's ``q_network.pt``)."""
    commands = []

    def run(cmd, log, env=None):
        commands.append(cmd)
        raise RuntimeError("stop here")

    monkeypatch.setattr(bench, "_run", run)
    out = tmp_path / f"{algo}_seed1"
    with pytest.raises(RuntimeError, match="stop here"):
        bench.train_one(algo, 1, 8192, out, "python")
    written = commands[0][commands[0].index(option) + 1]
    prefix = {"sb3-heuristic": "sb3", "rllib": "ckpt", "openspiel-dqn": "osdqn"}[algo]
    assert bench.artifact(algo, out) == f"{prefix}:{written}"
    assert written.startswith(str(out))


def test_an_unknown_algorithm_has_no_policy_file(bench, tmp_path):
    with pytest.raises(ValueError, match="unknown algorithm 'ppo'; choose from"):
        bench.artifact("ppo", tmp_path)


@pytest.mark.parametrize("bad", [
    {"env_steps": True}, {"env_steps": -1}, {"train_s": -0.5}, {"process_s": 1e9}])
def test_run_json_numbers_out_of_range_are_not_reused(bench, tmp_path, bad):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({**NUMBERS, **bad}))
    assert bench.reused_run(saved, TAG) is None


def test_run_json_numbers_at_their_bounds_are_reused(bench, tmp_path):
    """0 learner decisions, 0 seconds: numbers a run can measure, not a broken file."""
    saved = tmp_path / "run.json"
    numbers = {**NUMBERS, "env_steps": 0, "train_s": 0, "process_s": 0.0}
    saved.write_text(json.dumps({**numbers, "agent": "ckpt:/elsewhere.pt"}))
    assert bench.reused_run(saved, TAG) == numbers


@pytest.mark.parametrize("text", ["[1, 2]", "null", "8192"])
def test_a_run_json_that_is_not_an_object_is_not_reused(bench, tmp_path, text):
    saved = tmp_path / "run.json"
    saved.write_text(text)
    assert bench.reused_run(saved, TAG) is None


def _folder(tmp_path, with_policy: bool):
    out = tmp_path / "alg"
    folder = out / "ours_seed1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({**NUMBERS, "agent": "ckpt:/elsewhere.pt"}))
    if with_policy:
        policy = out / "ckpt" / "ours_seed1" / "latest.pt"
        policy.parent.mkdir(parents=True)
        policy.write_bytes(b"")
    return out, folder


def _scores(calls):
    def evaluate_run(run, pairs, eval_seed):
        calls.append((dict(run), pairs, eval_seed))
        return {o: {"win_rate": 0.5, "pairs": pairs, "ci95": [0.4, 0.6], "mean_margin": 0.0}
                for o in ("greedy", "heuristic")}
    return evaluate_run


ARGV = ["--algos", "ours", "--seeds", "1", "--pairs", "3", "--budget", "8192",
        "--eval-seed", "9"]


def test_reuse_scores_the_folder_s_own_policy_with_run_json_s_numbers(bench, tmp_path,
                                                                      monkeypatch, capsys):
    out, folder = _folder(tmp_path, with_policy=True)
    calls = []
    monkeypatch.setattr(bench, "train_one", lambda *a: pytest.fail("trained again"))
    monkeypatch.setattr(bench, "evaluate_run", _scores(calls))
    results = tmp_path / "runs.json"
    assert bench.main([*ARGV, "--out", str(out), "--reuse", "--json", str(results)]) == 0
    agent = f"ckpt:{out.resolve() / 'ckpt' / 'ours_seed1' / 'latest.pt'}"
    run, pairs, eval_seed = calls[0]
    assert (run["agent"], run["env_steps"], run["train_s"], pairs, eval_seed) == \
        (agent, 8192, 12.5, 3, 9)
    saved = json.loads(results.read_text())
    assert saved[0]["eval_seed"] == 9 and saved[0]["agent"] == agent
    assert "the same 3 duplicate pairs (deal seed 9) per opponent" in capsys.readouterr().out


def test_without_reuse_a_run_trains_again_even_over_a_reusable_one(bench, tmp_path,
                                                                   monkeypatch):
    out, folder = _folder(tmp_path, with_policy=True)
    trained, calls = [], []

    def train_one(algo, seed, budget, where, rllib_python):
        trained.append(where)
        return {"agent": "ckpt:new.pt", "env_steps": 8200, "train_s": 3.0, "process_s": 4.0}

    monkeypatch.setattr(bench, "train_one", train_one)
    monkeypatch.setattr(bench, "evaluate_run", _scores(calls))
    assert bench.main([*ARGV, "--out", str(out)]) == 0
    assert trained == [folder.resolve()] and calls[0][0]["env_steps"] == 8200
    assert json.loads((folder / "run.json").read_text())["env_steps"] == 8200


def test_a_reused_run_without_its_policy_file_says_so(bench, tmp_path, monkeypatch, capsys):
    out, folder = _folder(tmp_path, with_policy=False)
    monkeypatch.setattr(bench, "evaluate_run", lambda *a: pytest.fail("scored"))
    assert bench.main([*ARGV, "--out", str(out), "--reuse"]) == 2
    err = capsys.readouterr().err
    assert f"ours seed 1: --reuse: {folder.resolve() / 'run.json'} is there but not the " \
           "policy file" in err and "run without --reuse to train it again" in err


def test_a_policy_file_that_cannot_be_read_is_one_line_and_status_2(bench, tmp_path,
                                                                    monkeypatch, capsys):
    out, _ = _folder(tmp_path, with_policy=True)

    def unreadable(*args):
        raise PermissionError("latest.pt: permission denied")

    monkeypatch.setattr(bench, "evaluate_run", unreadable)
    assert bench.main([*ARGV, "--out", str(out), "--reuse"]) == 2
    assert "error: ours seed 1: latest.pt: permission denied" in capsys.readouterr().err


# -- benchmarks/train_speed.py: each refusal under the option that caused it ------------------

def test_train_speed_checks_every_sized_option_by_its_own_name(capsys):
    train_speed = benchmark("train_speed")
    assert "error: --steps: num_steps: Input should be less than or equal to" in usage_error(
        train_speed.main, ["--matches", "4", "--steps", "99999999999"], capsys)


@pytest.mark.parametrize("argv, plain", [
    (["--matches", "4", "--set", "bogus_key=1"], "bogus_key"),
    (["--config", "no/such.yaml", "--matches", "4"], "no/such.yaml"),
    (["--set", "num_matches=65536", "--steps", "65536"], "num_matches * num_steps"),
])
def test_train_speed_names_no_option_for_another_s_refusal(capsys, argv, plain):
    """A refusal of what --set or --config says is not put under --matches/--steps."""
    train_speed = benchmark("train_speed")
    line = usage_error(train_speed.main, argv, capsys)
    assert plain in line
    assert "--matches" not in line and "--steps" not in line


def test_train_speed_s_matches_and_a_set_num_matches_together_are_refused(
        monkeypatch, one_torch_thread, capsys):
    """(--matches won over --set num_matches without a word; session 60 refuses the two.)"""
    train_speed = benchmark("train_speed")
    sizes = []

    def measure(cfg, fraction, rollouts, engine_class):
        sizes.append((cfg.num_matches, cfg.num_steps))
        raise SystemExit(0)

    monkeypatch.setattr(train_speed, "measure", measure)
    with pytest.raises(SystemExit) as stopped:
        train_speed.main(["--set", "num_matches=4", "--matches", "8", "--set", "num_steps=2",
                          "--engines", "python"])
    assert stopped.value.code == 2 and sizes == []
    assert "--set num_matches and --matches both give num_matches" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train_speed.main(["--matches", "8", "--set", "num_steps=2", "--engines", "python"])
    assert sizes == [(8, 2)]


# -- agents: a search agent's spec name ----------------------------------------------------

def test_a_policy_search_s_name_keeps_its_rollout():
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    from sevenrocks_env.policy import PolicyNet
    agent = PolicySearchAgent(PolicyNet([8]), samples=2, rollout="sample")
    assert agent.name == "search:policy=net,samples=2,rollout=sample"


def test_a_search_s_name_writes_its_parameters_in_the_spec_s_order():
    from sevenrocks_env.agents.search import SearchAgent
    from sevenrocks_env.agents.spec_text import canonical_spec
    agent = SearchAgent(samples=8, time_limit=0.5, rollout="greedy", win_bonus=3)
    assert agent.name == "search:samples=8,time_limit=0.5,rollout=greedy,win_bonus=3"
    assert agent.name == canonical_spec("search:win_bonus=3,rollout=greedy,time_limit=0.5,"
                                        "samples=8")


def test_a_spec_s_string_values_are_written_without_blanks():
    from sevenrocks_env.agents.spec_text import spec_of, value_text
    assert value_text(" greedy ") == "greedy" and value_text(-0.0) == "0"
    from sevenrocks_env.agents.search import SearchAgent
    assert spec_of("search", {"rollout": " greedy "}, SearchAgent) == \
        "search:rollout=greedy"


# -- sb3: the MaskablePPO hint only for a model of another algorithm -------------------------

def test_a_zip_that_is_no_model_at_all_gets_no_other_algorithm_hint(tmp_path):
    pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra")
    import zipfile

    from sevenrocks_env.agents import make_agent
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("hello.txt", "not a model")
    with pytest.raises(ValueError, match="cannot load as a MaskablePPO model") as error:
        make_agent(f"sb3:{other}")
    assert "another algorithm" not in str(error.value) and "ckpt:PATH" not in str(error.value)


# -- single_agent: 'self' among the opponents, however spaced ------------------------------

@pytest.mark.parametrize("opponents", [" self ", ("heuristic", "self\n")])
def test_a_spaced_self_opponent_gets_the_partner_hint(opponents):
    from sevenrocks_env.single_agent import SingleAgentEnv
    with pytest.raises(ValueError, match="'self' is for the partner only"):
        SingleAgentEnv(opponents=opponents)


# -- benchmarks/best_response.py: a --smoke row says its target ------------------------------

def test_a_smoke_row_says_its_own_target():
    row = benchmark("best_response").row(
        {"opponent": "heuristic", "smoke": True, "target": 60, "steps": 256, "seed": 3,
         "pairs": 2, "deal_seed": 11, "train_minutes": 0.5,
         "arena": {"ci95": [0.1, 0.9], "win_rate": 0.5, "mean_margin": 1.0}})
    assert "| heuristic | scratch (--smoke, target 60) | 256 |" in row


def test_a_full_run_s_row_says_no_smoke():
    row = benchmark("best_response").row(
        {"opponent": "heuristic", "smoke": False, "target": 500, "steps": 256, "seed": 3,
         "pairs": 2, "deal_seed": 11, "train_minutes": 0.5, "init": "shipped",
         "arena": {"ci95": [0.1, 0.9], "win_rate": 0.5, "mean_margin": 1.0}})
    assert "| heuristic | shipped | 256 |" in row and "smoke" not in row


# -- benchmarks/ladder.py: the line under the machine says the seed and the scale ------------

def test_the_ladder_s_seed_line_then_a_blank_line_then_the_table(tmp_path, capsys, one_torch_thread):
    """The blank line between the header lines and the table is kept (the ladder sets one
    torch thread: the fixture restores the count)."""
    ladder = benchmark("ladder")
    assert ladder.main(["--no-play", "--seed", "5", "--scale", "2", "--only", "random",
                        "--out", str(tmp_path)]) == 2  # nothing saved there
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("deal seed 5, pairs x 2 (--scale); --no-play: the saved results")
    assert lines[2] == "" and lines[3].startswith("| A | B |")
