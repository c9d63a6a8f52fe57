"""The speed scripts' figures are the arithmetic their tables claim (``benchmarks/env_speed.py``,
``train_speed.py``; ``arena_speed.py`` and ``search_speed.py``'s in
``test_benchmarks_audit_search.py``, ``vector_speed.py``'s in
``test_benchmarks_audit_vector_rates.py`` and ``_table``):
steps counted, seconds measured and divided, each ratio over the right baseline, each row and
column holding its own value, their options passed on.
No speed is measured: the clocks are fakes (each timed thing takes a known time) and the
measured pieces are stand-ins that record how they were called; the real pieces that count
steps are run for a match or two."""

import sys
from types import SimpleNamespace

import pytest
import torch

from sevenrocks_env import arguments
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.tiles import KNOCK
from script_modules import ROOT
from test_benchmarks_tables import script, table_rows, usage_error

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


class Clock:
    """A ``time`` stand-in read by the scripts: it moves only when a stand-in advances it."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def install_clock(monkeypatch, module) -> Clock:
    clock = Clock()
    monkeypatch.setattr(module, "time", clock)
    return clock


def any_device(monkeypatch):
    """``--device`` takes any name (a GPU's name, on this CPU machine): its passing is checked."""
    monkeypatch.setattr(arguments, "device", lambda text: text)


def _spy_raw_env(monkeypatch, module, attribute="raw_env"):
    """``module.sevenrocks_v0`` with ``attribute`` making real envs whose resets, observations
    and steps are recorded (each step checked legal for the agent to move)."""
    record = {"seeds": [], "steps": 0, "observed": 0, "actions": []}

    def make():
        env = getattr(sevenrocks_v0, attribute)()
        reset, step, observe = env.reset, env.step, env.observe

        def spy_reset(seed=None, **options):
            record["seeds"].append(seed)
            return reset(seed=seed, **options)

        def spy_observe(agent):
            record["observed"] += 1
            return observe(agent)

        def spy_step(action):
            if action is not None:
                assert observe(env.agent_selection)["action_mask"][action]
                record["steps"] += 1
            record["actions"].append(action)
            return step(action)
        env.reset, env.step, env.observe = spy_reset, spy_step, spy_observe
        return env
    monkeypatch.setattr(module, "sevenrocks_v0", SimpleNamespace(**{attribute: make}))
    return record


# -- env_speed -----------------------------------------------------------------------------------

def test_env_speed_aec_counts_the_legal_steps_and_the_matches_it_dealt(monkeypatch, fake_clocks):
    """Clocks moving 1 s a reading: 2.5 s is matches 0 and 1 in 4 s; less is one match."""
    env_speed = script("env_speed")
    record = _spy_raw_env(monkeypatch, env_speed)
    fake_clocks(env_speed, 1.0, 0.0)
    make = env_speed.sevenrocks_v0.raw_env
    steps, matches, elapsed = env_speed.aec_random_play(make, 2.5)
    assert record["seeds"] == [0, 1] and (matches, elapsed) == (2, 4.0)
    assert steps == record["steps"] > 20  # a dead agent's None step is not a step
    record["seeds"].clear()
    assert env_speed.aec_random_play(make, 0.5)[1:] == (1, 3.0)
    assert record["seeds"] == [0]


def test_env_speed_engine_counts_every_action_and_the_placements(monkeypatch, fake_clocks):
    env_speed = script("env_speed")
    fake_clocks(env_speed, 1.0, 0.0)
    played, seeds = [], []
    apply_action, new = env_speed.apply_action, env_speed.Match.new

    def spy_apply(match, action):
        played.append(action)
        return apply_action(match, action)

    def spy_new(seed, **options):
        seeds.append(seed)
        return new(seed, **options)
    monkeypatch.setattr(env_speed, "apply_action", spy_apply)
    monkeypatch.setattr(env_speed, "Match", SimpleNamespace(new=spy_new))
    actions, placements, matches, elapsed = env_speed.engine_random_play(2.5)
    assert seeds == [0, 1] and (matches, elapsed) == (2, 4.0)
    assert actions == len(played) and placements == sum(a != KNOCK for a in played)
    assert 0 < placements < actions  # knocks (forced or chosen) are actions, not placements
    seeds.clear()
    assert env_speed.engine_random_play(0.5)[2:] == (1, 3.0) and seeds == [0]


def test_env_speed_pettingzoo_loop_counts_turns_cycles_and_deals_in_order(monkeypatch,
                                                                          fake_clocks, capsys):
    """Clocks moving 1 ms a reading: one reading a cycle, so cycles = elapsed / 1 ms."""
    env_speed = script("env_speed")
    record = _spy_raw_env(monkeypatch, env_speed, attribute="env")
    fake_clocks(env_speed, 0.001, 0.0)
    turns, cycles, elapsed = env_speed.pettingzoo_performance_benchmark(0.3)
    assert cycles == round(elapsed / 0.001) and turns == len(record["actions"]) == 4 * cycles
    assert len(record["seeds"]) >= 3 and record["seeds"] == list(range(len(record["seeds"])))
    assert f"{turns / elapsed:,.0f} turns per second, {cycles / elapsed:,.0f} cycles per " \
           "second" in capsys.readouterr().out


def _fake_env_speed_parts(env_speed, monkeypatch, makes):
    """Stand-ins for ``env_speed``'s measurements: per repeat, ``makes[make]`` steps/s times
    1, 2, 6 (median 2, mean 3) and matches 10, 30, 20 times its index (median 20 x)."""
    calls = {"aec": [], "engine": [], "pettingzoo": []}

    def aec_random_play(make, seconds):
        calls["aec"].append((make, seconds))
        k = sum(m is make for m, _ in calls["aec"]) - 1
        base, index = makes[make]
        return base * (1, 2, 6)[k], (10, 30, 20)[k] * index, 1.0

    def engine_random_play(seconds):
        calls["engine"].append(seconds)
        k = len(calls["engine"]) - 1
        return (500, 600, 1300)[k], (100, 200, 600)[k], (5, 7, 15)[k], 0.5

    monkeypatch.setattr(env_speed, "aec_random_play", aec_random_play)
    monkeypatch.setattr(env_speed, "engine_random_play", engine_random_play)
    monkeypatch.setattr(env_speed, "pettingzoo_performance_benchmark",
                        lambda seconds: calls["pettingzoo"].append(seconds))
    return calls


def test_env_speed_table_is_the_median_of_each_row_s_own_samples(monkeypatch, capsys):
    pytest.importorskip("pygame")
    from pettingzoo.classic import connect_four_v3
    env_speed = script("env_speed")
    makes = {sevenrocks_v0.env: (1000, 1), sevenrocks_v0.raw_env: (2000, 2),
             connect_four_v3.env: (100, 3), connect_four_v3.raw_env: (400, 4)}
    calls = _fake_env_speed_parts(env_speed, monkeypatch, makes)
    env_speed.main(["--seconds", "0.25", "--repeats", "3"])
    out = capsys.readouterr().out
    assert [make for make, _ in calls["aec"]] == list(makes) * 3
    assert {seconds for _, seconds in calls["aec"]} == {0.25}
    assert calls["engine"] == [0.25] * 3 and calls["pettingzoo"] == [0.25]
    assert table_rows(out, "")[1:] == [
        ["sevenrocks_v0.env() (wrapped)", "2,000 steps", "20.0"],
        ["sevenrocks_v0.raw_env()", "4,000 steps", "40.0"],
        ["engine (rules.Match), all actions", "1,200 actions", "14.0"],
        ["engine (rules.Match), placements only", "400 placements", "14.0"],
        ["pettingzoo connect_four_v3.env() (wrapped)", "200 steps", "60.0"],
        ["pettingzoo connect_four_v3.raw_env()", "800 steps", "80.0"]]
    assert "steps/s ratio, wrapped / wrapped: 10.0x; raw / raw: 5.0x" in out


def test_env_speed_defaults_are_the_usage_line_s(monkeypatch, capsys):
    """``[--seconds 5] [--repeats 3]``."""
    env_speed = script("env_speed")
    calls = _fake_env_speed_parts(env_speed, monkeypatch, {
        sevenrocks_v0.env: (1000, 1), sevenrocks_v0.raw_env: (2000, 2)})
    monkeypatch.setitem(sys.modules, "pettingzoo.classic", None)  # no connect four
    env_speed.main([])
    assert calls["engine"] == [5.0] * 3 and calls["pettingzoo"] == [5.0]
    assert "median of 3 x 5 s per row" in capsys.readouterr().out


# -- train_speed ---------------------------------------------------------------------------------

def _default_config(train_speed, *overrides):
    return train_speed.load_config(str(ROOT / "configs" / "default.yaml"), list(overrides))


def test_train_speed_measure_divides_each_phase_s_seconds_by_its_own_count(monkeypatch):
    """2 rollouts of a 2 x 4 batch: a rollout takes 2 s and plays 12 moves, GAE 0.5 s, the
    batch and the update 1.5 s; the engine had played 100 moves before."""
    train_speed = script("train_speed")
    clock = install_clock(monkeypatch, train_speed)
    seeds, engines, collected = [], [], []

    def build_networks(cfg, device):
        seeds.append(torch.initial_seed())
        return "model", "critic", None, "optimizer"

    class Engine:
        def __init__(self, *positional, **options):
            self.env_steps = 100
            engines.append((positional, options))

        def collect(self, model, buffer, num_steps, critic):
            collected.append((model, num_steps, critic))
            clock.advance(2.0)
            self.env_steps += 12

    def compute_gae(*_):
        clock.advance(0.5)
        return None, None

    def rollout_batch(*_, **__):
        clock.advance(0.25)

    monkeypatch.setattr(train_speed, "build_networks", build_networks)
    monkeypatch.setattr(train_speed, "OpponentPool", lambda names, model: ("pool", names, model))
    monkeypatch.setattr(train_speed, "compute_gae", compute_gae)
    monkeypatch.setattr(train_speed, "rollout_batch", rollout_batch)
    monkeypatch.setattr(train_speed, "ppo_update", lambda *_, **__: clock.advance(1.25))
    monkeypatch.setattr(train_speed, "BatchedSelfPlayEngine", Engine)
    cfg = _default_config(train_speed, "num_matches=2", "num_steps=4", "seed=5")
    row = train_speed.measure(cfg, 0.0, 2, type("PythonEngine", (Engine,), {}))
    assert row == {"rollout decisions/s": 4.0, "env steps/s (all moves)": 6.0,
                   "GAE ms / rollout": 500.0, "update s / rollout": 1.5,
                   "training SPS (overall)": 2.0, "updates/s": 0.25,
                   "rollout share of time %": 50.0, "update share of time %": 37.5}
    assert seeds == [5] and collected == [("model", 4, "critic")] * 2
    assert engines == [((2, 5, cfg.target, cfg.max_rounds, cfg.points_scale, cfg.win_reward, 0.0,
                         None), {})]
    train_speed.measure(cfg, 0.15, 1, Engine)  # the batched engine: on the config's device
    assert engines[1] == ((2, 5, cfg.target, cfg.max_rounds, cfg.points_scale, cfg.win_reward,
                           0.15, ("pool", cfg.opponents, "model")), {"device": torch.device("cpu")})


def _fake_measure(train_speed, monkeypatch):
    """``measure``'s stand-in: rows whose every cell says its row and metric."""
    calls = []
    rates = {("python", 0.0): 100.0, ("python", 0.15): 80.0, ("batched", 0.0): 350.0,
             ("batched", 0.15): 320.0}
    metrics = ["rollout decisions/s", "env steps/s (all moves)", "GAE ms / rollout",
               "update s / rollout", "training SPS (overall)", "updates/s",
               "rollout share of time %", "update share of time %"]

    def measure(cfg, fraction, rollouts, engine_class):
        name = {train_speed.SelfPlayEngine: "python",
                train_speed.BatchedSelfPlayEngine: "batched"}[engine_class]
        calls.append((name, cfg.num_matches, cfg.num_steps, fraction, rollouts,
                      torch.get_num_threads()))
        rate = rates[name, fraction]
        shares = (30.0, 60.0) if name == "python" else (60.0, 30.0)
        return dict(zip(metrics, [rate, *(rate + k for k in range(1, 6)), *shares]))
    monkeypatch.setattr(train_speed, "measure", measure)
    return calls


def test_train_speed_main_measures_each_engine_with_its_config_and_compares_them(monkeypatch,
                                                                                capsys):
    train_speed = script("train_speed")
    calls = _fake_measure(train_speed, monkeypatch)
    assert train_speed.main(["--matches", "2", "--steps", "4", "--rollouts", "2", "--threads", "2",
                             "--batched-set", "num_matches=6"]) == 0
    out = capsys.readouterr().out
    assert calls == [("python", 2, 4, 0.0, 2, 2), ("python", 2, 4, 0.15, 2, 2),
                     ("batched", 6, 4, 0.0, 2, 2), ("batched", 6, 4, 0.15, 2, 2)]
    rows = table_rows(out, "")
    assert rows[0] == ["metric", "python self-play", "python 15% vs pool", "batched self-play",
                       "batched 15% vs pool"]
    assert rows[1] == ["rollout decisions/s", "100.0", "80.0", "350.0", "320.0"]
    assert rows[3] == ["GAE ms / rollout", "102.0", "82.0", "352.0", "322.0"]
    assert rows[8] == ["update share of time %", "60.0", "60.0", "30.0", "30.0"]
    assert "self-play: batched rollout decisions/s = 3.5x python" in out
    assert "15% vs pool: batched rollout decisions/s = 4.0x python" in out
    assert ("python self-play: overall training decisions/s bounded by the PPO update "
            "(30% rollout, 60% update)") in out
    assert ("batched 15% vs pool: overall training decisions/s bounded by the rollout "
            "(60% rollout, 30% update)") in out


def test_train_speed_main_skips_the_pool_row_without_a_pool_share_and_has_the_usage_defaults(
        monkeypatch, capsys):
    """No pool row at ``opponent_fraction=0`` (it would be the self-play row again); the usage
    line's ``[--rollouts 3] [--engines python,batched] [--threads 1]``."""
    train_speed = script("train_speed")
    calls = _fake_measure(train_speed, monkeypatch)
    train_speed.main(["--set", "opponent_fraction=0"])
    assert [call[0] for call in calls] == ["python", "batched"]
    assert {call[3:] for call in calls} == {(0.0, 3, 1)}
    assert "vs pool" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, error", [
    (["--engines", "python,bogus"], "--engines: unknown ['bogus']; choose from ['batched', "
                                    "'python']"),
    (["--batched-set", "device=cuda:7"], "device 'cuda:7': CUDA is not available here"),
    (["--engines", "python,python"], "--engines: 'python,python' names an engine twice"),
    # the last of two won without a word, as in the trainer (which refuses it)
    (["--set", "seed=1", "--set", "seed=2"], "--set: seed is given twice ('seed=1', then"),
    (["--batched-set", "num_matches=8", "--batched-set", "num_matches=16"],
     "--batched-set: num_matches is given twice"),
    (["--set", "num_matches=4", "--matches", "8"], "--set num_matches and --matches both give"),
    # the trainer's packaged configs are named as it names them
    (["--config", "smoke", "--engines", "python,bogus"], "--engines: unknown ['bogus']"),
])
def test_train_speed_refuses_an_engine_or_device_before_measuring(monkeypatch, capsys, argv,
                                                                  error):
    if torch.cuda.is_available() and "cuda:7" in argv[1]:
        pytest.skip("a machine with CUDA")
    train_speed = script("train_speed")
    monkeypatch.setattr(train_speed, "measure", lambda *_: pytest.fail("measured"))
    assert error in usage_error(train_speed.main, argv, capsys)


def test_train_speed_cells_below_one_keep_three_decimals():
    """'update s / rollout' of a small batch read 0.0 (one decimal)."""
    train_speed = script("train_speed")
    assert [train_speed._cell(v) for v in (0.0, 0.0123, 0.5, 1.0, 1234.56)] == [
        "0.0", "0.012", "0.500", "1.0", "1,234.6"]


def test_train_speed_names_the_option_whose_value_the_config_refuses(capsys):
    """``--matches 99999999999`` was refused as '--set: num_matches: ...', an option not given."""
    train_speed = script("train_speed")
    assert usage_error(train_speed.main, ["--matches", "99999999999"], capsys).endswith(
        "error: --matches: num_matches: Input should be less than or equal to 65536, got "
        "99999999999")
    assert "error: --steps: num_steps:" in usage_error(
        train_speed.main, ["--steps", "99999999999"], capsys)
    assert usage_error(train_speed.main, ["--matches", "65536", "--steps", "65536"], capsys) \
        .endswith("error: --matches/--steps: num_matches * num_steps (4294967296) must be at "
                  "most 1048576")
