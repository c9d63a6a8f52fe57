"""Mutation audit of ``sevenrocks_env/policy_file.py`` and ``training/checkpoint.py``: the archive
checks a hostile policy file meets (its end records, its entries' sizes and flags, a second
data.pkl), each refused with the message that names what is wrong."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from sevenrocks_env.policy import CheckpointError, read_checkpoint  # noqa: E402
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402
from test_hostile_checkpoints import _with_a_copy_of_data_pkl  # noqa: E402

#: torch.save's archive ends with a zip64 end record (56 bytes), its locator (20) and the plain
#: end record (22).
END, LOCATOR, END64 = 22, 20, 56


def refused(path, words: str) -> str:
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    message = str(info.value)
    assert len(message) < MESSAGE_LIMIT and "\n" not in message, message[:300]
    assert words in message, message
    return message


def edited(path: Path, *changes) -> Path:
    """``path`` with each ``(offset, struct format, function of the old value)`` applied; a
    negative offset counts from the end of the file."""
    data = bytearray(path.read_bytes())
    for offset, fmt, change in changes:
        at = offset % len(data)
        (old,) = struct.unpack_from(fmt, data, at)
        struct.pack_into(fmt, data, at, change(old))
    path.write_bytes(bytes(data))
    return path


def test_the_file_ends_with_the_records_torch_save_writes(tmp_path):
    """The layout these tests edit: zip64 end record, locator, plain end record, no comment."""
    data = save_policy(tmp_path / "p.pt").read_bytes()
    assert data[-END:-END + 4] == b"PK\x05\x06" and data[-2:] == b"\0\0"
    assert data[-END - LOCATOR:-END - LOCATOR + 4] == b"PK\x06\x07"
    assert data[-END - LOCATOR - END64:-END - LOCATOR - END64 + 4] == b"PK\x06\x06"
    assert read_checkpoint(tmp_path / "p.pt")


def test_a_plain_end_record_that_disagrees_with_the_zip64_one_is_refused(tmp_path):
    """Readers differ on which end record wins: the plain one's entry count one more than the
    zip64 one's (Python's zipfile reads the zip64 one and would load it) is refused."""
    path = edited(save_policy(tmp_path / "p.pt"), (-END + 10, "<H", lambda n: n + 1))
    refused(path, "its zip64 end record disagrees with its plain end record")


def test_a_zip64_locator_that_points_elsewhere_is_refused(tmp_path):
    path = edited(save_policy(tmp_path / "p.pt"), (-END - LOCATOR + 8, "<Q", lambda at: at - 1))
    refused(path, "its zip64 end records are not where their locator says")


def test_end_records_that_count_another_number_of_entries_are_refused(tmp_path):
    """Both end records agree with each other (entries on this disk and in all, one more than
    the index holds): the count must be the index's, named as such (not a reader's error)."""
    one_more = (lambda n: n + 1)
    zip64 = -END - LOCATOR - END64
    path = edited(save_policy(tmp_path / "p.pt"), (-END + 8, "<H", one_more),
                  (-END + 10, "<H", one_more), (zip64 + 24, "<Q", one_more),
                  (zip64 + 32, "<Q", one_more))
    refused(path, "holds another number of entries")


def _central_header(data: bytes, name: bytes) -> int:
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length] == name:
            return at
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


@pytest.mark.parametrize("bit, what", [(0x1, "is encrypted"), (0x20, "is patched data"),
                                       (0x40, "is strongly encrypted")])
def test_an_entry_flagged_as_torch_save_never_writes_is_named(tmp_path, bit, what):
    """An entry flagged encrypted or patched (in the index) is refused naming the flag, not
    with whatever zipfile raises while reading it."""
    path = save_policy(tmp_path / "p.pt")
    at = _central_header(path.read_bytes(), b"archive/data.pkl")
    edited(path, (at + 8, "<H", lambda flags: flags | bit))
    refused(path, f"archive entry 'archive/data.pkl' {what}; torch.save writes plain entries")


def test_a_stored_entry_whose_stored_size_is_not_its_size_is_refused(tmp_path):
    """"Stored" with a compressed size other than its size is not what torch.save writes."""
    path = save_policy(tmp_path / "p.pt")
    at = _central_header(path.read_bytes(), b"archive/data.pkl")
    edited(path, (at + 20, "<I", lambda size: size + 1))
    refused(path, "archive entry 'archive/data.pkl' is compressed")


def test_a_data_pkl_at_the_top_of_the_archive_counts_as_a_second_one(tmp_path):
    """A ``data.pkl`` outside any folder is a pickle a reader may take: two in all, refused."""
    path = _with_a_copy_of_data_pkl(save_policy(tmp_path / "p.pt"), lambda name: "data.pkl")
    refused(path, "2 data.pkl entries")


def test_an_end_record_that_declares_a_comment_is_refused(tmp_path):
    """torch.save writes no archive comment: an end record declaring one (here one byte, cut
    off) is not where readers agree the archive ends."""
    path = edited(save_policy(tmp_path / "p.pt"), (-2, "<H", lambda length: 1))
    refused(path, "its archive does not end with its end record")



@pytest.mark.parametrize("features", [0, False])
def test_an_mlp_scorer_without_action_features_is_refused_when_read(tmp_path, features):
    """Every reader of ``read_checkpoint``'s dict (exports, model cards) gets a network that
    can be built: an mlp scorer needs action features, said by the checkpoint check itself."""
    from sevenrocks_env.policy_file import check_model_config
    config = {"hidden_sizes": [16], "action_features": features, "action_scorer": "mlp"}
    with pytest.raises(CheckpointError, match="action_scorer 'mlp' needs action features"):
        check_model_config(config)
    refused(save_policy(tmp_path / "p.pt", model_config=config), "needs action features")


def test_an_archive_of_exactly_the_most_entries_is_read(tmp_path, monkeypatch):
    """``MAX_ENTRIES`` entries are allowed, one more is refused (a training checkpoint with a
    full pool sits near the bound)."""
    import sevenrocks_env.torch_archive as torch_archive
    path = save_policy(tmp_path / "p.pt")
    with zipfile.ZipFile(path) as archive:
        count = len(archive.infolist())
    monkeypatch.setattr(torch_archive, "MAX_ENTRIES", count)
    assert read_checkpoint(path)
    monkeypatch.setattr(torch_archive, "MAX_ENTRIES", count - 1)
    refused(path, f"holds {count} archive entries, more than {count - 1}")

# -- training/checkpoint.py -----------------------------------------------------------------------

def test_a_failed_save_that_is_not_a_failed_write_is_raised_as_it_was(tmp_path, monkeypatch):
    """torch.save's own RuntimeError (nothing failed to write) is raised unchanged, not swapped
    for the kept write error (there is none) and the old file is left as it was."""
    import training.checkpoint as checkpoint

    def failing(data, file):
        file.write(b"part")
        raise RuntimeError("torch could not serialise this")
    target = tmp_path / "latest.pt"
    target.write_bytes(b"old")
    monkeypatch.setattr(checkpoint.torch, "save", failing)
    with pytest.raises(RuntimeError, match="torch could not serialise this"):
        checkpoint.save_checkpoint(target, {})
    assert target.read_bytes() == b"old"


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs named pipes")
def test_an_evaluated_mark_that_is_a_pipe_is_no_mark_and_is_never_opened(tmp_path):
    """Opening a FIFO for reading waits for a writer: resuming would hang.  A writer here
    answers any reader with a mark of the very step, so opening it would end the resume
    ("the run is complete") instead of hanging the test."""
    import errno
    import os
    import threading
    from training.checkpoint import EVALUATED, check_not_complete
    fifo = tmp_path / EVALUATED
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no reader yet
            except OSError as error:
                if error.errno != errno.ENXIO:
                    return
                stop.wait(0.01)
                continue
            os.write(fd, b'{"global_step": 512}\n')
            os.close(fd)
            return
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        check_not_complete(tmp_path, {"update": 2, "global_step": 512}, 2)
    finally:
        stop.set()
        thread.join()


def test_snapshots_count_only_when_past_policies_are_opponents():
    """``max_snapshots`` copies of the policy are kept only with ``past`` among the opponents:
    without it a large ``max_snapshots`` adds nothing to the estimate (nor refuses the run)."""
    from training.checkpoint import check_checkpoint_size, checkpoint_estimate
    from training.config import load_config
    smoke = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    def estimate(*overrides):
        return checkpoint_estimate(load_config(smoke, ["hidden_sizes=[4096, 2048]", *overrides]))
    one, two = estimate("max_snapshots=1"), estimate("max_snapshots=2")  # past is an opponent
    policy = two - one
    assert policy > 0
    assert estimate("opponents=[greedy]", "max_snapshots=1000") == one - policy
    # the networks fit in the bound; 1000 snapshots of the policy would not
    check_checkpoint_size(load_config(smoke, ["opponents=[greedy]", "max_snapshots=1000",
                                              "hidden_sizes=[4096, 2048]"]))
