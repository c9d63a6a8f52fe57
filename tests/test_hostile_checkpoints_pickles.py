"""Hostile checkpoints (issue 15), the archive and its pickle: keys that take hours to hash or
nest too deep, an archive hidden behind another, a second data.pkl, the pickle's size, and
objects that would expand past what the file stores, all refused before unpickling or
allocating.  The shipped policy, declared networks, weights and damaged archives:
test_hostile_checkpoints.py."""

from __future__ import annotations

import struct
from collections import OrderedDict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import PolicyNet, load_policy, read_checkpoint  # noqa: E402
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402

from test_hostile_checkpoints import _with_a_copy_of_data_pkl, refused  # noqa: E402


def _insert_into_pickle(path, extra: bytes) -> None:
    """Rewrite ``path`` with ``extra`` pickle opcodes (a key and its value) inserted as the first
    item of its top-level dict: torch.save's pickle starts PROTO 2, EMPTY_DICT, BINPUT 0, MARK."""
    import zipfile
    with zipfile.ZipFile(path) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            if name.endswith("/data.pkl"):
                assert data[:6] == b"\x80\x02}q\x00("
                data = data[:6] + extra + data[6:]
            archive.writestr(name, data)


def test_a_key_that_takes_hours_to_hash_is_refused_before_unpickling(tmp_path):
    """A tuple of depth 40 whose two items are the same tuple (memo references): ~400 bytes of
    pickle, but building the dict hashes it, visiting 2**40 leaves (about 13 hours)."""
    import struct
    key, memo = b"K\x00\x85r" + struct.pack("<I", 10**5), 10**5        # (0,), LONG_BINPUT
    for _ in range(40):
        get = b"j" + struct.pack("<I", memo)                             # LONG_BINGET
        memo += 1
        key += get + get + b"\x86r" + struct.pack("<I", memo)           # TUPLE2, LONG_BINPUT
    path = save_policy(tmp_path / "hash.pt")
    _insert_into_pickle(path, key + b"K\x01")
    assert refused_in_a_child(path).endswith("(a small pickle referencing the same objects over "
                                             "and over)")


def refused_in_a_child(path, seconds: float = 120) -> str:
    """:func:`refused`'s message, from a child process killed after ``seconds``: a file the
    scan no longer refuses is unpickled, and hashing its key would hang the tests for hours."""
    import subprocess
    import sys
    code = ("import sys\nfrom sevenrocks_env.policy import CheckpointError, load_policy\n"
            "try:\n    load_policy(sys.argv[1])\nexcept CheckpointError as error:\n"
            "    print(error)\nelse:\n    print('loaded')\n")
    try:
        run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, timeout=seconds, cwd=Path(__file__).parents[1])
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path.name} took over {seconds:g} s: it was not refused")
    assert run.returncode == 0, run.stderr[-2000:]
    message = run.stdout.rstrip("\n")
    assert len(message) < MESSAGE_LIMIT and "\n" not in message, message[:300]
    return message


def test_a_key_nested_too_deep_to_hash_is_refused_before_unpickling(tmp_path):
    """A chain of one-item tuples as a dict key: 200,000 deep (200 kB) crashed the interpreter
    with a segmentation fault while torch's unpickler hashed it; 5,000 here (which Python
    survives), refused by the scan's depth bound all the same."""
    path = save_policy(tmp_path / "deep.pt")
    _insert_into_pickle(path, b")" + b"\x85" * 5000 + b"K\x01")    # EMPTY_TUPLE, TUPLE1...
    assert "nested more than" in refused_in_a_child(path)  # (a crash there fails this test only)


def _two_archives_in_one(path, evil_pickle: bytes) -> Path:
    """``path`` rewritten as two archives back to back, one end record: Python's zipfile finds
    the central directory before it and shifts every offset by the bytes before (the second
    archive, data.pkl as saved); torch's reader takes the offsets as written (the first, whose
    data.pkl is ``evil_pickle``, padded to the same length)."""
    import io
    import zipfile

    def archive_of(entries) -> tuple[bytes, bytes, bytes]:  # (entries, central dir, end)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for name, data in entries:
                archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
        blob = buffer.getvalue()
        end = blob.rindex(b"PK\x05\x06")
        size, offset = struct.unpack("<II", blob[end + 12:end + 20])
        return blob[:offset], blob[offset:offset + size], blob[end:]
    with zipfile.ZipFile(path) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    pickled = next(data for name, data in entries if name.endswith("/data.pkl"))
    evil_pickle += b"\0" * (len(pickled) - len(evil_pickle))  # (after its STOP: never read)
    first = archive_of([(name, evil_pickle if name.endswith("/data.pkl") else data)
                        for name, data in entries])
    second = archive_of(entries)
    path.write_bytes(first[0] + first[1] + second[0] + second[1] + second[2])
    return path


def test_an_archive_behind_another_is_refused_before_torch_reads_another_data_pkl(tmp_path):
    """Python's zipfile (the checks, the scan) and torch's reader (miniz: what is unpickled)
    must see one archive: with two in one file, the scan passed a clean data.pkl and torch
    unpickled the first archive's, a tuple of depth 40 made of memo references as a dict key
    (2**40 leaves to hash: a 3 kB file held a reader for days; 2**24 took 64 s)."""
    bomb = b"\x80\x02}(X\x01\x00\x00\x00k](" + b")q\x01"  # {"k": [(), t1, ...], t40: 0}
    for level in range(1, 41):  # t_level = (t_level-1, t_level-1): BINGET x2, TUPLE2, BINPUT
        bomb += b"h" + bytes([level]) + b"h" + bytes([level]) + b"\x86q" + bytes([level + 1])
    bomb += b"eh" + bytes([41]) + b"K\x00u."                 # APPENDS, key t40, 0, SETITEMS
    path = _two_archives_in_one(save_policy(tmp_path / "two.pt"), bomb)
    assert "not where its end record says" in refused_in_a_child(path)


def test_a_data_pkl_one_letter_case_apart_is_refused(tmp_path):
    """torch finds an archive's records ignoring case: a second entry ``.../DATA.PKL`` was
    the one unpickled, never scanned (a hash bomb in it hung every reader)."""
    path = _with_a_copy_of_data_pkl(save_policy(tmp_path / "case.pt"),
                                    lambda name: name[:-len("data.pkl")] + "DATA.PKL")
    refused(path, "differ only in letter case")


def test_the_pickle_size_is_bounded(tmp_path, monkeypatch):
    """Scanning and unpickling run in pure Python (seconds a MB): a data.pkl of a gigabyte
    held a reader for most of an hour."""
    import zipfile
    import sevenrocks_env.torch_archive as torch_archive
    path = save_policy(tmp_path / "p.pt")
    with zipfile.ZipFile(path) as archive:
        size = next(i.file_size for i in archive.infolist() if i.filename.endswith("data.pkl"))
    monkeypatch.setattr(torch_archive, "MAX_PICKLE_BYTES", size)
    assert load_policy(path)  # exactly the bound
    monkeypatch.setattr(torch_archive, "MAX_PICKLE_BYTES", size - 1)
    refused(path, "its data.pkl is")


@pytest.mark.parametrize("extra, words", [
    ("dag", "would expand"),          # x = [x, x] 40 times: hours to print or copy
    ("expanded", "tensors hold"),     # one stored float seen as a million (stride 0)
    ("in_a_set", "tensors hold"),     # the same inside a set (the walk skipped sets)
    ("repeated", "tensors hold"),     # one tensor referenced 20 times: a copy makes 20 tensors
    ("twice", "tensors hold"),        # referenced twice: already more than the file stores
    ("many", "would expand"),         # a small tensor referenced 1000 times
    ("cycle", "filled after being referenced"),  # x = [x]: walking it never ends
    # where the walk did not look: a dict's keys, attributes (an OrderedDict's, a tensor's: the
    # safe loader's BUILD and rebuild set them), a tensor's backward hooks (restored as given)
    ("as_a_key", "tensors hold"),
    ("an_attribute", "tensors hold"),
    ("a_tensor_s_attribute", "tensors hold"),
    ("in_backward_hooks", "tensors hold"),
])
def test_objects_larger_than_the_file_are_refused(tmp_path, extra, words):
    value: object = []
    if extra == "dag":
        for _ in range(40):
            value = [value, value]
    elif extra == "expanded":
        value = torch.zeros(1).expand(1000, 1000)
    elif extra == "in_a_set":
        value = {torch.zeros(1).expand(1000, 1000)}
    elif extra == "cycle":
        value.append(value)
    elif extra == "repeated":
        value = [torch.zeros(10**5)] * 20
    elif extra == "twice":
        value = [torch.zeros(10**5)] * 2
    elif extra == "as_a_key":
        value = {torch.zeros(1).expand(1000, 1000): 1}
    elif extra in ("an_attribute", "a_tensor_s_attribute"):
        value = OrderedDict() if extra == "an_attribute" else torch.zeros(1)
        value.big = torch.zeros(1).expand(1000, 1000)
    elif extra == "in_backward_hooks":
        hooks = OrderedDict(hook=torch.zeros(1).expand(1000, 1000))

        class Hooked:  # a file, not torch.save (which writes no hooks), can give them
            def __reduce__(self):
                return (torch._utils._rebuild_tensor_v2,
                        (torch.zeros(1).untyped_storage(), 0, (1,), (1,), False, hooks))
        value = Hooked()
    else:
        value = [torch.zeros(10)] * 1000
    refused(save_policy(tmp_path / f"{extra}.pt", extra=value), words)
    assert read_checkpoint(save_policy(tmp_path / "plain.pt", extra=[torch.zeros(1000)]))


def test_a_second_data_pkl_in_another_folder_is_refused(tmp_path):
    """torch unpickles the data.pkl of the archive's own folder: with a second one elsewhere,
    the one scanned need not be the one read."""
    path = _with_a_copy_of_data_pkl(save_policy(tmp_path / "two.pt"), lambda name: "other/data.pkl")
    refused(path, "2 data.pkl entries")


def test_the_bytes_a_file_stores_are_its_tensor_data_alone(tmp_path):
    """The tensors' bound is the tensor data the archive stores, not its pickle and records."""
    net = PolicyNet([16])
    stored = sum(t.numel() * t.element_size() for t in net.state_dict().values()) + 4
    message = refused(save_policy(tmp_path / "p.pt", net, extra=torch.zeros(1).expand(10**6)),
                      "tensors hold")
    assert f"but the file stores {stored:,} " in message, message


def _nested_entries(path: Path, count: int, kernel: int) -> Path:
    """``path`` rewritten so that its tensor entries nest: entry k's stored bytes are the local
    headers and bytes of entries k+1, k+2, ... and a kernel of zeros, every CRC right.  The
    file grows by ``count`` headers, but its entries declare about ``count`` times its size."""
    import io
    import zipfile
    import zlib
    local = struct.Struct("<4s5H3L2H")
    central = struct.Struct("<4s6H3L5H2L")
    names = [f"archive/data/{k}" for k in range(count)]
    sizes = [kernel + sum(local.size + len(n) for n in names[k + 1:]) for k in range(count)]
    buffer = io.BytesIO()
    torch.save({"t": [torch.zeros(size, dtype=torch.uint8) for size in sizes]}, buffer)
    with zipfile.ZipFile(buffer) as archive:
        others = [(i.filename, archive.read(i)) for i in archive.infolist()
                  if "/data/" not in i.filename]
    out, directory = bytearray(), bytearray()

    def add(name: str, data_crc: int, size: int, offset: int) -> None:
        directory.extend(central.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, data_crc, size, size,
                                      len(name), 0, 0, 0, 0, 0, offset) + name.encode())

    for name, data in others:
        add(name, zlib.crc32(data), len(data), len(out))
        out += local.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(data), len(data), len(data),
                          len(name), 0) + name.encode() + data
    blob, facts = b"\0" * kernel, []
    for name in reversed(names):  # innermost first: each entry's bytes hold the ones after it
        facts.append((zlib.crc32(blob), len(blob)))
        blob = local.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, facts[-1][0], len(blob), len(blob),
                          len(name), 0) + name.encode() + blob
    offset = len(out)
    for name, (crc, size) in zip(names, reversed(facts)):
        add(name, crc, size, offset)
        offset += local.size + len(name)
    out += blob
    start = len(out)
    entries = len(others) + count
    out += directory + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries,
                                   len(directory), start, 0)
    path.write_bytes(bytes(out))
    return path


def test_entries_sharing_their_bytes_are_refused_before_torch_allocates_them(tmp_path,
                                                                             monkeypatch):
    """Nested entries (zip-bomb style, every checksum right): a 0.75 MB file declared 375 MB of
    tensors, all allocated by torch.load before the format check refused the file (and the
    stored bytes the tensors are compared with were as inflated).  Python's zipfile refuses
    overlapped entries only since 3.11.8/3.12.2."""
    import zipfile
    import sevenrocks_env.policy_file as policy_file
    path = _nested_entries(tmp_path / "nested.pt", 200, 100)
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None  # every checksum right
        declared = sum(info.file_size for info in archive.infolist())
    assert declared > 20 * path.stat().st_size
    monkeypatch.setattr(policy_file.torch, "load",
                        lambda *a, **k: pytest.fail("torch.load reached on nested entries"))
    refused(path, "archive entry 'archive/data/1' overlaps the one before it")
