"""Mutation audit of the day's changes (session 59): the checks and texts that survived their
mutants -- the distilled student's settings as a card reads them, the observer's own knocks in
``state_from_view``, chance labels and the round a finished OpenSpiel state names, the
checkpoint archive's entry layout, the 'did you mean shipped' hint, live Mersenne keys and PCG64
increments, a negative web ply, 'self' among the opponents and the trainer's minutes left."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sevenrocks_env.checks import counted
from sevenrocks_env.policy import CheckpointError

DISTILLED = {"teacher": "search:policy=shipped,samples=16", "labels": 315_078,
             "holdout_agreement": 0.7634}


def facts_of(args: dict) -> dict:
    from training.distill_record import distill_facts
    return distill_facts({"distill": {**DISTILLED, "args": args}}, "f.pt")


# -- training.distill_record: the student's settings read from a file -------------------------

def test_a_default_distill_run_s_settings_are_all_read():
    """A run with every default records hidden_sizes None and temperature 0.0 (hard labels):
    both are settings a card shows, not a refused file."""
    from dataclasses import asdict

    from training.distill_args import Args
    from training.distill_record import SETTINGS
    args = asdict(Args())
    facts = facts_of(args)
    assert facts["settings"] == {key: args[key] for key in SETTINGS}
    assert facts["settings"]["hidden_sizes"] is None and facts["settings"]["temperature"] == 0.0


@pytest.mark.parametrize("key, value", [
    ("epochs", 10_000), ("learning_rate", 1.0), ("batch_size", 1 << 16),
    ("seed", 2 ** 63 - 1), ("seed", 0), ("temperature", 0.0), ("hidden_sizes", None),
    ("hidden_sizes", [4096] * 8), ("epochs", 1),
])
def test_settings_at_their_bounds_are_kept(key, value):
    assert facts_of({key: value})["settings"] == {key: value}


@pytest.mark.parametrize("key, value, what", [
    ("epochs", 0, "an int in 1..10000"),  # (a run of 0 epochs writes no policy)
    ("epochs", 10_001, "an int in 1..10000"),
    ("learning_rate", 1.5, "a number in (0, 1]"),
    ("batch_size", (1 << 16) + 1, "an int in 1..65536"),
    ("seed", 2 ** 63, "an int in 0..2**63-1"),
])
def test_settings_past_their_bounds_are_refused_naming_the_key(key, value, what):
    with pytest.raises(CheckpointError) as error:
        facts_of({key: value})
    assert str(error.value) == f"f.pt: 'distill' 'args' '{key}' must be {what}, got {value}"


# -- training.model_card: a round's options and init ----------------------------------------

def test_every_setting_is_on_the_card_as_the_distill_option():
    from training.model_card import options_text, rounds_text
    settings = {"init": "a.pt (network sha256 0123456789abcdef)", "epochs": 6,
                "batch_size": 512, "learning_rate": 3e-4, "temperature": 0.5, "seed": 7,
                "hidden_sizes": [256, 128]}
    assert options_text(settings) == (" --hidden-sizes 256 128 --epochs 6 --batch-size 512 "
                                      "--learning-rate 0.0003 --temperature 0.5 --seed 7")
    text = rounds_text({**DISTILLED, "settings": settings})
    assert text.startswith("then fine-tuned from `a.pt (network sha256 0123456789abcdef)` "
                           "toward "), text
    assert "(`training.distill --hidden-sizes 256 128 --epochs 6" in text


@pytest.mark.parametrize("init", [
    "x (network sha256 0123456789abcdef).pt",  # the words inside a path, not its pin
    "x.pt (network sha256 zzzzzzzzzzzzzzzz)",  # not a hex digest
    "x.pt (network sha256 0123456789ABCDEF)",
])
def test_only_an_init_ending_with_its_pin_is_pinned(init):
    from training.model_card import rounds_text
    text = rounds_text({**DISTILLED, "settings": {"init": init}})
    assert text.startswith(f"then fine-tuned from `{init} (not pinned: the file that name held "
                           "then)` toward "), text


# -- sevenrocks_env.openspiel.hidden.state_from_view(own_voids=...) --------------------------

@pytest.fixture(scope="module")
def knocked_view():
    pytest.importorskip("pyspiel")
    from openspiel_states import first_state_where, load

    from sevenrocks_env.observation import decode, encode
    game = load(rounds=1)
    state = first_state_where(game, lambda s: s._match is not None
                              and s._match.voids[s.current_player()] != 0
                              and len(s.legal_actions()) > 1, seeds=range(200))
    match, seat = state._match, state.current_player()
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    return game, state, decode(encode(match, seat)), hidden, match.voids[seat]


def test_own_voids_below_zero_is_no_7_bit_set(knocked_view):
    from sevenrocks_env.openspiel import state_from_view
    game, _, view, hidden, _ = knocked_view
    with pytest.raises(ValueError, match=r"own_voids must be a 7-bit set .*got -1"):
        state_from_view(game, view, hidden, own_voids=-1)


def test_a_view_that_carries_its_own_knocks_keeps_them(knocked_view):
    """A SeatView made by a caller that tracks its knocks (voids[0] set): those are kept with
    ``own_voids`` left at 0, as the other seats saw them."""
    import dataclasses

    from sevenrocks_env.openspiel import state_from_view
    game, state, view, hidden, own = knocked_view
    seat = state.current_player()
    given = dataclasses.replace(view, voids=(own, *view.voids[1:]))
    built = state_from_view(game, given, hidden)
    assert built._match.voids[0] == own
    real = state.observation_string((seat + 1) & 3).split(" | ")[3]
    assert built.observation_string(1).split(" | ")[3] == real


def test_a_refused_own_voids_names_every_number_knocked(knocked_view):
    from sevenrocks_env.openspiel import state_from_view
    game, _, view, hidden, _ = knocked_view
    with pytest.raises(ValueError) as error:
        state_from_view(game, view, hidden, own_voids=127)
    assert "knocked on 0, 1, 2, 3, 4, 5, 6, but its hand holds such a tile" in str(error.value)


# -- sevenrocks_env.openspiel.game: chance labels after the fact, the round of a won match --

def test_a_past_deal_is_labelled_with_the_seat_it_may_have_drawn():
    pyspiel = pytest.importorskip("pyspiel")
    from openspiel_states import load
    state = load().new_initial_state()
    state.apply_action(0)  # tile 0|0 dealt: outcome 0 is no longer one of this node's
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 0) \
        == "chance outcome 0: deal 0|0 or seat 0 drawn to open"
    state.apply_action(2)
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 2) \
        == "chance outcome 2: deal 0|2 or seat 2 drawn to open"


def test_a_match_won_in_its_round_names_that_round():
    """A won match (R8) counts no further round: its text names the round it was won in."""
    pytest.importorskip("pyspiel")
    from openspiel_states import load, random_state
    game = load(rounds=1, target=10)
    for seed in range(50):
        state = random_state(game, np.random.default_rng(seed))
        if state._match.winner is not None and not state._match.truncated:
            break
    else:
        raise AssertionError("no match was won")
    assert str(state).startswith(f"round {state._match.round_index}, scores "), str(state)
    assert str(state).startswith("round 0, scores ")


# -- sevenrocks_env.policy_file.resolve_path: 'did you mean shipped' --------------------------

def test_did_you_mean_is_for_a_missing_file_only_and_ignores_case(tmp_path, monkeypatch):
    from sevenrocks_env.policy_file import resolve_path
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match="did you mean 'shipped'"):
        resolve_path("SHIPED")  # lower-cased before the comparison
    (tmp_path / "shiped").mkdir()  # a folder: said as one, no guess
    with pytest.raises(CheckpointError) as error:
        resolve_path("shiped")
    assert "did you mean" not in str(error.value) and "folder" in str(error.value)
    for far in ("ship", "sipp.pt", "model.pt"):  # (too far from 'shipped' to be meant)
        with pytest.raises(CheckpointError) as error:
            resolve_path(far)
        assert "did you mean" not in str(error.value), far


# -- training.engine_state: live Mersenne keys, PCG64 increments ------------------------------

@pytest.mark.parametrize("word", [1, 623])
def test_a_key_with_one_bit_set_past_word_0_is_live(word):
    from training.engine_state import is_live_mersenne_key
    key = [0] * 624
    key[word] = 1
    assert is_live_mersenne_key(key)
    assert not is_live_mersenne_key([0x7FFFFFFF] + [0] * 623)
    assert is_live_mersenne_key([0x80000000] + [0] * 623)


def test_a_live_key_is_one_numpy_draws_from():
    """What is_live_mersenne_key says is what the generator does: a key with only word 1 set
    draws other than 0."""
    from training.engine_state import is_live_mersenne_key
    key = np.zeros(624, dtype=np.uint32)
    key[1] = 1
    generator = np.random.RandomState()
    generator.set_state(("MT19937", key, 624, 0, 0.0))
    assert is_live_mersenne_key(key.tolist()) and generator.randint(0, 2 ** 31, 8).any()


def test_a_pcg64_state_needs_an_int_odd_increment():
    from training.engine_state import is_numpy_state
    state = np.random.default_rng(3).bit_generator.state
    assert is_numpy_state(state)
    for inc in (True, 2.0 * 0 + 1.0, state["state"]["inc"] + 1):
        assert not is_numpy_state({**state, "state": {**state["state"], "inc": inc}}), inc


# -- sevenrocks_env.web.games: a negative ply --------------------------------------------------

def test_ply_minus_one_is_a_bad_field_not_a_stale_request():
    from sevenrocks_env.web.games import Game, GameError
    at_move_0 = type("AtMove0", (Game,), {"ply": 0})  # (only the ply is read)
    with pytest.raises(GameError) as error:
        at_move_0.__new__(at_move_0)._check_ply(-1, "a move")
    assert error.value.status == 422, error.value.status
    assert "ply must be an int >= 0 (a move number of the match), got -1" in str(error.value)


# -- sevenrocks_env.checks.counted --------------------------------------------------------------

def test_counted_is_plural_for_zero():
    assert (counted(0, "pair"), counted(1, "pair"), counted(2, "round")) \
        == ("0 pairs", "1 pair", "2 rounds")


# -- sevenrocks_env.single_agent: 'self' as an opponent ----------------------------------------

@pytest.mark.parametrize("opponents", [" self ", ("self", "heuristic")])
def test_self_among_the_opponents_is_refused_however_spelled(opponents):
    from sevenrocks_env.single_agent import SingleAgentEnv
    with pytest.raises(ValueError, match="'self' is for the partner only"):
        SingleAgentEnv(opponents=opponents)


# -- training.train: the bar's minutes left ----------------------------------------------------

def _overrides(tmp_path, *more):
    return [f"log_dir={tmp_path / 'runs'}", f"checkpoint_dir={tmp_path / 'ckpt'}",
            "num_matches=8", "num_steps=8", "eval_pairs=1", "final_eval_pairs=1",
            "progress=true", *more]


def test_the_bar_s_minutes_left_never_go_below_zero_and_count_a_resumed_run_s(
        tmp_path, capsys, evaluation_clock):
    """An evaluation that ends past max_minutes leaves 0.0 minutes, not -2.0; a resumed run
    counts the minutes its earlier sessions used (5 here: 25 left of 30, not 30)."""
    from test_training import SMOKE

    from training.config import load_config
    from training.train import main, train
    offset, postfixes = evaluation_clock
    cfg = load_config(SMOKE, _overrides(tmp_path, "total_steps=128", "eval_every=1",
                                        "checkpoint_every=1", "max_minutes=3"))
    train(cfg, final_table=False)
    # past max_minutes after the first update's evaluation (stopped after the next update)
    assert [text.split(" | ")[1] for text in postfixes] == ["stops in 0.0 min"] * 2  # not -2.0
    postfixes.clear()
    step = next((tmp_path / "ckpt").rglob("step_64.pt"))
    from test_training import drop_checkpoints_after
    drop_checkpoints_after(step.parent, 64)  # (resumed from its first checkpoint)
    offset[0] = 0.0
    time.sleep(1.01 - time.time() % 1)  # (TensorBoard's file names: see test_training_resume)
    assert main(["--resume", str(step), "--set", "max_minutes=30", "--set", "progress=true",
                 "--set", "final_eval_pairs=1", "--set", f"log_dir={tmp_path / 'runs'}",
                 "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"]) == 0
    # the resumed session's one update (the last: its evaluation is the final one, after the
    # bar): the 5 minutes of the first session count, 25 of 30 left
    [left] = [text.split(" | ")[1] for text in postfixes]
    assert left.startswith("stops in ") and float(left.split()[2]) == pytest.approx(25, abs=0.5)


def test_the_bar_says_no_minutes_left_without_max_minutes(tmp_path, capsys):
    from test_training import SMOKE

    from training.config import load_config
    from training.train import train
    cfg = load_config(SMOKE, _overrides(tmp_path, "total_steps=64", "eval_every=0",
                                        "max_minutes=0"))
    train(cfg, final_table=False)
    err = capsys.readouterr().err
    assert "SPS" in err and "stops in" not in err, err


# -- sevenrocks_env.torch_archive._overlap_problem: entries laid out one after another --------

_LOCAL_HEADER = "<4s5H3L2H"
_CENTRAL_HEADER = "<4s6H3L5H2L"


def _local(name: bytes, data: bytes, size: int | None = None, crc: int | None = None,
           extra: int = 0) -> bytes:
    """An entry's local header (``extra`` zero bytes of extra field) and ``data``."""
    import struct
    import zlib
    size = len(data) if size is None else size
    crc = zlib.crc32(data) if crc is None else crc
    return struct.pack(_LOCAL_HEADER, b"PK\x03\x04", 20, 0, 0, 0, 0, crc, size, size, len(name),
                       extra) + name + b"\0" * extra + data


def _archive(path, body: bytes, entries) -> None:
    """``body`` (local headers and bytes) then a central directory of ``entries`` (name,
    offset, size, crc) and its end record, as torch.save ends a file."""
    import struct
    directory = b"".join(
        struct.pack(_CENTRAL_HEADER, b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, size, size,
                    len(name), 0, 0, 0, 0, 0, offset) + name
        for name, offset, size, crc in entries)
    path.write_bytes(body + directory + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0,
                                                    len(entries), len(entries),
                                                    len(directory), len(body), 0))


def test_an_entry_starting_in_the_last_bytes_of_the_one_before_overlaps_it(tmp_path):
    """Entry a's stored bytes end with the start of entry b (its first 10 bytes): a's header
    has a name and an extra field of 40 bytes each, which count in where a's bytes end."""
    import zlib

    from sevenrocks_env.torch_archive import read_archive
    name_a = b"archive/data/" + b"a" * 27  # 40 bytes
    b_entry = _local(b"archive/data/b", b"bbbb")
    a_data = b"\1" * 50 + b_entry[:10]
    a_entry = _local(name_a, a_data, extra=40)
    pickle = _local(b"archive/data.pkl", b"\x80\x02}q\x00.")
    body = a_entry + b_entry[10:] + pickle
    _archive(tmp_path / "a.pt", body, [
        (name_a, 0, len(a_data), zlib.crc32(a_data)),
        (b"archive/data/b", len(a_entry) - 10, 4, zlib.crc32(b"bbbb")),
        (b"archive/data.pkl", len(a_entry) + len(b_entry) - 10, 6,
         zlib.crc32(b"\x80\x02}q\x00.")),
    ])
    with pytest.raises(CheckpointError, match="archive entry 'archive/data/b' overlaps the one "
                                              "before it"):
        read_archive(tmp_path / "a.pt")


def test_entries_listed_out_of_order_but_laid_out_apart_are_read(tmp_path):
    """The layout is judged in file order, whatever the central directory's order."""
    import zlib

    from sevenrocks_env.torch_archive import read_archive
    pickle_bytes = b"\x80\x02}q\x00."
    first = _local(b"archive/data/0", b"0123")
    body = first + _local(b"archive/data.pkl", pickle_bytes)
    _archive(tmp_path / "a.pt", body, [
        (b"archive/data.pkl", len(first), len(pickle_bytes), zlib.crc32(pickle_bytes)),
        (b"archive/data/0", 0, 4, zlib.crc32(b"0123")),
    ])
    assert read_archive(tmp_path / "a.pt") == (pickle_bytes, 4)


def test_a_last_entry_running_into_the_central_directory_is_refused(tmp_path):
    import zlib

    from sevenrocks_env.torch_archive import read_archive
    pickle_bytes = b"\x80\x02}q\x00."
    body = _local(b"archive/data.pkl", pickle_bytes, size=len(pickle_bytes) + 8)
    _archive(tmp_path / "a.pt", body, [
        (b"archive/data.pkl", 0, len(pickle_bytes) + 8, zlib.crc32(pickle_bytes))])
    with pytest.raises(CheckpointError, match="the last archive entry overlaps the central "
                                              "directory"):
        read_archive(tmp_path / "a.pt")


def test_an_entry_without_its_local_header_is_named(tmp_path):
    import zlib

    from sevenrocks_env.torch_archive import read_archive
    pickle_bytes = b"\x80\x02}q\x00."
    body = b"PK\x03\x05" + _local(b"archive/data.pkl", pickle_bytes)[4:]
    _archive(tmp_path / "a.pt", body, [
        (b"archive/data.pkl", 0, len(pickle_bytes), zlib.crc32(pickle_bytes))])
    with pytest.raises(CheckpointError, match="archive entry 'archive/data.pkl' has no local "
                                              "header"):
        read_archive(tmp_path / "a.pt")
