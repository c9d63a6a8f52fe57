"""The research scripts' figures are the arithmetic their tables claim (``benchmarks/ablation.py``,
``agents.py``, ``inference_search.py``, ``oracle_search.py``, whose printed figures
docs/training.md, docs/experiments.md and docs/agents.md quote; ``inference_signal.py`` and
``cut_bias.py``: ``test_research_scripts_bias_audit.py``): each pairing played with its own
pairs, seed and options, each cell holding its own value, the training run configured as its
docstring says.  No strength is measured: the arenas, the trainer and the searches are
stand-ins that record how they were called (the real pieces run for a match or two where their
arithmetic is what is checked)."""

import json
import sys
from types import SimpleNamespace

import pytest
import torch

from script_modules import ROOT
from test_benchmarks_tables import accepted, says_its_machine, script, table_rows, usage_error

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


# -- ablation ------------------------------------------------------------------------------------

class FakeSubprocess:
    """``ablation.subprocess``: the trainer's run is recorded; an arena run answers a JSON result
    that names its own opponent and pairs, so each lands in its own cell."""

    RATES = {"heuristic": (0.61, 0.55, 0.67), "greedy": (0.72, 0.6, 0.8),
             "search:samples=64": (0.33, 0.2, 0.45)}

    DEVNULL = -3

    def __init__(self):
        self.trained, self.arenas = [], []

    def run(self, command, **options):
        if command[1:3] == ["-m", "training.train"]:
            self.trained.append((command, options))
            return SimpleNamespace(stdout="")
        assert command[1:3] == ["-m", "sevenrocks_env.arena"] and options["check"]
        self.arenas.append((command, options))
        rate, low, high = self.RATES[command[4]]
        pairs = int(command[command.index("--pairs") + 1])
        return SimpleNamespace(stdout=json.dumps({"win_rate": rate, "ci95": [low, high],
                                                  "pairs": pairs, "spec": command[4]}))


@pytest.fixture
def ablation(monkeypatch):
    module = script("ablation")
    fake = FakeSubprocess()
    monkeypatch.setattr(module, "subprocess", fake)
    walls = {"wall_time": 90.0, "global_step": 8192}
    import training.checkpoint
    monkeypatch.setattr(training.checkpoint, "load_training_checkpoint", lambda path: walls)
    return SimpleNamespace(module=module, fake=fake, walls=walls)


def _checkpoint(path, steps, global_step, num_matches=64, num_steps=128, **config):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": {"num_matches": num_matches, "num_steps": num_steps,
                           "total_steps": steps, **config}, "global_step": global_step}, path)
    return path


def test_ablation_trains_each_variant_as_documented_and_plays_each_opponent(ablation, tmp_path,
                                                                           capsys):
    """The training: ``--steps`` decisions, no time limit, ``--seed``, the variant's flags; the
    arena: the trained checkpoint as A, ``--deal-seed``, heuristic over ``--pairs``, greedy over a
    fifth of them, 64-sample search over ``--search-pairs`` on the batched arena.  The decisions
    reported are the checkpoint's: 9,000 asked trains 8,192 (one whole rollout)."""
    module, fake = ablation.module, ablation.fake
    out = tmp_path / "abl"
    assert module.main(["--variants", "combined", "--steps", "9000", "--seed", "3",
                        "--deal-seed", "11", "--pairs", "12", "--search-pairs", "4",
                        "--opponents", "heuristic", "greedy", "search", "--out", str(out)]) == 0
    (command, options), = fake.trained
    assert command[:6] == [sys.executable, "-m", "training.train", "--config",
                           str(ROOT / "configs" / "default.yaml"), "--force"]
    name = "abl_combined_s3"
    assert command[6:] == [f"--set={s}" for s in [
        "total_steps=9000", "max_minutes=0", "seed=3", f"run_name={name}", "eval_every=0",
        "final_eval_pairs=10", "progress=false", f"checkpoint_dir={out / 'ckpt'}",
        f"log_dir={out / 'runs'}", "action_scorer=mlp", "action_features=3", "ent_coef=0.03",
        "ent_coef_final=0.005"]]
    assert options["check"] and options["cwd"] == ROOT
    checkpoint = out / "ckpt" / name / "latest.pt"
    tail = ["--json", "--no-progress"]
    assert [command for command, _ in fake.arenas] == [
        [sys.executable, "-m", "sevenrocks_env.arena", f"combined=ckpt:{checkpoint}", spec,
         "--pairs", pairs, "--seed", "11", *tail, *extra]
        for spec, pairs, extra in (("heuristic", "12", []), ("greedy", "2", []),
                                   ("search:samples=64", "4", ["--batched"]))]
    assert all(options["cwd"] == ROOT for _, options in fake.arenas)
    saved = json.loads((out / f"{name}.json").read_text())
    assert saved["train_minutes"] == 1.5 and saved["steps"] == 9000
    assert saved["trained_steps"] == 8192  # the checkpoint's global_step, not --steps
    assert [saved[o]["spec"] for o in ("heuristic", "greedy", "search")] == [
        "heuristic", "greedy", "search:samples=64"]
    printed = capsys.readouterr().out
    assert printed.startswith("9,000 decisions asked per variant (the trainer stops at the last "
                              "whole rollout: the decisions column is what each trained)")
    assert "| variant | flags | train min | decisions | vs heuristic [95% CI] |" in printed
    assert table_rows(printed, "combined") == [[
        "combined", "`action_scorer=mlp` `action_features=3` `ent_coef=0.03` "
        "`ent_coef_final=0.005`", "1.5", "8,192", "61.0 % [55.0, 67.0] (12 pairs)",
        "72.0 % [60.0, 80.0] (2 pairs)", "33.0 % [20.0, 45.0] (4 pairs)"]]


def test_ablation_resolves_a_relative_out_for_its_subprocesses(ablation, tmp_path, monkeypatch):
    """The subprocesses run in the repository root: a relative ``--out`` is made absolute."""
    monkeypatch.chdir(tmp_path)
    ablation.walls.update(wall_time=None, global_step=None)  # neither recorded: "?"
    ablation.module.main(["--steps", "8192", "--pairs", "5", "--opponents", "greedy",
                          "--out", "rel"])
    command, _ = ablation.fake.trained[0]
    assert f"--set=checkpoint_dir={tmp_path / 'rel' / 'ckpt'}" in command
    arena, _ = ablation.fake.arenas[0]
    checkpoint = tmp_path / "rel" / "ckpt" / "abl_baseline_s1" / "latest.pt"
    assert arena[3] == f"baseline=ckpt:{checkpoint}"
    saved = json.loads((tmp_path / "rel" / "abl_baseline_s1.json").read_text())
    assert saved["train_minutes"] is None and saved["trained_steps"] is None


def test_ablation_reuses_a_finished_checkpoint_only_with_reuse(ablation, tmp_path, capsys):
    module, fake = ablation.module, ablation.fake
    _checkpoint(tmp_path / "ckpt" / "abl_mlp_s1" / "latest.pt", 16384, 16384)
    ablation.walls["global_step"] = 16384
    argv = ["--variants", "mlp", "--steps", "16384", "--pairs", "5", "--opponents", "heuristic",
            "--out", str(tmp_path)]
    module.main(argv)
    assert len(fake.trained) == 1  # no --reuse: trained again
    module.main([*argv, "--reuse"])
    assert len(fake.trained) == 1 and len(fake.arenas) == 2
    rows = table_rows(capsys.readouterr().out, "mlp")
    # a reused run's minutes and decisions are its own (its checkpoint's record)
    assert rows[0] == rows[1] and rows[1][2:4] == ["1.5", "16,384"]


def test_ablation_trained_for_wants_the_run_of_these_steps(tmp_path):
    trained_for = script("ablation")._trained_for
    path = tmp_path / "latest.pt"
    assert not trained_for(path, 8192)  # no file
    # 10,000 decisions in rollouts of 64 x 128 = 8,192: the trainer stops at 8,192
    assert trained_for(_checkpoint(path, 10000, 8192), 10000)
    assert not trained_for(_checkpoint(path, 10000, 10000), 10000)
    assert not trained_for(_checkpoint(path, 10000, 8192), 9000)  # another run's steps
    assert not trained_for(_checkpoint(path, 10000, 8192, num_steps=0), 10000)
    assert not trained_for(_checkpoint(path, 10000, 64 * (10000 // 64)), 10000)  # batch 64


def test_ablation_defaults_are_the_documented_run(monkeypatch, tmp_path, capsys):
    module = script("ablation")
    seen = []
    monkeypatch.setattr(module, "run", lambda variant, args: seen.append(args) or {
        "variant": variant, "flags": [], "train_minutes": 1.0, "steps": args.steps,
        "trained_steps": 1_998_848,
        **{o: {"win_rate": 0.5, "ci95": [0.4, 0.6], "pairs": 1} for o in args.opponents}})
    module.main(["--out", str(tmp_path)])
    args, = seen
    assert (args.variants, args.steps, args.seed, args.pairs, args.search_pairs,
            args.opponents, args.deal_seed) == (["baseline"], 2_000_000, 1, 1000, 100,
                                                ["heuristic", "greedy"], 9001)
    assert len(table_rows(capsys.readouterr().out, "baseline")[0]) == 6
    # (its bounds: test_benchmarks_tables.py's test_scripts_bound_their_arguments)


# -- agents --------------------------------------------------------------------------------------

class FakeArena:
    """``agents.evaluate``: each pairing answers its own, distinct figures."""

    def __init__(self):
        self.played = []

    def __call__(self, a, b, pairs, seed, workers, **options):
        k = len(self.played)
        self.played.append((a, b, pairs, seed, workers, options))
        return SimpleNamespace(
            agent_a=a.split("=")[0], agent_b=b.split("=")[0], pairs=pairs,
            win_rate=0.6 + 0.1 * k, ci95=(0.5 + 0.1 * k, 0.7 + 0.1 * k), mean_margin=3.0 + k,
            points_per_round=(2.0 + k, 1.0), round_win_rate=0.55, rounds_per_match=4.0 + k,
            seconds_per_decision=(0.001 * (2 * k + 1), 0.001 * (2 * k + 2)))


def test_agents_plays_every_pairing_once_and_reports_each_figure_in_its_cell(monkeypatch,
                                                                          capsys):
    module = script("agents")
    arena, fitted = FakeArena(), []
    monkeypatch.setattr(module, "evaluate", arena)

    def bradley_terry(names, results):
        fitted.append((list(names), dict(results)))
        return [{"agent": names[0], "rating": -50.0, "stderr": 7.0, "one_sided": ""},
                {"agent": names[1], "rating": 20.0, "stderr": 9.0, "one_sided": ""},
                {"agent": names[2], "rating": 300.0, "stderr": 0.0,
                 "one_sided": "won every pair"}]
    monkeypatch.setattr(module, "bradley_terry", bradley_terry)
    names = ["random", "greedy", "s=search:samples=2"]
    assert module.main(["--agents", *names, "--pairs", "10", "--search-pairs", "3",
                        "--seed", "7", "--workers", "3"]) == 0
    assert [p[:5] for p in arena.played] == [("random", "greedy", 10, 7, 3),
                                             ("random", names[2], 3, 7, 3),
                                             ("greedy", names[2], 3, 7, 3)]
    # the fit gets A's wins (win rate x pairs) out of the pairs, by the pairing's indices, and
    # each agent by its label (the name of a name=spec), as the results table names it
    labels = ["random", "greedy", "s"]
    assert fitted == [(labels, {(0, 1): (pytest.approx(6.0), 10), (1, 2): (pytest.approx(2.4), 3),
                                (0, 2): (pytest.approx(2.1), 3)})]
    out = capsys.readouterr().out
    assert says_its_machine(out.splitlines()[0])  # the machine, before any pairing
    assert table_rows(out, "`random` | `greedy`") == [[
        "`random`", "`greedy`", "10", "0.600 [0.500, 0.700]", "+3.0", "2.0 / 1.0", "0.550",
        "4.00"]]
    assert table_rows(out, "`greedy` | `s`") == [[
        "`greedy`", "`s`", "3", "0.800 [0.700, 0.900]", "+5.0", "4.0 / 1.0", "0.550", "6.00"]]
    ratings = [row for row in table_rows(out, "`") if len(row) == 3]
    # by rating, highest first; ms a decision: each pairing's mean weighted by its pairs
    assert ratings == [
        ["`s`", f"{1e3 * (0.004 * 3 + 0.006 * 3) / 6:.3f}", ">= +300 (set by the prior)"],
        ["`greedy`", f"{1e3 * (0.002 * 10 + 0.005 * 3) / 13:.3f}", "+20 ± 9 (1 s.e.)"],
        ["`random`", f"{1e3 * (0.001 * 10 + 0.003 * 3) / 13:.3f}", "-50 ± 7 (1 s.e.)"]]


def test_agents_defaults_are_the_documented_table(monkeypatch, capsys):
    module = script("agents")
    arena = FakeArena()
    monkeypatch.setattr(module, "evaluate", arena)
    monkeypatch.setattr(module, "bradley_terry", lambda names, results: [])
    module.main([])
    default = ["random", "greedy", "heuristic", "search"]
    assert [p[:5] for p in arena.played] == [
        (default[i], default[j], 25 if j == 3 else 1000, 0, 2)
        for i in range(4) for j in range(i + 1, 4)]


@pytest.mark.parametrize("agents, words", [
    (["random"], "give at least two different agents"),
    (["random", "random"], "give at least two different agents"),
    (["random", "x=random", "x=greedy"], "give at least two different agents"),  # label x twice
    (["random", "bogus"], "--agents: unknown agent spec 'bogus'"),
])
def test_agents_refuses_agents_before_the_first_pairing(monkeypatch, capsys, agents, words):
    module = script("agents")
    monkeypatch.setattr(module, "evaluate", accepted)
    assert words in usage_error(module.main, ["--agents", *agents], capsys)


# -- inference_search and oracle_search ----------------------------------------------------------

class FakeBatchedArena:
    """``evaluate_batched``: records each pairing; each answers its own figures and, for the
    inference search, its worlds (``worlds``: per pairing, effective worlds and decisions)."""

    def __init__(self, worlds=()):
        self.played, self.worlds = [], list(worlds)

    def __call__(self, a, b, pairs, seed, target, batch, **options):
        k = len(self.played)
        self.played.append(SimpleNamespace(a=a, b=b, pairs=pairs, seed=seed, target=target,
                                           batch=batch, options=options))
        if k < len(self.worlds):
            a.effective_worlds += self.worlds[k][0]
            a.decisions_weighed += self.worlds[k][1]
        return SimpleNamespace(pairs=pairs, win_rate=0.6 + 0.1 * k,
                               ci95=(0.5 + k / 10, 0.7 + k / 10), mean_margin=12.0 + k,
                               cpu_seconds_per_decision=(0.002, 0.0005 + k / 1e3))


def test_inference_search_plays_its_settings_against_each_opponent(monkeypatch, capsys):
    module = script("inference_search")
    arena = FakeBatchedArena(worlds=[(30.0, 10), (10.0, 10)])
    monkeypatch.setattr(module, "evaluate_batched", arena)
    assert module.main(["--pairs", "7", "--seed", "5", "--samples", "3", "--candidates", "6",
                        "--power", "0.5", "--target", "90", "--batch", "16",
                        "--against", "plain", "--against", "greedy"]) == 0
    first, second = arena.played
    agent = first.a
    assert second.a is agent and agent.power == 0.5 and agent.candidates == 6
    assert agent.searcher.samples == 3 and first.b is agent.searcher and second.b == "greedy"
    assert [(p.pairs, p.seed, p.target, p.batch) for p in arena.played] == [(7, 5, 90, 16)] * 2
    out = capsys.readouterr().out
    assert table_rows(out, "search:policy") == [[
        "search:policy=shipped,samples=3", "7", "0.600 [0.500, 0.700]", "+12.0", "2.0 / 0.5", "0"]]
    assert table_rows(out, "greedy") == [["greedy", "7", "0.700 [0.600, 0.800]", "+13.0",
                                          "2.0 / 1.5", "0"]]
    # (30 + 10) effective worlds over (10 + 10) decisions: each pairing's own, counted once
    assert "mean over 20 decisions: 2.0 of 6 weighted" in out


def test_inference_search_defaults_and_its_power_zero(monkeypatch, capsys):
    module = script("inference_search")
    arena = FakeBatchedArena()
    monkeypatch.setattr(module, "evaluate_batched", arena)
    module.main([])
    played, = arena.played
    assert (played.b, played.pairs, played.seed, played.target, played.batch) == (
        "search:samples=64", 400, 902, module.DEFAULT_TARGET, 256)
    assert played.a.power == 1.0 and played.a.searcher.samples == 64
    assert "mean over 0 decisions: 0.0 of 64 weighted" in capsys.readouterr().out
    # power 0 (uniform weights: the plain search's worlds) and a single candidate are taken
    module.main(["--power", "0", "--samples", "1", "--candidates", "1"])
    assert arena.played[-1].a.power == 0.0 and arena.played[-1].a.candidates == 1


def test_oracle_search_plays_the_oracle_against_both_searches_with_its_settings(monkeypatch,
                                                                              capsys):
    module = script("oracle_search")
    arena = FakeBatchedArena()
    monkeypatch.setattr(module, "evaluate_batched", arena)
    assert module.main(["--pairs", "6", "--seed", "4", "--samples", "3", "--target", "70",
                        "--batch", "8"]) == 0
    first, second = arena.played
    assert isinstance(first.a, module.OracleSearch) and isinstance(second.a, module.OracleSearch)
    searcher = first.a.agent
    assert second.a.agent is searcher and searcher.samples == 3
    assert first.b is searcher and second.b == "search:samples=64"
    assert [(p.pairs, p.seed, p.target, p.batch) for p in arena.played] == [(6, 4, 70, 8)] * 2
    out = capsys.readouterr().out
    assert table_rows(out, "search") == [
        ["search:policy=shipped,samples=3", "6", "0.600 [0.500, 0.700]", "+12.0", "0"],
        ["search:samples=64", "6", "0.700 [0.600, 0.800]", "+13.0", "0"]]
    module.main([])
    default = arena.played[-1]
    assert (default.pairs, default.seed, default.target, default.a.agent.samples) == (
        200, 777, module.DEFAULT_TARGET, 64)


class ScoringStandIn:
    """The oracle's search: records the decisions it scores; action ``a`` scores ``-(a - 9)^2``
    (the best legal action is the one nearest 9)."""

    def __init__(self):
        self.decisions = []

    def rounds(self, view):
        return 3 + view.hand.bit_count()

    def scores(self, observations, masks, decisions):
        self.decisions += decisions
        return [[-(a - 9) ** 2 for a in d.legal] for d in decisions]


def test_oracle_search_scores_the_true_hands_and_plays_the_best_action():
    module = script("oracle_search")
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.observation import decode
    env = VectorEnv(4, validate=False)
    env.reset(3)
    stand_in = ScoringStandIn()
    envs = torch.arange(4)
    context = {"seed": 3, "coordinate": torch.tensor([0, 1, 2, 3]),
               "moves": torch.zeros(4, dtype=torch.long)}
    chosen = module.OracleSearch(stand_in).actions(env, envs, context)
    masks = env.action_mask
    for e, decision in enumerate(stand_in.decisions):
        seat = int(env.current_seat[e])
        hands = env.state.hands[e].tolist()
        assert decision.hidden == [(hands[(seat + 1) % 4], hands[(seat + 2) % 4],
                                    hands[(seat + 3) % 4])]
        legal = masks[e].nonzero().flatten().tolist()
        assert decision.legal == legal and len(decision.streams) == 1
        assert decision.rounds == 3 + decode(env.observation[e].numpy()).hand.bit_count()
        assert int(chosen[e]) == min(legal, key=lambda a: ((a - 9) ** 2, a))
    streams = [d.streams[0] for d in stand_in.decisions]
    assert len(set(streams)) == 4  # each pair's own stream, at the same move
    again = ScoringStandIn()
    module.OracleSearch(again).actions(env, envs, context)
    assert [d.streams[0] for d in again.decisions] == streams  # reproducible
    other = dict(context, seed=4)
    module.OracleSearch(again).actions(env, envs, other)
    assert all(a != b for a, b in zip(streams, (d.streams[0] for d in again.decisions[4:])))
