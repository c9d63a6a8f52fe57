"""Mutation audit of the trainer's data path (rollouts, seats, opponents, evaluation, hand guess,
critic, networks, Ctrl-C and the TensorBoard logs): each test here fails with a small change of
the product code that every earlier test let through."""

from __future__ import annotations

import copy
import re
import signal
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

from test_rollout import LowestActionModel, _engine_with_history  # noqa: E402


def _small_policy():
    torch.manual_seed(5)
    return PolicyNet(hidden_sizes=(8,))


# -- rollout.py --------------------------------------------------------------------------------

def test_a_saved_match_without_its_deal_seed_is_not_a_match_in_progress():
    """A match with no seed could not deal its next round: refused with the finished ones."""
    state = copy.deepcopy(_engine_with_history().state_dict())
    state["matches"][2]["seed"] = None
    with pytest.raises(ValueError, match=r"matches\[2\] is not a match in progress"):
        SelfPlayEngine(3, seed=1, target=60).load_state_dict(state)


# -- seats.py ----------------------------------------------------------------------------------

def _pool_rollout(engine_class):
    from training.opponents import OpponentPool

    pool = OpponentPool(["random"], PolicyNet(hidden_sizes=(8,)))
    engine = engine_class(4, seed=3, target=60, opponent_fraction=1.0, opponent_pool=pool)
    buffer = RolloutBuffer(4 * 8)
    engine.collect(LowestActionModel(), buffer, 8)
    return buffer


@pytest.mark.parametrize("engine_class", [SelfPlayEngine, BatchedSelfPlayEngine])
def test_pool_opponents_are_seeded_by_the_engine_so_a_seed_replays_the_run(engine_class):
    """The pool's ``random`` agent is built unseeded (fresh entropy); each new match seeds it
    from the engine's generator, which is what makes a seed give the same rollouts."""
    first, second = _pool_rollout(engine_class), _pool_rollout(engine_class)
    assert np.array_equal(first.obs, second.obs)
    assert np.array_equal(first.rewards, second.rewards)


def test_a_match_without_learner_placements_logs_no_points_per_placement():
    from training.seats import MatchSeats

    seats = MatchSeats(2, seed=0, target=60, max_rounds=60, points_scale=0.01, win_reward=1.0,
                       opponent_fraction=0.0, opponent_pool=None)
    seats._placements[:] = [0, 4]
    seats._points[:] = [0, 22]
    seats._match_stats(0, [0.5, -0.5], 0, 3, False)
    assert "points_per_placement" not in seats.stats
    seats._match_stats(1, [0.5, -0.5], 0, 3, False)
    assert seats.stats["points_per_placement"] == [5.5]


# -- batched_rollout.py ------------------------------------------------------------------------

def test_a_buffer_too_small_for_the_rollout_says_both_sizes():
    engine = BatchedSelfPlayEngine(2, seed=0, target=60)
    with pytest.raises(ValueError, match="buffer holds 5 transitions, the rollout needs 6"):
        engine.collect(LowestActionModel(), RolloutBuffer(5), 3)


# -- opponents.py ------------------------------------------------------------------------------

def test_a_sampling_opponent_draws_from_its_own_generator_not_torch_s_global_one():
    from sevenrocks_env.observation import OBS_SIZE
    from sevenrocks_env.policy import PolicyAgent
    from sevenrocks_env.tiles import NUM_ACTIONS
    from training.opponents import policy_actions

    agent = PolicyAgent(_small_policy(), name="past", deterministic=False)
    obs = torch.rand(64, OBS_SIZE, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(64, NUM_ACTIONS, dtype=torch.bool)
    saved = agent._generator.get_state()
    torch.manual_seed(0)
    first = policy_actions(agent, obs, mask)
    assert not torch.equal(agent._generator.get_state(), saved)  # it drew from its own
    agent._generator.set_state(saved)
    torch.manual_seed(1)
    assert torch.equal(policy_actions(agent, obs, mask), first)


def test_a_restored_pool_s_snapshots_draw_on_from_their_saved_generators():
    from training.opponents import OpponentPool

    pool = OpponentPool(["past"], _small_policy())
    _, agent = pool(np.random.default_rng(0))
    torch.rand(3, generator=agent._generator)  # the snapshot has sampled some moves
    other = OpponentPool(["past"], _small_policy())
    other.load_state_dict(copy.deepcopy(pool.state_dict()))
    _, restored = other(np.random.default_rng(0))
    assert torch.equal(restored._generator.get_state(), agent._generator.get_state())


def test_a_bad_opponent_key_is_named_with_the_pool_s_true_count():
    from training.opponents import OpponentPool

    pool = OpponentPool(["past", "greedy"], _small_policy())
    with pytest.raises(ValueError, match=r"opponent key 'past#1': no such snapshot \(the pool "
                                         r"has 1\)"):
        pool.restore("past#1")
    with pytest.raises(ValueError, match="^opponent key 'nosuchagent': "):
        pool.restore("nosuchagent")


# -- evaluation.py -----------------------------------------------------------------------------

class _Result:
    """What ``eval_scalars`` and ``short_summary`` read of an ``ArenaResult``."""

    def __init__(self, win_rate, mean_margin=0.0, **extra):
        self.win_rate, self.mean_margin, self._extra = win_rate, mean_margin, extra

    def as_dict(self):
        return dict(self._extra)


def test_eval_scalars_take_the_policy_s_side_of_each_pair_and_the_margin():
    from training.evaluation import eval_scalars

    results = {"greedy": _Result(0.75, 12.5, points_per_round=[3.0, -1.0], rounds_per_match=4.5,
                                 round_win_rate=0.25, truncated=2)}
    assert eval_scalars(results) == {
        "eval/win_rate_vs_greedy": 0.75, "eval/margin_vs_greedy": 12.5,
        "eval/points_per_round_vs_greedy": 3.0, "eval/rounds_per_match_vs_greedy": 4.5,
        "eval/round_win_rate_vs_greedy": 0.25}


def test_the_progress_summary_is_five_letters_and_a_percentage_per_opponent():
    from training.evaluation import short_summary

    results = {"heuristic": _Result(0.48), "ckpt:runs/a.pt": _Result(0.0)}
    assert short_summary(results) == "heuri 48% ckpt 0%"


def test_two_opponents_of_one_kind_keep_distinct_names_in_the_progress_summary():
    from training.evaluation import short_names, short_summary

    results = {"ckpt:runs/a.pt": _Result(0.25), "ckpt:runs/b.pt": _Result(0.5),
               "search": _Result(0.5), "search:samples=16": _Result(0.75),
               "ckpt:x/c.pt": _Result(0.0), "ckpt:y/c.pt": _Result(1.0)}
    assert short_summary(results) == ("ckpt:a.pt 25% ckpt:b.pt 50% searc 50% "
                                      "searc:samples=16 75% ckpt:c.pt#1 0% ckpt:c.pt#2 100%")
    assert short_names(["greedy", "heuristic"]) == ["greed", "heuri"]


# -- hand_guess.py -----------------------------------------------------------------------------

def test_a_batch_without_any_hidden_tile_has_loss_and_accuracy_zero():
    """The last tile of a round just played: nothing to guess, and no 0 / 0."""
    from training.hand_guess import HandGuess

    with torch.no_grad():
        loss, accuracy = HandGuess(4).loss(torch.randn(3, 4), torch.zeros(3, 84))
    assert float(loss) == 0.0 and float(accuracy) == 0.0


# -- networks.py -------------------------------------------------------------------------------

def test_a_policy_shipped_without_value_head_warm_starts_the_trunk_and_heads(tmp_path):
    """A policy trained with the oracle critic has no value head (``value_head: false`` in its
    file): a warm start takes the rest and the value head starts fresh."""
    from sevenrocks_env.policy import MissingValueHead
    from training.checkpoint import policy_entries, save_checkpoint
    from training.config import load_config
    from training.networks import build_networks, warm_start

    torch.manual_seed(6)
    source = PolicyNet([16], action_features=2)
    source.value_head = MissingValueHead()
    path = save_checkpoint(tmp_path / "oracle.pt", policy_entries(source, 0))
    cfg = load_config(None, [f"init_from={path}", "hidden_sizes=[16]"])
    model, _, _, optimizer = build_networks(cfg)
    warm_start(model, cfg)
    theirs = source.state_dict()
    assert all(torch.equal(tensor, theirs[name]) for name, tensor in model.state_dict().items()
               if not name.startswith("value_head."))
    assert optimizer.defaults["eps"] == 1e-5  # Adam's epsilon of PPO implementations


def test_a_warm_start_from_a_file_that_is_no_checkpoint_names_init_from(tmp_path):
    from training.config import ConfigError, load_config
    from training.networks import build_networks, warm_start

    path = tmp_path / "notes.pt"
    path.write_text("not a checkpoint")
    cfg = load_config(None, [f"init_from={path}", "hidden_sizes=[16]"])
    words = f"^init_from: {re.escape(str(path))} is not a readable checkpoint"
    with pytest.raises(ConfigError, match=words):
        warm_start(build_networks(cfg)[0], cfg)


# -- interrupt.py ------------------------------------------------------------------------------

def test_the_first_ctrl_c_asks_the_second_stops_and_the_old_handler_comes_back(capsys):
    from training.interrupt import Interrupt

    before = signal.getsignal(signal.SIGINT)
    with Interrupt() as interrupt:
        assert not interrupt.requested
        signal.raise_signal(signal.SIGINT)
        assert interrupt.requested
        assert "Ctrl-C again to stop at once" in capsys.readouterr().err
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_an_interrupt_outside_the_main_thread_leaves_the_handler_alone():
    from training.interrupt import Interrupt

    before, seen = signal.getsignal(signal.SIGINT), []

    def run():
        with Interrupt():
            seen.append(signal.getsignal(signal.SIGINT))
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before] and signal.getsignal(signal.SIGINT) is before


# -- run_logs.py -------------------------------------------------------------------------------

class _FullDiskWriter:
    """A ``SummaryWriter`` stand-in whose writes fail as a full disk does."""

    def __init__(self, *args, **kwargs):
        pass

    def add_scalar(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    def close(self):
        pass


@pytest.fixture
def log_writer(monkeypatch, tmp_path):
    import torch.utils.tensorboard as tensorboard
    from training.run_logs import LogWriter

    hooked = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    monkeypatch.setattr(tensorboard, "SummaryWriter", _FullDiskWriter)
    writer = LogWriter(tmp_path, None, lambda reason: f"stopped: {reason}")
    return writer, hooked


def test_a_failed_write_is_one_logs_error_with_the_os_reason_only(log_writer):
    from training.run_logs import LogsError

    writer, _ = log_writer
    with pytest.raises(LogsError) as raised:
        writer.add_scalar("a", 1.0, 0)
    assert str(raised.value) == "stopped: No space left on device"
    with pytest.raises(AttributeError):
        writer._private


def test_the_writer_thread_s_kept_error_is_quiet_any_other_goes_to_the_hook(log_writer):
    writer, hooked = log_writer

    class Failing(threading.Thread):
        def __init__(self, error, keep):
            super().__init__()
            self.error, self.keep = error, keep

        def run(self):
            if self.keep:
                self.exception = self.error
            raise self.error

    for error, keep in ((OSError(28, "full"), True), (OSError(28, "full"), False),
                        (ValueError("bug"), True)):
        thread = Failing(error, keep)
        thread.start()
        thread.join()
    assert [type(args.exc_value) for args in hooked] == [OSError, ValueError]
    writer.close()
    assert threading.excepthook == hooked.append
