"""The research scripts' figures are the arithmetic their tables claim (``benchmarks/ablation.py``,
``agents.py``, ``cut_bias.py``, ``inference_search.py``, ``inference_signal.py``,
``oracle_search.py``, whose printed figures docs/training.md, docs/experiments.md and
docs/agents.md quote): each pairing played with its own pairs, seed and options, each cell
holding its own value, the training run configured as its docstring says, the bias and signal
computed as documented.  No strength is measured: the arenas, the trainer and the searches are
stand-ins that record how they were called (the real pieces run for a match or two where their
arithmetic is what is checked)."""

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from test_benchmarks_tables import ROOT, accepted, script, table_rows, usage_error

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
    walls = {"wall_time": 90.0}
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
    fifth of them, 64-sample search over ``--search-pairs`` on the batched arena."""
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
    assert [saved[o]["spec"] for o in ("heuristic", "greedy", "search")] == [
        "heuristic", "greedy", "search:samples=64"]
    assert table_rows(capsys.readouterr().out, "combined") == [[
        "combined", "`action_scorer=mlp` `action_features=3` `ent_coef=0.03` "
        "`ent_coef_final=0.005`", "1.5", "61.0 % [55.0, 67.0] (12 pairs)",
        "72.0 % [60.0, 80.0] (2 pairs)", "33.0 % [20.0, 45.0] (4 pairs)"]]


def test_ablation_resolves_a_relative_out_for_its_subprocesses(ablation, tmp_path, monkeypatch):
    """The subprocesses run in the repository root: a relative ``--out`` is made absolute."""
    monkeypatch.chdir(tmp_path)
    ablation.walls["wall_time"] = None  # a checkpoint with no wall time: "?"
    ablation.module.main(["--steps", "8192", "--pairs", "5", "--opponents", "greedy",
                          "--out", "rel"])
    command, _ = ablation.fake.trained[0]
    assert f"--set=checkpoint_dir={tmp_path / 'rel' / 'ckpt'}" in command
    arena, _ = ablation.fake.arenas[0]
    checkpoint = tmp_path / "rel" / "ckpt" / "abl_baseline_s1" / "latest.pt"
    assert arena[3] == f"baseline=ckpt:{checkpoint}"
    assert json.loads((tmp_path / "rel" / "abl_baseline_s1.json").read_text())[
        "train_minutes"] is None


def test_ablation_reuses_a_finished_checkpoint_only_with_reuse(ablation, tmp_path, capsys):
    module, fake = ablation.module, ablation.fake
    _checkpoint(tmp_path / "ckpt" / "abl_mlp_s1" / "latest.pt", 16384, 16384)
    argv = ["--variants", "mlp", "--steps", "16384", "--pairs", "5", "--opponents", "heuristic",
            "--out", str(tmp_path)]
    module.main(argv)
    assert len(fake.trained) == 1  # no --reuse: trained again
    module.main([*argv, "--reuse"])
    assert len(fake.trained) == 1 and len(fake.arenas) == 2
    rows = table_rows(capsys.readouterr().out, "mlp")
    assert rows[0] == rows[1] and rows[1][2] == "1.5"  # a reused run's minutes are its own


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
        **{o: {"win_rate": 0.5, "ci95": [0.4, 0.6], "pairs": 1} for o in args.opponents}})
    module.main(["--out", str(tmp_path)])
    args, = seen
    assert (args.variants, args.steps, args.seed, args.pairs, args.search_pairs,
            args.opponents, args.deal_seed) == (["baseline"], 2_000_000, 1, 1000, 100,
                                                ["heuristic", "greedy"], 9001)
    assert len(table_rows(capsys.readouterr().out, "baseline")[0]) == 5
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


# -- inference_signal ----------------------------------------------------------------------------

def test_inference_signal_measures_every_nth_real_choice_of_first_matches(monkeypatch):
    """Each row, recomputed: the seat on turn's real choice, every ``every``-th of its env's first
    match; the share of the hidden tiles each world gives their true owner (relative seat ``k``
    is seat ``turn + k``), uniform and weighted by ``likelihood ** power``, the effective worlds
    and the round's moves so far.  The sampler's first world is the true deal (share 1)."""
    module = script("inference_signal")
    from sevenrocks_env.agents.belief import HandSampler
    from sevenrocks_env.agents.inference import world_weights
    from sevenrocks_env.policy import load_policy
    envs, choices, expected, seeds = [], {}, [], {}

    class Env(module.VectorEnv):
        def __init__(self, *args, **options):
            super().__init__(*args, **options)
            seeds["options"] = options
            envs.append(self)

        def reset(self, seed=None):
            seeds["reset"] = seed
            return super().reset(seed)

        def step(self, actions):
            counts = self.action_mask.sum(1)
            for e in range(self.num_envs):
                if int(self.state.matches[e]) == 0 and int(counts[e]) > 1:
                    choices[e] = choices.get(e, 0) + 1
            return super().step(actions)

    class Sampler:
        def __init__(self, view):
            self.view = view

        def sample_many(self, rng, count):
            if "rng" not in seeds:
                fresh = np.random.default_rng(5).bit_generator.state
                seeds["rng"] = rng.bit_generator.state == fresh
            env, = envs
            on_turn = [e for e in range(env.num_envs) if env.state.hands[
                e, int(env.state.turn[e])] == self.view.hand]
            e, = on_turn
            turn = int(env.state.turn[e])
            assert int(env.state.matches[e]) == 0 and int(env.action_mask[e].sum()) > 1
            assert (choices.get(e, 0) + 1) % 6 == 0  # the 6th, 12th, ... real choice
            hands = env.state.hands[e].tolist()
            truth = tuple(hands[(turn + k) % 4] for k in (1, 2, 3))
            worlds = [truth, *HandSampler(self.view).sample_many(rng, count - 1)]
            share = np.array([sum((w & t).bit_count() for w, t in zip(world, truth))
                              for world in worlds]) / self.view.unseen.bit_count()
            expected.append([e, share, None])
            return worlds

    def likelihoods(searcher, history, env, measured, worlds):
        rows = real(searcher, history, env, measured, worlds)
        for row, e in zip(rows, measured.tolist()):
            entry, = [x for x in expected if x[0] == e and x[2] is None]
            entry[2] = (row, int(history.length[e]))
        return rows

    real = module.play_log_likelihoods
    monkeypatch.setattr(module, "VectorEnv", Env)
    monkeypatch.setattr(module, "HandSampler", Sampler)
    monkeypatch.setattr(module, "play_log_likelihoods", likelihoods)
    sampled, real_sample = [], module.MaskedCategorical.sample
    monkeypatch.setattr(module.MaskedCategorical, "sample",
                        lambda self, generator: sampled.append(generator.initial_seed())
                        or real_sample(self, generator))
    model = load_policy("shipped").model.eval()
    rows = module.measure(model, 2, 3, 5, 0.5, False, 6)
    assert seeds == {"options": {"target": 250, "max_rounds": None, "validate": False},
                     "reset": 5, "rng": True}
    assert sampled and set(sampled) == {5}
    assert len(rows) == len(expected) == sum(n // 6 for n in choices.values()) > 0
    for (e, uniform, weighted, ess, moves), (e2, share, (logl, length)) in zip(rows, expected):
        weights = world_weights(logl, 0.5)
        assert e == e2 and share[0] == 1.0 and len(share) == 3
        assert uniform == pytest.approx(share.mean())
        assert weighted == pytest.approx(float(weights @ share))
        assert ess == pytest.approx(1 / float(weights @ weights)) and moves == length
    # --greedy: the seats play their most probable move, never a sample
    sampled.clear()

    def mode(self):
        raise KeyboardInterrupt  # the first move is all this check needs
    monkeypatch.setattr(module.MaskedCategorical, "mode", mode)
    with pytest.raises(KeyboardInterrupt):
        module.measure(model, 1, 2, 5, 1.0, True, 1000)
    assert sampled == []


def test_inference_signal_reports_the_rows_arithmetic(monkeypatch, capsys):
    module = script("inference_signal")
    calls = []
    rows = [(0, 0.30, 0.40, 10.0, 4), (0, 0.50, 0.45, 20.0, 8), (1, 0.20, 0.50, 30.0, 2),
            (2, 0.40, 0.40, 40.0, 10), (2, 0.10, 0.30, 50.0, 11)]
    monkeypatch.setattr(module, "measure", lambda *args: calls.append(args) or rows)
    monkeypatch.setattr(module, "load_policy", lambda name: SimpleNamespace(
        model=SimpleNamespace(eval=lambda: "model")))
    assert module.main(["--matches", "3", "--samples", "9", "--seed", "8", "--power", "0.5",
                        "--greedy", "--every", "2"]) == 0
    assert calls == [("model", 3, 9, 8, 0.5, True, 2)]
    out = capsys.readouterr().out
    assert table_rows(out, "uniform") == [["uniform (the search's)", "0.300", "9"]]
    assert table_rows(out, "weighted") == [["weighted by the other seats' plays this round",
                                            "0.410", "30.0"]]
    gains = {0: [0.1, -0.05], 1: [0.3], 2: [0.0, 0.2]}
    means = [np.mean(g) for g in gains.values()]
    # three matches: too few for Student's t interval (the arena's rule: four at least)
    assert (f"weighted - uniform: mean +0.110; over the 3 matches' means {np.mean(means):+.3f} "
            "(too few matches for a 95% CI); positive in 60% of the decisions; moves this round "
            "before the decision (all seats, knocks included): 7.0 on average") in out
    module.main([])
    assert calls[-1][1:] == (40, 64, 5, 1.0, False, 5)


# -- cut_bias ------------------------------------------------------------------------------------

def test_cut_bias_refuses_a_policy_file_with_no_value_to_measure(monkeypatch, capsys):
    """The shipped file has neither an oracle critic nor a value head: one usage line before
    any play (the bias is of a value estimate)."""
    from sevenrocks_env.policy_file import shipped_path

    module = script("cut_bias")
    monkeypatch.setattr(module, "CutRecorder", accepted)
    assert "has neither an oracle critic nor a value head" in usage_error(
        module.main, [str(shipped_path()), "--matches", "1", "--steps", "1"], capsys)


def test_cut_bias_summary_is_the_mean_and_its_standard_error():
    summary = script("cut_bias").summary
    # mean 3, std (ddof 1) sqrt(14 / 3) = 2.160, over sqrt(4)
    assert summary(np.array([1.0, 2.0, 3.0, 6.0])) == "+3.000 ± 1.080"
    assert summary(np.zeros(0)) == "-" and summary(np.array([0.5])) == "+0.500 ± nan"


class LowestAction(torch.nn.Module):
    """A policy that plays the lowest legal action (so a continuation is one known line); its V is
    a function of the observation.  It checks that each observation is the view of the seat to
    move: every tile it may play is in that view's hand."""

    def forward(self, obs, mask):
        from sevenrocks_env.observation import decode
        from sevenrocks_env.tiles import KNOCK, decode_action
        for row, legal in zip(obs, mask):
            hand = decode(row.numpy()).hand
            assert all(hand >> decode_action(a)[0] & 1 for a in legal.nonzero().flatten().tolist()
                       if a != KNOCK)
        logits = -1000.0 * torch.arange(mask.shape[1], dtype=torch.float32).expand(mask.shape)
        return logits, None

    def value(self, obs):
        return obs.float()[:, :40].sum(1) / 100


def _line_target(match, seat, margin, value, points_scale, win_reward):
    """The documented target, on the line the lowest legal action plays: the reward from the
    seat's decision to its next real decision plus V there, or to the match's end with R8's
    win reward."""
    from sevenrocks_env.rules import apply_action, legal_actions
    match, ours = match.clone(), seat % 2
    while True:
        change = match.scores[ours] - match.scores[1 - ours] - margin
        if match.over:
            sign = 0 if match.winner is None else (1 if match.winner == ours else -1)
            return points_scale * change + win_reward * sign, sign
        legal = legal_actions(match)
        if len(legal) > 1 and match.turn == seat:
            return points_scale * change + value(match, seat), None
        apply_action(match, min(legal))


def test_cut_bias_continuation_targets_follow_the_seat_to_its_next_real_decision():
    module = script("cut_bias")
    from sevenrocks_env.observation import encode
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from training.critic import hidden_hands
    model = LowestAction()
    rng = np.random.default_rng(0)
    starts = []
    for game in range(3):  # the lowest action's own line, to the match's end: the continuations
        match, line = Match.new(game, target=25), []  # from its last positions reach the end
        while not match.over:
            line.append(match.clone())
            apply_action(match, min(legal_actions(match)))
        for position in line[:-40:7] + line[-6:]:
            starts += [(position, seat, int(rng.integers(-5, 6))) for seat in range(4)]

    def head(match, seat):
        return float(model.value(torch.from_numpy(encode(match, seat)[None]))[0])

    def critic(obs, hands):  # the oracle critic, when the checkpoint has one: V of the hands
        return hands.float().sum(1) / 1000 + obs.float()[:, :40].sum(1) / 100

    def by_critic(match, seat):
        hands = torch.from_numpy(hidden_hands(match, seat)[None])
        obs = torch.from_numpy(encode(match, seat)[None])
        return float(critic(obs, hands)[0])

    for critic_, value in ((None, head), (critic, by_critic)):
        targets = module.continuation_targets(model, critic_, starts, torch.Generator(), 0.02, 3.0)
        lines = [_line_target(m, s, margin, value, 0.02, 3.0) for m, s, margin in starts]
        assert targets == pytest.approx([t for t, _ in lines], abs=1e-5)
    assert {sign for _, sign in lines} >= {None, 1, -1}  # lines to both ends of a match


def _record_cut_bias(monkeypatch, module):
    """The pieces of ``cut_bias.main``'s run, for its figures to be recomputed."""
    seen = {"summaries": [], "continuations": []}

    class Engine(module.CutRecorder):
        def __init__(self, *args):
            super().__init__(*args)
            seen["engine"], seen["engine_args"] = self, args

        def _cut(self, model, buffer, critic=None):
            seen["rewards_before"] = buffer.rewards.copy()  # (the script's own copy is checked)
            super()._cut(model, buffer, critic)

    class Buffer(module.RolloutBuffer):
        def __init__(self, *args):
            super().__init__(*args)
            seen["buffer"] = self

    real_targets, real_summary = module.continuation_targets, module.summary

    def targets(model, critic, starts, generator, points_scale, win_reward):
        seen["continuations"].append((list(starts), generator.initial_seed()))
        seen["samples"] = real_targets(model, critic, starts, generator, points_scale,
                                       win_reward)
        return seen["samples"].copy()

    monkeypatch.setattr(module, "CutRecorder", Engine)
    monkeypatch.setattr(module, "RolloutBuffer", Buffer)
    monkeypatch.setattr(module, "continuation_targets", targets)
    monkeypatch.setattr(module, "summary",
                        lambda bias: seen["summaries"].append(bias.copy()) or real_summary(bias))
    return seen


def test_cut_bias_figures_are_the_documented_estimates_and_groups(monkeypatch, tmp_path, capsys):
    """Recomputed from the engine's state at the cut: old = the reward so far + V(the seat's view
    now); new = what the trainer's cut added (+ its bootstrap, unless the match ended); the target
    the mean of the continuations; the groups by who is to move, relative to the seat (1: the
    left opponent, next to play)."""
    from policy_files import save_policy
    from sevenrocks_env.observation import encode
    from sevenrocks_env.policy import read_checkpoint
    from sevenrocks_env.rules import Match, legal_actions
    from training.critic import OracleCritic, hidden_hands
    torch.manual_seed(0)
    path = save_policy(tmp_path / "run.pt", critic=OracleCritic([16]).state_dict(),
                       config={"target": 30, "points_scale": 0.05, "win_reward": 2.0,
                               "max_rounds": 50})
    module = script("cut_bias")
    seen = _record_cut_bias(monkeypatch, module)
    samples = 3
    assert module.main([str(path), "--matches", "6", "--steps", "40", "--samples", str(samples),
                        "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert seen["engine_args"] == (6, 5, 30, 50, 0.05, 2.0) and len(seen["buffer"].rewards) == 240
    assert torch.initial_seed() == 5
    (starts, generator_seed), = seen["continuations"]
    assert generator_seed == 6
    data = read_checkpoint(str(path))
    critic = OracleCritic([16]).eval()
    critic.load_state_dict(data["critic"])
    states, pending, margins, _ = seen["engine"].before
    before = seen["rewards_before"]
    buffer = seen["buffer"]
    cuts = [(Match.from_state(states[i]), int(seat), int(margins[i, seat]), int(pending[i, seat]))
            for i, seat in np.argwhere(pending >= 0)]
    n = len(cuts)
    assert len(starts) == n * samples and all(  # each cut, with its margin, --samples times
        a[0].to_state() == b[0].to_state() and a[1:] == b[1:]
        for a, b in zip(starts, [c[:3] for c in cuts] * samples))

    def value(match, seat):
        with torch.no_grad():
            return float(critic(torch.from_numpy(encode(match, seat)[None]),
                                torch.from_numpy(hidden_hands(match, seat)[None]))[0])

    old = np.array([0.05 * (m.scores[s % 2] - m.scores[1 - s % 2] - margin) + value(m, s)
                    for m, s, margin, _ in cuts])
    new = np.array([buffer.rewards[k] - before[k]
                    + (0.0 if buffer.dones[k] else buffer.bootstrap[k]) for *_, k in cuts])
    draws = seen["samples"].reshape(samples, n)
    target = draws.mean(0)
    old_bias, new_bias = seen["summaries"][:2]
    assert old_bias == pytest.approx(old - target, abs=1e-5)
    assert new_bias == pytest.approx(new - target, abs=1e-5)
    assert any(buffer.dones[k] for *_, k in cuts) and any(margin for _, _, margin, _ in cuts)
    groups = []
    for m, s, _, _ in cuts:
        relative = (m.turn - s) % 4
        real = len(legal_actions(m)) > 1
        groups.append(["own turn, real choice" if real else "own turn, forced", "left opponent",
                       "partner", "right opponent"][relative])
    groups = np.array(groups)
    own = groups == "own turn, real choice"
    assert own.any() and old[own] == pytest.approx(target[own], abs=1e-5)  # its next decision: now
    assert new[own] == pytest.approx(old[own], abs=1e-5)  # the trainer's cut: V by the critic
    for group in module.GROUPS:  # (one seat of each match in each opponent group: the biases)
        row, = table_rows(out, f"seat to move: {group}")
        sel = groups == group
        assert row[1:] == [str(sel.sum()), module.summary(old_bias[sel]),
                           module.summary(new_bias[sel])]
    left, right = (table_rows(out, f"seat to move: {side}")[0] for side in ("left", "right"))
    assert left[2] != right[2]
    rms, = table_rows(out, "RMS")
    assert rms[1:] == [str(n), f"{np.sqrt((old_bias ** 2).mean()):.3f}",
                       f"{np.sqrt((new_bias ** 2).mean()):.3f}"]
    mc_se = np.sqrt((draws.var(0, ddof=1) / samples).mean() / n)
    header = out.splitlines()[0]
    assert f"its MC standard error (mean over transitions) {mc_se:.3f}" in header
    assert f"target std {target.std():.3f}" in header
    assert "V = the checkpoint's oracle critic" in header


def test_cut_bias_defaults_without_a_config_and_its_bounds(monkeypatch, tmp_path):
    from policy_files import save_policy
    module = script("cut_bias")
    seen = _record_cut_bias(monkeypatch, module)
    path = str(save_policy(tmp_path / "policy.pt"))
    assert module.main([path, "--matches", "1", "--steps", "2", "--samples", "2"]) == 0
    assert seen["engine_args"] == (1, 2024, 250, 60, 0.01, 1.0)
    monkeypatch.setattr(module, "read_checkpoint", accepted)
    # (past them: test_benchmarks_tables.py's test_scripts_bound_their_arguments)
    with pytest.raises(AssertionError, match="accepted"):  # at the bounds: taken
        module.main([path, "--matches", "16", "--steps", "65536", "--samples", "1024"])
