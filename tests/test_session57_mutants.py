"""Tests from a mutation audit of what session 57 changed: the run's file fingerprints
(fingerprints.py) and where the arena takes, logs and checks them (arena.py, arena_batched.py,
arena_pool.py, arena_log.py), the arena command's bounds and its worker message (arena_cli.py),
the trainer's run-folder message and the minutes its mark keeps (checkpoint.py, train.py), the
config's pool check and YAML hints (config.py), the curve's record checksums (plot_curve.py),
the replay's old frames (render/replay.py) and the masks at an episode's end (env.py)."""

from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env import arena, arena_cli, arena_pool, fingerprints  # noqa: E402
from sevenrocks_env.arena_batched import evaluate_batched, play_pairs_batched  # noqa: E402
from sevenrocks_env.fingerprints import check_files, files_fingerprint  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# -- fingerprints.py -------------------------------------------------------------------------


def test_a_file_a_spec_names_that_cannot_be_read_is_an_error_not_no_file(tmp_path):
    """An SB3 zip's path is not checked before it is read: a missing one must not fingerprint
    as None (a spec that loads no file), which a log header would then record."""
    missing = tmp_path / "gone.zip"
    with pytest.raises(ValueError, match=r"sb3:.*gone.zip: cannot read .*gone.zip \(No such"):
        files_fingerprint(f"sb3:{missing}")


def test_each_side_s_file_is_checked_b_s_too(tmp_path):
    path = tmp_path / "b.pt"
    path.write_bytes(b"weights")
    spec = f"ckpt:{path}"
    then = files_fingerprint(spec)
    check_files(("greedy", spec), (None, then))  # unchanged: nothing said
    path.write_bytes(b"other weights")
    with pytest.raises(ValueError, match="b.pt: its file changed since the run began"):
        check_files(("greedy", spec), (None, then))


# -- the fingerprints taken at the start are the ones logged and checked -----------------------

FILES = ("a" * 64, "b" * 64)


def _pairs_here(seen):
    """A stand-in for ``arena_pool.play_pairs_in_pool`` that plays here and records the
    fingerprints it was given (what every worker checks its agents' files against)."""
    def play(spec_a, spec_b, seed, pairs, target, max_rounds, workers, files=None):
        seen.append(files)
        duo_a, duo_b = arena._partnership(spec_a), arena._partnership(spec_b)
        for pair in pairs:
            yield arena.play_pair(duo_a, duo_b, seed, pair, target, max_rounds)
    return play


def _spans_here(seen):
    """The same for ``arena_pool.play_spans_in_pool``."""
    from sevenrocks_env.batched_agents import batched_agent

    def play(spec_a, spec_b, seed, spans, target, max_rounds, workers, threads=1, files=None):
        seen.append(files)
        side_a, side_b = batched_agent(spec_a), batched_agent(spec_b)
        for first, count in spans:
            yield play_pairs_batched(side_a, side_b, seed, first, count, target, max_rounds)
    return play


@pytest.mark.parametrize("batched", [False, True])
def test_the_log_and_the_workers_get_the_fingerprints_of_the_run_s_start(monkeypatch, tmp_path,
                                                                         batched):
    """Taken once, before any agent is built: the log's header and every worker get those (the
    log or the pool taking its own later let a file replaced meanwhile play under a header
    naming the other file)."""
    from sevenrocks_env import arena_log
    seen = []
    monkeypatch.setattr(fingerprints, "run_fingerprints", lambda agents: FILES)
    monkeypatch.setattr(arena_log, "run_fingerprints", lambda agents: pytest.fail("taken again"))
    monkeypatch.setattr(arena_pool, "play_pairs_in_pool", _pairs_here(seen))
    monkeypatch.setattr(arena_pool, "play_spans_in_pool", _spans_here(seen))
    log = tmp_path / "pairs.jsonl"
    play = evaluate_batched if batched else arena.evaluate
    result = play("greedy", "random", 2, seed=3, target=60, workers=2, log=log)
    assert result.pairs == 2 and seen == [FILES]
    header = json.loads(log.read_text().splitlines()[0])
    assert (header["files_a"], header["files_b"]) == FILES


# -- arena_pool.py: a worker that cannot build its agents ------------------------------------


def test_a_worker_whose_agent_cannot_be_built_says_why_in_one_line(monkeypatch, capsys):
    """Not a traceback: the error on its own line, and the worker ends (its pool is broken,
    which the main process reports as WorkerDied)."""
    def exit_(code):
        raise SystemExit(code)

    def init(spec):
        raise ValueError(f"{spec}: its file changed since the run began")
    monkeypatch.setattr(arena_pool, "signal", SimpleNamespace(signal=lambda *a: None,
                                                              SIGINT=2, SIG_IGN=1))
    monkeypatch.setattr(arena_pool, "end_with_parent", lambda: None)
    monkeypatch.setattr(arena_pool, "os", SimpleNamespace(_exit=exit_))
    with pytest.raises(SystemExit) as stop:
        arena_pool.start_worker(init, ("ckpt:x.pt",))
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: ckpt:x.pt: its file changed since the run began\n"


class _BrokenPool:
    """A stand-in for ``ProcessPoolExecutor`` whose workers never start: it records what each
    worker would have been started with."""
    started: list = []

    def __init__(self, workers, context, initializer, initargs):
        _BrokenPool.started.append(initargs)

    def submit(self, *args):
        from concurrent.futures.process import BrokenProcessPool
        raise BrokenProcessPool

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("spans", [False, True])
def test_a_pool_started_without_fingerprints_takes_them_before_its_workers(monkeypatch,
                                                                           tmp_path, spans):
    """Called without ``files`` (as an API), the pool takes the specs' fingerprints itself and
    every worker checks its agents against them; a pool whose workers die says where their
    own error is."""
    monkeypatch.setattr(arena_pool, "ProcessPoolExecutor", _BrokenPool)
    monkeypatch.setattr(_BrokenPool, "started", [])
    path = tmp_path / "a.pt"
    path.write_bytes(b"weights")
    spec = f"ckpt:{path}"
    played = arena_pool.play_spans_in_pool(spec, "greedy", 1, [(0, 1)], 250, 100, 2) \
        if spans else arena_pool.play_pairs_in_pool(spec, "greedy", 1, range(2), 250, 100, 2)
    with pytest.raises(arena_pool.WorkerDied, match="its own error, if it had one, is printed "
                       "above: an agent it could not build, a file changed since the run began"):
        next(played)
    (_, settings), = _BrokenPool.started
    assert settings[-1] == (files_fingerprint(spec), None)


# -- arena_cli.py ------------------------------------------------------------------------------


@pytest.mark.parametrize("stop, code", [(arena_pool.WorkerDied("an arena worker died"), 1),
                                        (KeyboardInterrupt(), 130)])
def test_a_worker_s_death_says_to_mend_it_before_playing_the_rest(monkeypatch, tmp_path, capsys,
                                                                  stop, code):
    """The same command plays the rest only once what stopped the worker (a file replaced) is
    mended; after Ctrl-C there is nothing to mend."""
    def stopped(*args, **kwargs):
        raise stop
    monkeypatch.setattr(arena_cli, "evaluate", stopped)
    log = tmp_path / "pairs.jsonl"
    assert arena_cli.main(["greedy", "random", "--log", str(log), "--no-progress"]) == code
    err = capsys.readouterr().err
    assert "and the same command plays the rest" in err
    mended = ", once what stopped the worker is mended (a file the log names restored)"
    assert (mended in err) == isinstance(stop, arena_pool.WorkerDied), err


# -- training/plot_curve.py: the records' data checksums ---------------------------------------


def _record(payload: bytes) -> bytes:
    """A record of an event file: its length, the length's CRC-32C, the data, the data's."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    size = struct.pack("<Q", len(payload))
    return size + struct.pack("<I", masked_crc32c(size)) + payload \
        + struct.pack("<I", masked_crc32c(payload))


def _event_file(folder, steps, tail=b""):
    """An event file of a scalar at each of ``steps``, then ``tail``; each record's offset."""
    folder.mkdir()
    data, offsets = b"", []
    for step in steps:
        offsets.append(len(data))
        data += _record(_scalar(step))
    (folder / "events.out.tfevents.1.test").write_bytes(data + tail)
    return offsets


def _scalar(step: int) -> bytes:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    return Event(step=step, summary=Summary(value=[Summary.Value(
        tag="eval/win_rate_vs_random", simple_value=0.5)])).SerializeToString()


def test_a_damaged_record_is_named_by_its_own_offset(tmp_path):
    from training.plot_curve import check_event_files

    folder = tmp_path / "run"
    offsets = _event_file(folder, [1, 22222, 3])
    path = folder / "events.out.tfevents.1.test"
    damaged = bytearray(path.read_bytes())
    damaged[offsets[2] + 14] ^= 0xFF  # the third record's data
    path.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=f"record at byte {offsets[2]} fails its data checksum"):
        check_event_files(folder)


def test_a_record_cut_short_in_its_data_checksum_is_still_being_written(tmp_path):
    """Its data whole, its checksum not yet: TensorBoard skips it, and so does the check (a
    struct.error traceback otherwise)."""
    from training.plot_curve import check_event_files

    _event_file(tmp_path / "run", [1, 2], _record(_scalar(3))[:-2])
    check_event_files(tmp_path / "run")


# -- training/checkpoint.py: the minutes the mark keeps --------------------------------------


@pytest.mark.parametrize("minutes, read", [(0.0, 0.0), (12.5, 12.5), (-1.0, None),
                                           (1e9, None), (float("inf"), None), ("12", None),
                                           (True, None), (None, None)])
def test_a_mark_s_minutes_are_read_only_when_plausible(tmp_path, minutes, read):
    """A hand-edited or damaged mark: its minutes are left out (None), never a traceback."""
    from training.checkpoint import EVALUATED, evaluated_minutes

    (tmp_path / EVALUATED).write_text(json.dumps({"global_step": 256, "minutes": minutes}))
    assert evaluated_minutes(tmp_path) == read


@pytest.mark.parametrize("minutes, text", [(0.05, "0.1"), (0.049, "0.049"), (0.25, "0.2"),
                                           (12.34, "12.3"), (0.0015, "0.0015"), (0.0, "0")])
def test_minutes_are_written_with_one_decimal_a_tiny_budget_s_with_its_digits(minutes, text):
    from training.checkpoint import minutes_text

    assert minutes_text(minutes) == text


def test_no_minutes_used_is_written_zero_not_left_out():
    from training.checkpoint import more_minutes

    assert more_minutes(0.0) == "--set max_minutes=M (M above the 0 minutes it has used)"
    assert more_minutes(None) == "--set max_minutes=M (M above the minutes it has used)"


# -- training/train.py: the message of a run folder that exists ------------------------------


def _finished_run(tmp_path, minutes, *settings):
    """A run folder whose final evaluation is marked (``minutes`` used), and the config of a
    new run of its name (the smoke config with ``settings``)."""
    from test_training import _smoke

    from training.checkpoint import mark_evaluated
    cfg = _smoke(tmp_path, "total_steps=256", *settings)
    folder = tmp_path / "ckpt" / "smoke"
    folder.mkdir(parents=True)
    (folder / "latest.pt").write_bytes(b"(only its presence is read)")
    mark_evaluated(folder, 256, 256, minutes)
    return cfg


@pytest.mark.parametrize("max_minutes, hinted", [(10, True), (10.5, False), (0, False)])
def test_a_complete_run_is_told_to_give_more_minutes_only_when_it_used_them(tmp_path,
                                                                            max_minutes, hinted):
    """Used exactly up (a resume's check refuses it at >=), the hint names max_minutes too;
    with minutes left, or no limit (0), more total_steps is all it needs."""
    from training import train
    from training.config import ConfigError

    cfg = _finished_run(tmp_path, 10.0, f"max_minutes={max_minutes}")
    with pytest.raises(ConfigError) as error:
        train.train(cfg, final_table=False)
    assert "it is complete (its final evaluation is logged, step 256)" in str(error.value)
    assert ("--set max_minutes=M (M above the 10.0 minutes it has used)" in str(error.value)) \
        == hinted, str(error.value)


def test_a_resume_past_its_max_minutes_writes_them_as_the_hints_do(tmp_path, capsys):
    """One decimal (90.6 s is 1.5 minutes, not 1.51), as the run folder's hint writes them."""
    from training.train import main

    folders = [f"--set=log_dir={tmp_path / 'runs'}", f"--set=checkpoint_dir={tmp_path / 'ckpt'}"]
    assert main(["--config", "configs/smoke.yaml", *folders, "--set", "total_steps=256",
                 "--set", "eval_every=0", "--set", "final_eval_pairs=1"]) == 0
    folder = tmp_path / "ckpt" / "smoke"
    (folder / "evaluated.json").unlink()  # (else refused first: its run is complete)
    data = torch.load(folder / "latest.pt", weights_only=True)
    torch.save(dict(data, wall_time=90.6), folder / "latest.pt")
    capsys.readouterr()
    assert main(["--resume", str(folder / "latest.pt"), *folders, "--set", "max_minutes=1"]) == 2
    assert "the run has used its max_minutes (1.5 of 1 min)" in capsys.readouterr().err


# -- render/replay.py: the frames of an earlier replay ---------------------------------------


def _images(count):
    from PIL import Image
    return [(Image.new("RGB", (4, 3), (9 * i, 0, 0)), None, 0) for i in range(count)]


def test_a_link_to_a_folder_under_a_frame_s_name_is_removed_not_refused(tmp_path):
    """A link is removed as a link (what it points at stays); only a real folder stops it."""
    from sevenrocks_env.render import replay

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("kept")
    folder = tmp_path / "frames"
    folder.mkdir()
    (folder / "frame_0007.png").symlink_to(elsewhere, target_is_directory=True)
    assert replay.write_pngs(_images(2), folder, total=2) == 2
    assert sorted(p.name for p in folder.iterdir()) == ["frame_0000.png", "frame_0001.png"]
    assert (elsewhere / "keep.txt").read_text() == "kept"


def test_a_lone_folder_under_a_frame_s_name_stops_the_replay(tmp_path):
    from sevenrocks_env.render import replay

    (tmp_path / "frame_0000.png").mkdir()
    with pytest.raises(ValueError, match="frame_0000.png is a folder, not a frame"):
        replay.write_pngs(_images(1), tmp_path, total=1)
    assert (tmp_path / "frame_0000.png").is_dir()


def test_the_out_check_counts_a_linked_frame_but_not_a_folder(tmp_path, capsys):
    """A folder under a frame's name is no earlier frame (no --force would help: the replay
    says it is a folder); a link under one is an earlier frame, kept unless --force."""
    from test_replay import short_match_record

    from sevenrocks_env import record as records
    from sevenrocks_env.render import replay

    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    out = tmp_path / "frames"
    out.mkdir()
    (out / "frame_0050.png").mkdir()
    argv = [str(path), "--out", str(out), "--round", "0", "--scale", "0.1"]
    assert replay.main(argv) == 2
    err = capsys.readouterr().err
    assert "frame_0050.png is a folder, not a frame" in err and "--force" not in err, err
    (out / "frame_0050.png").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "frame_0003.png").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert replay.main(argv) == 2
    assert "holds 1 frame(s) already" in capsys.readouterr().err
    assert (out / "frame_0003.png").is_symlink()


# -- training/config.py and resume.py: opponents without a fraction; YAML's readings ----------


def _saved(*settings) -> dict:
    """The pieces of a training checkpoint :func:`resumed_config` reads, of the smoke config
    with ``settings`` (its network's own settings as its weights')."""
    from training.config import load_config

    cfg = load_config("configs/smoke.yaml", list(settings))
    return {"config": cfg.as_dict(), "model_config": {"action_features": cfg.action_features,
                                                      "action_scorer": cfg.action_scorer}}


def test_a_run_with_a_pool_keeps_its_fraction_when_its_opponents_change():
    """A pool run whose fraction was given as 0 (its choice) resumes with other opponents
    as it is; only a self-play run given a pool must give a fraction."""
    from training.config import ConfigError, parse_overrides
    from training.resume import resumed_config

    changed = parse_overrides(["opponents=[random]"])
    cfg = resumed_config(_saved("opponents=[greedy]", "opponent_fraction=0"), changed, "x.pt")
    assert (cfg.opponents, cfg.opponent_fraction) == (["random"], 0)
    with pytest.raises(ConfigError, match="^--set: opponents are listed but opponent_frac"):
        resumed_config(_saved("opponents=[]", "opponent_fraction=0"), changed, "x.pt")


@pytest.mark.parametrize("line, kind", [("run_name: 1.5\n", "a number"),
                                        ("run_name: 2024-01-01 10:00:00\n", "a date and time")])
def test_yaml_s_other_readings_of_text_are_named(tmp_path, line, kind):
    from training.config import ConfigError, load_config

    path = tmp_path / "c.yaml"
    path.write_text(line)
    with pytest.raises(ConfigError, match=f"YAML reads it as {kind}: quote text, e.g. run_name"):
        load_config(path)


def test_a_number_where_an_int_is_wanted_gets_no_advice_to_quote_it(tmp_path):
    """The advice is for a text field: quoting 1.5 would not make a seed of it."""
    from training.config import ConfigError, load_config

    path = tmp_path / "c.yaml"
    path.write_text("seed: 1.5\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert "seed" in str(error.value) and "quote" not in str(error.value), str(error.value)


# -- env.py: the mask of a seat whose episode is over ----------------------------------------


def _ended_by_an_illegal_move():
    """env() after an illegal move ended it: the offender, the match left as it was."""
    from sevenrocks_env import sevenrocks_v0

    env = sevenrocks_v0.env()
    env.reset(seed=1)
    observation, *_ = env.last()
    offender = env.agent_selection
    env.step(int(np.flatnonzero(observation["action_mask"] == 0)[0]))
    return env, offender


def test_an_ended_seat_s_mask_is_the_space_s_own_and_its_own_copy():
    """All zeros of the observation space's dtype, a fresh array each time: a caller writing
    into one (as a policy's masking may) must not change the next ended seat's."""
    env, offender = _ended_by_an_illegal_move()
    raw = env.unwrapped
    first = raw.observe(offender)
    assert raw.observation_space(offender).contains(first)
    first["action_mask"][5] = 1
    assert not raw.observe(offender)["action_mask"].any()
    assert not raw.observe(env.agents[1])["action_mask"].any()


# -- public_round.py: the bound of a round's actions -----------------------------------------


def test_a_public_round_holds_at_most_a_round_s_moves():
    """The bound is the rules' (match_state.MAX_ROUND_MOVES, 112), the same as a record's."""
    from sevenrocks_env.public_round import PublicRound

    assert len(PublicRound(0, (0, 0), (112,) * 112).checked().actions) == 112
    with pytest.raises(ValueError, match="at most 112 actions, got tuple of 113"):
        PublicRound(0, (0, 0), (112,) * 113).checked()


# -- web/views.py: the move that ended a round -----------------------------------------------


def test_a_round_won_by_its_first_move_has_that_move_as_its_last():
    """Dealt at 245-245, the opener's first placement (5 points) wins the match: the round's
    one move is the one that ended it."""
    from sevenrocks_env.dealing import deal
    from sevenrocks_env.rules import Match, apply_action
    from sevenrocks_env.web.views import move_entry, round_summary

    hands, opener = deal(1, 0)
    match = Match.from_deal(hands, opener, target=250, scores=(245, 245))
    apply_action(match, 96)
    log = match.history[-1]
    assert match.over and log.result == "won" and len(log.moves) == 1
    last = round_summary(log, 0, with_board=False)["last_move"]
    assert last == move_entry(log, 0) and last["seat"] == opener and not last["knock"]
