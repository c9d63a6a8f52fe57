"""Tests from a mutation audit of the file-safety utilities (``checks``, ``textfile``,
``atomic_file``, ``pickle_scan``, ``arena_log_lock``, ``match_state``): each pins a behaviour
that a small change to the product code left unnoticed by the earlier tests."""

from __future__ import annotations

import errno
import gc
import os
import re
import warnings

import pytest

from sevenrocks_env import textfile
from sevenrocks_env.atomic_file import atomic_path, check_output_file
from sevenrocks_env.checks import shown
from sevenrocks_env.textfile import decoded, read_text


# -- checks.shown --------------------------------------------------------------------------------

def test_a_long_string_is_shown_elided_in_its_middle_not_cut_off():
    """A string is cut to ~30 characters with reprlib's ``...`` in its middle, both quotes kept,
    not cut at the 100-character bound of the whole message."""
    text = shown("a" * 60 + "z" * 140)
    assert len(text) <= 32 and text.startswith("'aaa") and text.endswith("zzz'")
    assert "..." in text


def test_an_int_past_64_bits_is_shown_by_its_size_and_one_within_by_its_digits():
    assert shown(2 ** 64 - 1) == str(2 ** 64 - 1)
    assert shown(2 ** 64) == "<int of 65 bits>"
    assert shown(-(2 ** 100)) == "<int of 101 bits>"


# -- textfile ------------------------------------------------------------------------------------

def test_a_bad_byte_is_named_by_its_position_and_utf8_with_a_bom_as_utf8():
    """The message names the first byte that is not text (counted from 0), and a UTF-8 file
    with Notepad's byte order mark is "not UTF-8 text", never "UTF-8-SIG"; UTF-16 is named as
    such."""
    with pytest.raises(ValueError, match=r"^f\.json is not UTF-8 text \(byte 2\)$"):
        decoded(b"ab\xffcd", "f.json")
    with pytest.raises(ValueError, match=r"^f\.json is not UTF-8 text \(byte \d+\)$"):
        decoded(b"\xef\xbb\xbfab\xffc", "f.json")
    with pytest.raises(ValueError, match=r"^f is not UTF-16-LE text \(byte 4\)$"):
        decoded("ab".encode("utf-16-le") + b"\x00\xd8a\x00", "f")


def test_a_silent_pipe_is_refused_after_the_documented_60_seconds(tmp_path, monkeypatch):
    """docs/render.md: "a pipe that sends nothing for 60 s is refused"; the wait itself is not
    timed here (``_ready`` answers at once), only the bound it is given and names."""
    waits = []

    def never_ready(descriptor, seconds):
        waits.append(seconds)
        return False
    monkeypatch.setattr(textfile, "_ready", never_ready)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=re.escape("nothing was written to in 60 s; not a x")):
        read_text(fifo, 100, "x")
    assert waits == [60.0]


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.timeout(20)
def test_a_refused_file_leaves_no_descriptor_open(tmp_path, monkeypatch):
    """A folder, a device or a silent FIFO refused by ``read_text`` is closed again: a server
    or a long run that is handed many of them would otherwise run out of descriptors."""
    monkeypatch.setattr(textfile, "PIPE_WAIT_S", 0.05)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    before = _open_descriptors()
    for path in [tmp_path, "/dev/zero", fifo] * 3:
        with pytest.raises(ValueError):
            read_text(path, 100, "x")
    assert _open_descriptors() == before


# -- atomic_file ---------------------------------------------------------------------------------

def test_the_temporary_file_is_beside_the_target(tmp_path):
    """The partial file is made in the target's folder, so that the final rename is atomic (and
    possible at all when the folder is on another file system than the temporary folder)."""
    target = tmp_path / "out.gif"
    with atomic_path(target) as partial:
        assert partial.parent == target.parent and partial.name.startswith(".out.gif.")
        partial.write_bytes(b"GIF")
    assert target.read_bytes() == b"GIF"


def test_a_failed_write_into_the_temporary_file_names_the_output(tmp_path):
    """An ``OSError`` about the partial file (numpy, torch writing through a file object) is
    reported as the output's, never under the temporary name the user never gave."""
    target = tmp_path / "labels.npz"
    with pytest.raises(OSError) as error:
        with atomic_path(target) as partial:
            raise OSError(errno.ENOSPC, "No space left on device", str(partial))
    assert error.value.filename == str(target) and error.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_through_a_link_names_the_link_the_user_gave(tmp_path):
    real = tmp_path / "real.pt"
    real.write_bytes(b"old")
    link = tmp_path / "latest.pt"
    link.symlink_to(real)
    with pytest.raises(OSError) as error:
        with atomic_path(link):
            raise OSError(errno.EFBIG, "File too large")
    assert error.value.filename == str(link)
    assert real.read_bytes() == b"old" and link.is_symlink()


def test_an_output_that_is_the_input_by_another_name_is_refused(tmp_path):
    """The same file written ``a/../a/in.pt``, through a link or as a hard link is still the
    input (``os.path.samefile``, not the spelling of the path)."""
    folder = tmp_path / "a"
    folder.mkdir()
    source = folder / "in.pt"
    source.write_bytes(b"weights")
    (tmp_path / "link.pt").symlink_to(source)
    os.link(source, tmp_path / "hard.pt")
    for other in (folder / ".." / "a" / "in.pt", tmp_path / "link.pt", tmp_path / "hard.pt"):
        with pytest.raises(ValueError, match="is the input"):
            check_output_file(other, [source])
    assert check_output_file(tmp_path / "out.pt", [source]) == tmp_path / "out.pt"


# -- arena_log_lock ------------------------------------------------------------------------------

@pytest.mark.parametrize("make, why", [(None, "does not exist"), ("file", "is not a folder")])
def test_a_log_whose_folder_is_missing_or_a_file_is_refused_saying_which(tmp_path, make, why):
    from sevenrocks_env.arena_log import PairLogError
    from sevenrocks_env.arena_log_lock import open_locked
    folder = tmp_path / "logs"
    if make:
        folder.write_text("not a folder")
    path = folder / "pairs.jsonl"
    with pytest.raises(PairLogError, match=re.escape(f"{path}: the folder {folder} {why} (")):
        open_locked(path)
    assert [p.name for p in tmp_path.iterdir()] == (["logs"] if make else [])


def test_a_new_log_gets_the_mode_open_gives_a_new_file_and_a_fifo_is_refused(tmp_path):
    """A log made by a run can be read by the user's other tools as any file ``open()`` makes
    (0666 less the umask); a FIFO under the log's name is never taken as a log."""
    import stat

    from sevenrocks_env.arena_log import PairLogError
    from sevenrocks_env.arena_log_lock import open_locked, release
    umask = os.umask(0o022)
    try:
        release(open_locked(tmp_path / "new.jsonl"))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.jsonl").st_mode) == 0o644
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(PairLogError, match="not a regular file"):
        open_locked(fifo)


def test_what_a_run_wrote_is_in_the_file_before_its_lock_is_let_go(tmp_path, monkeypatch):
    """The next run may read the log the moment the lock goes: the buffered lines are written
    out first."""
    from sevenrocks_env import arena_log_lock
    real = arena_log_lock.fcntl
    path = tmp_path / "pairs.jsonl"
    sizes = []

    class Recording:
        LOCK_EX, LOCK_NB, LOCK_UN = real.LOCK_EX, real.LOCK_NB, real.LOCK_UN

        @staticmethod
        def flock(descriptor, operation):
            if operation == real.LOCK_UN:
                sizes.append(os.path.getsize(path))
            return real.flock(descriptor, operation)
    monkeypatch.setattr(arena_log_lock, "fcntl", Recording)
    file = arena_log_lock.open_locked(path)
    file.write(b'{"pair": 0}\n')
    arena_log_lock.release(file)
    assert sizes == [12] and path.read_bytes() == b'{"pair": 0}\n'


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_released_log_s_descriptor_number_is_not_nulled_in_a_later_child(tmp_path):
    """Once a log is released, a file that reuses its descriptor number is the child's own in
    a process forked later (not pointed at the null device as a held log's would be)."""
    from sevenrocks_env.arena_log_lock import open_locked, release
    log = open_locked(tmp_path / "pairs.jsonl")
    number = log.fileno()
    release(log)
    (tmp_path / "other.txt").write_bytes(b"data")
    other = os.open(tmp_path / "other.txt", os.O_RDONLY)
    if other != number:  # (the lowest free number, the log's, unless one below was freed)
        os.dup2(other, number)
        os.close(other)
        other = number
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover (the child)
            os._exit(0 if os.read(other, 4) == b"data" else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(other)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_worker_s_own_file_on_the_log_s_number_is_its_own_in_the_worker_s_children(tmp_path):
    """A worker forked while a log is held gets the log's descriptor pointed at the null device
    and holds no log: a file it opens later on that number is still its own in a process it
    forks in turn."""
    from sevenrocks_env.arena_log_lock import open_locked, release
    log = open_locked(tmp_path / "pairs.jsonl")
    (tmp_path / "other.txt").write_bytes(b"data")
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover (the worker: exits with its own child's verdict)
            other = os.open(tmp_path / "other.txt", os.O_RDONLY)
            os.dup2(other, log.fileno())
            grandchild = os.fork()
            if grandchild == 0:
                os._exit(0 if os.read(log.fileno(), 4) == b"data" else 1)
            os._exit(os.waitstatus_to_exitcode(os.waitpid(grandchild, 0)[1]))
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release(log)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_a_refused_second_run_leaves_no_descriptor_open_and_none_is_released_as_nothing(
        tmp_path):
    from sevenrocks_env.arena_log import PairLogError
    from sevenrocks_env.arena_log_lock import open_locked, release
    path = tmp_path / "pairs.jsonl"
    held = open_locked(path)
    try:
        before = _open_descriptors()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            for _ in range(3):
                with pytest.raises(PairLogError, match="another arena is using this pair log"):
                    open_locked(path)
            gc.collect()
        assert _open_descriptors() == before
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]  # closed
    finally:
        release(held)
    assert release(None) is None


# -- match_state ---------------------------------------------------------------------------------

def test_a_new_match_needs_a_seed_and_keep_history_is_a_bool_or_0_or_1():
    import numpy as np

    from sevenrocks_env.match_state import checked_settings
    from sevenrocks_env.rules import Match
    with pytest.raises(TypeError, match=r"^seed must be a non-negative int \(the match is "
                                        r"dealt from it\), got None$"):
        Match.new(None)
    for bad in (2, -1, 0.5, "yes"):
        with pytest.raises(TypeError, match="keep_history must be a bool, got"):
            Match.new(1, keep_history=bad)
    assert checked_settings(1, 250, None, np.int64(0), True) == (1, 250, None, False)


def test_a_zero_dimensional_array_is_refused_as_scores_or_hands_in_words():
    """``np.array(5)`` is not a list (``list()`` of it raises "iteration over a 0-d array")."""
    import numpy as np

    from sevenrocks_env.rules import Match
    with pytest.raises(ValueError, match="scores must be two ints below the target"):
        Match.from_deal([0] * 4, 0, scores=np.array(0))
    with pytest.raises(ValueError, match="hands must be a list of four tile bitmasks"):
        Match.from_deal(np.array(5), 0)


@pytest.mark.timeout(20)  # a "hand" of -1 made the record's replay loop for ever
@pytest.mark.parametrize("hand", [-1, 2 ** 28])
def test_a_history_hand_that_is_not_a_set_of_tiles_has_no_record(hand):
    from sevenrocks_env.match_state import replays_to_its_state
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    match = Match.new(3)
    for _ in range(5):
        apply_action(match, legal_actions(match)[0])
    assert replays_to_its_state(match)
    match.history[0].hands[0] = hand
    assert not replays_to_its_state(match)


def test_four_unknown_fields_are_counted_after_the_first_three():
    from sevenrocks_env.rules import Match
    state = {**Match.new(3).to_state(), "a": 1, "b": 2, "c": 3, "d": 4}
    with pytest.raises(ValueError, match=r"unknown fields \['a', 'b', 'c', \.\.\. \(4 in all\)\]$"):
        Match.from_state(state)


@pytest.mark.parametrize("slot", [0, 1], ids=["west", "east"])
def test_branch_started_on_a_straight_side_is_refused(slot):
    """Only the north and south branches are started (R4); west and east are the line's ends."""
    from sevenrocks_env.rules import Match
    from test_match_state import good_state
    state = good_state()
    assert state["placements"] > 0 and state["branch_started"][slot] is False
    state["branch_started"][slot] = True
    with pytest.raises(ValueError, match=r"match state: branch_started must be set only for "
                                         r"north/south"):
        Match.from_state(state)


def _state_without_a_spinner() -> dict:
    """Three tiles down and no double among them (seed 1): the spinner is -1."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    match = Match.new(1, keep_history=False)
    for _ in range(3):
        apply_action(match, legal_actions(match)[0])
    state = match.to_state()
    assert state["spinner"] == -1 and state["placements"] == 3 and state["round_index"] == 0
    return state


@pytest.mark.parametrize("field, value, words", [
    ("spinner", -2, "spinner must be an int in [-1, 6]"),
    ("round_index", -1, "round_index must be a non-negative int"),
    ("round_index", 10 ** 9 + 1, "round_index must be a non-negative int"),
    ("placements", 29, "placements must be an int in [0, 28]"),
])
def test_a_count_out_of_its_range_is_named_with_its_range(field, value, words):
    from sevenrocks_env.rules import Match
    state = _state_without_a_spinner()
    Match.from_state(state)
    state[field] = value
    with pytest.raises(ValueError, match=re.escape(f"match state: {words}, got {value}")):
        Match.from_state(state)


def test_scores_from_a_deal_are_at_least_minus_a_billion():
    from sevenrocks_env.rules import Match, deal
    hands, opener = deal(1, 0)
    Match.from_deal(hands, opener, scores=(-10 ** 9, 0), round_index=10 ** 9 // 120)
    with pytest.raises(ValueError, match=r"scores must be two ints .* at least -1000000000"):
        Match.from_deal(hands, opener, scores=(-10 ** 9 - 1, 0))


def test_a_numpy_void_is_shown_by_its_type_name():
    import numpy as np
    assert shown(np.void(b"ab")) == "<void>"
    assert shown(np.zeros(1, dtype=[("a", "i4"), ("b", "f4")])[0]) == "<void>"


def test_the_file_read_is_the_file_opened_even_if_its_name_changes_meanwhile(
        tmp_path, monkeypatch):
    """The kind of file is that of the descriptor opened, not of whatever the path names a
    moment later (here a folder put in its place)."""
    path = tmp_path / "record.json"
    path.write_text("{}")
    real_open = os.open

    def open_then_swap(name, flags, *args):
        descriptor = real_open(name, flags, *args)
        os.rename(path, tmp_path / "moved.json")
        path.mkdir()
        return descriptor
    monkeypatch.setattr(textfile.os, "open", open_then_swap)
    assert read_text(path, 100, "game record") == "{}"


def test_writing_a_new_file_leaves_the_process_umask_as_it_was(tmp_path):
    umask = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "new.gif") as partial:
            partial.write_bytes(b"GIF")
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(umask)


def test_a_folder_under_the_log_s_name_cannot_be_opened_and_says_so(tmp_path):
    from sevenrocks_env.arena_log import PairLogError
    from sevenrocks_env.arena_log_lock import open_locked
    (tmp_path / "pairs.jsonl").mkdir()
    with pytest.raises(PairLogError, match=r"pairs\.jsonl: cannot open the pair log \(Is a "
                                           r"directory\)$"):
        open_locked(tmp_path / "pairs.jsonl")
