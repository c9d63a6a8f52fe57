"""``benchmarks/vector_speed.py``'s measurements are the arithmetic its table claims: the env it
steps made with its options, steps counted after the warm-up, seconds measured (a GPU's queue
waited for) and divided, each rate the mean of its blocks with the t interval of that mean,
``raw_env``'s rate over its legal steps, compiled and eager envs timed in alternate blocks,
memory read while the env lives.  No speed is measured (fake clocks, a stand-in env); the table,
plot and defaults: ``test_benchmarks_audit_vector_table.py``; the rest of the speed scripts:
``test_benchmarks_audit.py``."""

import math
from types import SimpleNamespace

import pytest
import torch

from sevenrocks_env.ratings import mean_interval
from sevenrocks_env.tiles import NUM_ACTIONS
from test_benchmarks_audit import _spy_raw_env, install_clock
from test_benchmarks_tables import script

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


class SpyVenv:
    """``vector_env``'s stand-in: every action legal; records its options, observations, steps."""

    def __init__(self, num_envs, **options):
        self.num_envs, self.options = num_envs, options
        self.observed = self.steps = 0

    def reset(self, seed=None):
        self.seed = seed

    @property
    def action_mask(self):
        return torch.ones((self.num_envs, NUM_ACTIONS), dtype=torch.bool)

    @property
    def observation(self):
        self.observed += 1
        return torch.zeros(self.num_envs)

    def random_actions(self, generator=None):
        self.packed_draws = getattr(self, "packed_draws", 0) + 1
        return torch.zeros(self.num_envs, dtype=torch.long)

    def step(self, actions):
        assert actions.shape == (self.num_envs,)
        self.steps += 1

    def nbytes(self):
        return 12345


def test_vector_random_play_steps_the_env_it_made_with_its_options(vector, monkeypatch):
    made = []

    def vector_env(num_envs, **options):
        made.append(SpyVenv(num_envs, **options))
        return made[-1]

    monkeypatch.setattr(vector, "sevenrocks_v0", SimpleNamespace(vector_env=vector_env))
    for observe, validate, compile_, packed in ((True, True, False, False),
                                                (False, False, True, False),
                                                (False, False, False, True)):
        step, venv = vector.random_play(3, observe, "cpu", validate, compile=compile_,
                                        packed=packed)
        assert venv is made[-1] and venv.num_envs == 3 and venv.seed == 0
        assert venv.options == {"device": "cpu", "validate": validate, "compile": compile_}
        step()
        step()
        assert venv.steps == 2 and venv.observed == (2 if observe else 0)
        assert getattr(venv, "packed_draws", 0) == (2 if packed else 0)  # its sampler, or the mask's


def test_vector_timed_calls_step_repeats_times_and_synchronises_before_reading(vector,
                                                                            monkeypatch):
    events = []
    clock = SimpleNamespace(perf_counter=lambda: events.append("clock") or float(len(events)))
    monkeypatch.setattr(vector, "time", clock)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: events.append("sync"))
    assert vector.timed(lambda: events.append("step"), 4, "cpu") == 5.0 and \
        events == ["clock"] + ["step"] * 4 + ["clock"]
    events.clear()
    vector.timed(lambda: events.append("step"), 3, "cuda:0")
    assert events == ["clock"] + ["step"] * 3 + ["sync", "clock"]


def _fake_play(vector, monkeypatch, events, clock, cost=0.25):
    """``random_play``'s stand-in: each step takes ``cost`` seconds and is recorded."""
    calls = []

    def random_play(num_envs, observe, device, validate, compile=False, packed=False):
        calls.append((num_envs, observe, device, validate, compile))

        def step():
            clock.advance(cost)
            events.append("step")
        return step, SimpleNamespace(nbytes=lambda: 4321)
    monkeypatch.setattr(vector, "random_play", random_play)
    return calls


def test_vector_batched_warms_up_then_counts_steps_of_every_match(vector, monkeypatch):
    """Steps/s = steps x matches / the seconds of those steps only: 5 warm-up steps first, then 5
    blocks of ``seconds / 5`` and at least 2 steps each, and a GPU's queue waited for before
    the clock is read."""
    events = []
    clock = install_clock(monkeypatch, vector)
    calls = _fake_play(vector, monkeypatch, events, clock)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: events.append("sync"))
    # 0.25 s a step: a block of 2 s / 5 is 2 steps (0.5 s), the least a block takes
    rate = vector.batched(6, 2.0, True, "cuda", True)
    assert rate == pytest.approx((2 * 6 / 0.5,) * 3)   # every block alike: no spread
    assert calls == [(6, True, "cuda", True, False)]
    assert events == ["step"] * 5 + ["sync"] + (["step"] * 2 + ["sync"]) * 5
    events.clear()
    assert vector.batched(4, 5.0, False, "cpu", False, blocks=4) == pytest.approx(
        (5 * 4 / 1.25,) * 3)
    assert events == ["step"] * 25


def test_vector_rates_are_the_mean_of_the_blocks_and_the_t_interval_of_that_mean(vector,
                                                                               monkeypatch):
    """Blocks of 1 s whose steps take 0.5, 0.25, 0.5 and 1 s: 2, 4, 2 and 2 steps (the last
    2 s long), so 2, 4, 2 and 1 steps a second of 3 matches; the figure is their mean, 2.25 x 3,
    and its band the 95% interval over the 4 blocks: +- t(3) s / sqrt(4)."""
    clock = install_clock(monkeypatch, vector)
    costs = iter([0.1] * 5 + [0.5] * 2 + [0.25] * 4 + [0.5] * 2 + [1.0] * 2)

    def random_play(num_envs, observe, device, validate, compile=False, packed=False):
        return (lambda: clock.advance(next(costs))), None
    monkeypatch.setattr(vector, "random_play", random_play)
    rate = vector.batched(3, 4.0, False, "cpu", False, blocks=4)
    per_block = [2 * 3, 4 * 3, 2 * 3, 1 * 3]
    half = 3.182446 * math.sqrt(sum((r - 6.75) ** 2 for r in per_block) / 3) / 2
    assert rate.mean == pytest.approx(6.75) and rate.high - 6.75 == pytest.approx(6.75 - rate.low)
    # (ratings' t quantile is 0.12 % under the exact 3.182446 at 3 degrees of freedom)
    assert (rate.high - rate.low) / 2 == pytest.approx(half, rel=2e-3)
    assert (rate.low, rate.high) == pytest.approx(mean_interval(per_block))
    assert rate.cell() == f"7 ± {half:,.0f}" and next(costs, None) is None


def test_vector_raw_env_rate_is_over_runs_of_its_seconds_split_in_blocks(vector, monkeypatch):
    runs = iter([100.0, 120.0, 80.0, 110.0, 90.0])
    seen = []

    def aec(seconds, observe):
        seen.append((seconds, observe))
        return next(runs)
    monkeypatch.setattr(vector, "aec", aec)
    rate = vector.aec_rate(2.5, True)
    assert seen == [(0.5, True)] * 5
    assert rate == pytest.approx((100.0, *mean_interval([100, 120, 80, 110, 90])))


def test_vector_memory_is_the_growth_of_an_observing_env(vector, monkeypatch):
    events, readings = [], iter([1000, 5096])
    clock = install_clock(monkeypatch, vector)
    calls = _fake_play(vector, monkeypatch, events, clock)
    monkeypatch.setattr(vector, "rss_bytes", lambda: next(readings))
    assert vector.memory(16, "cpu") == (4321, 4096)
    assert calls == [(16, True, "cpu", False, False)] and events == ["step"] * 5


def test_vector_rss_is_the_resident_size():
    """Pages resident (``statm``'s second field) times the page size: ``VmRSS``, within 16 MiB
    of reading it again (the virtual size, the first field, is gigabytes more with torch)."""
    rss = script("vector_speed").rss_bytes()
    with open("/proc/self/status") as f:
        vm_rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    assert abs(rss - vm_rss) < 16 * 2**20


def test_vector_compiled_against_eager_alternates_blocks_until_both_had_their_seconds(
        vector, monkeypatch):
    """Eager steps take 1/64 s, compiled ones 1/128 s after 5 compiling steps of 1 s: blocks
    of int(0.2 / (1/64)) = 12 steps, and each env's rate is its own steps over its own time."""
    clock = install_clock(monkeypatch, vector)
    made, counts = [], {False: 0, True: 0}

    def random_play(num_envs, observe, device, validate, compile=False, packed=False):
        made.append((num_envs, observe, device, validate, compile, packed))

        def step():
            counts[compile] += 1
            assert counts[compile] < 10_000, "a loop that never ends"
            first = compile and counts[compile] <= 5
            clock.advance(1.0 if first else 1 / 128 if compile else 1 / 64)
        return step, None
    monkeypatch.setattr(vector, "random_play", random_play)
    eager, fused, warm_up = vector.compiled_against_eager(3, 1.0, True, "cpu", True)
    assert made == [(3, True, "cpu", True, False, False), (3, True, "cpu", True, True, False)]
    assert warm_up == 5.0
    assert eager == pytest.approx((64 * 3,) * 3) and fused == pytest.approx((128 * 3,) * 3)
    # both envs timed for their --seconds (the compiled one, twice as fast, sets the length)
    timed_compiled = counts[True] - 5
    assert timed_compiled % 12 == 0 and timed_compiled / 128 >= 1.0
    assert counts[False] == 5 + 3 + timed_compiled
    # a short row still times at least --blocks blocks of each (an interval needs them)
    counts.update({False: 0, True: 0})
    vector.compiled_against_eager(3, 0.01, True, "cpu", True, blocks=7)
    assert counts[True] == 5 + 7 * 12 and counts[False] == 5 + 3 + 7 * 12


def test_vector_compiled_against_eager_rates_are_per_block(vector, monkeypatch):
    """Eager blocks of 12 steps taking 1/64 s a step, then 1/32 s in the second half: the
    blocks' rates differ, and the figure is their mean with its interval."""
    clock = install_clock(monkeypatch, vector)
    steps = {False: 0, True: 0}

    def random_play(num_envs, observe, device, validate, compile=False, packed=False):
        def step():
            steps[compile] += 1
            slow = not compile and steps[False] > 8 + 12 * 4
            clock.advance(1 / 32 if slow else 1 / 64)
        return step, None
    monkeypatch.setattr(vector, "random_play", random_play)
    eager, fused, _ = vector.compiled_against_eager(2, 0.01, False, "cpu", False, blocks=8)
    per_block = [12 * 2 / (12 / 64)] * 4 + [12 * 2 / (12 / 32)] * 4
    assert eager == pytest.approx((sum(per_block) / 8, *mean_interval(per_block)))
    assert fused == pytest.approx((128,) * 3)


def test_vector_batched_and_compiled_against_eager_pass_the_sampler_to_their_envs(vector,
                                                                                 monkeypatch):
    clock = install_clock(monkeypatch, vector)
    made = []

    def random_play(num_envs, observe, device, validate, compile=False, packed=False):
        made.append((compile, packed))
        return (lambda: clock.advance(0.01)), None
    monkeypatch.setattr(vector, "random_play", random_play)
    vector.compiled_against_eager(3, 0.05, False, "cpu", False, packed=True)
    assert made == [(False, True), (True, True)]
    made.clear()
    for packed in (True, False):
        vector.batched(3, 0.05, False, "cpu", False, packed=packed)
    assert made == [(False, True), (False, False)]


@pytest.mark.parametrize("observe", [False, True])
def test_vector_raw_env_rate_is_its_legal_steps_over_the_time(vector, monkeypatch, fake_clocks,
                                                              observe):
    """Clocks moving 1 s a reading: ``seconds`` 2.5 is two matches, dealt 0 and 1, in 4 s; the
    mask-only row never builds an observation, the other one each step."""
    record = _spy_raw_env(monkeypatch, vector)
    fake_clocks(vector, 1.0, 0.0)
    rate = vector.aec(2.5, observe)
    assert record["seeds"] == [0, 1] and record["steps"] > 20
    assert rate == record["steps"] / 4.0
    assert record["observed"] == (record["steps"] if observe else 0)
    record["seeds"].clear()
    vector.aec(0.5, observe)  # less than a match's time: one match all the same
    assert record["seeds"] == [0]
