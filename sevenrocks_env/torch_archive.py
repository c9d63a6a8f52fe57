"""The zip archive ``torch.save`` writes, checked from Python's side before torch reads it.

A checkpoint is an untrusted file (``docs/security.md``).  :func:`read_archive` checks the
archive's index and layout -- one archive ending the file as ``torch.save`` writes it, entries
one after another, uncompressed and unflagged, at most :data:`MAX_ENTRIES`, names distinct
ignoring case, every checksum right, one ``data.pkl`` of at most :data:`MAX_PICKLE_BYTES` --
and returns the pickle's bytes and the tensor bytes stored, for
:func:`sevenrocks_env.policy_file.load_torch_file` to scan and compare with.
"""

from __future__ import annotations

import os
import struct
import zipfile


class CheckpointError(ValueError):
    """A file that is not a usable sevenrocks policy checkpoint (missing, truncated, wrong kind,
    or made for another observation/action layout)."""


#: Largest ``data.pkl`` read (its opcodes are scanned, then unpickled, in pure Python: about
#: 1-3 s a MB).  A policy's is ~2 kB; a training checkpoint's grows with its matches in progress
#: (~150-290 bytes each: ~19 MB at ``num_matches`` 65,536, the most a config allows) and its
#: ``past`` snapshots (~3.5 kB each: ~4 MB at ``max_snapshots`` 1000).
MAX_PICKLE_BYTES = 32 << 20
#: Archive entries a checkpoint may hold: a policy has ~15; a training checkpoint one per tensor
#: of each of up to 1000 pool snapshots (``max_snapshots``), ~35 each for the largest network.
MAX_ENTRIES = 100_000

#: What Python's zipfile raises on a damaged or hostile archive: a bad index (``BadZipFile``),
#: an entry name that is not UTF-8 (``UnicodeDecodeError``, a ``ValueError``), an offset past
#: any file (``ValueError``, ``OverflowError``), a zip feature it lacks (``NotImplementedError``,
#: a ``RuntimeError``), an entry that ends early (``EOFError``), a short header (``struct.error``).
ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError,
                  ValueError, OverflowError, struct.error)
#: Zip flag bits of entries ``torch.save`` never writes: encrypted (0), patched data (5),
#: strong encryption (6).
REFUSED_FLAGS = {0x1: "encrypted", 0x20: "patched data", 0x40: "strongly encrypted"}


def refusal_reason(error: BaseException) -> str:
    """One short line saying why a file was refused, never empty (an ``EOFError`` has no text)."""
    if isinstance(error, UnicodeDecodeError):  # zipfile decodes names flagged UTF-8
        return "an archive entry's name is not valid UTF-8"
    lines = str(error).strip().splitlines()
    text = lines[0][:200] if lines else ("an archive entry ends before its declared size"
                                         if isinstance(error, EOFError) else "no detail given")
    return f"{type(error).__name__}: {text}"


def read_archive(path) -> tuple[bytes, int]:
    """``(data.pkl's bytes, bytes of tensor data)`` of the zip archive at ``path``, its index
    and every entry's checksum checked first: a damaged or hostile archive is one
    :class:`CheckpointError` "PATH is not a readable checkpoint (REASON)"."""
    try:  # is_zipfile says False for a file it cannot open (no permission, an I/O error)
        with open(path, "rb"):
            pass
    except OSError as error:
        raise CheckpointError(f"{path} cannot be read: "
                              f"{error.strerror or refusal_reason(error)}") from None
    try:  # torch.load does not check the archive's CRCs: damaged tensor bytes would load
        if not zipfile.is_zipfile(path):  # torch.save writes a zip; a cut one loses its index
            raise CheckpointError(f"{path} is not a readable checkpoint (truncated, or not a "
                                  "file written by torch.save)")
        with zipfile.ZipFile(path) as archive:
            # torch.save stores its entries uncompressed: a compressed entry is refused before
            # anything is unpacked (zipfile inflates bzip2/lzma entries whole, whatever size they
            # declare, so a file of a few kB could ask for gigabytes); and so is a flood of them
            entries = archive.infolist()
            if len(entries) > MAX_ENTRIES:
                raise CheckpointError(f"{path} holds {len(entries)} archive entries, more than "
                                      f"{MAX_ENTRIES}; not a sevenrocks checkpoint")
            odd = _layout_problem(path, archive, len(entries)) or \
                _overlap_problem(path, entries, archive.start_dir)
            if odd:  # torch's reader would find other entries than those checked here
                raise CheckpointError(f"{path} is not a readable checkpoint ({odd})")
            for info in entries:
                if info.compress_type != zipfile.ZIP_STORED or \
                        info.compress_size != info.file_size:
                    raise CheckpointError(f"{path}: archive entry {info.filename[:80]!r} is "
                                          "compressed; torch.save writes uncompressed entries, "
                                          "so this is not a sevenrocks checkpoint")
                for bit, what in REFUSED_FLAGS.items():
                    if info.flag_bits & bit:
                        raise CheckpointError(f"{path} is not a readable checkpoint (archive "
                                              f"entry {info.filename[:80]!r} is {what}; "
                                              "torch.save writes plain entries)")
            # torch finds a record by name ignoring case: two names one letter-case apart
            # would let it read a data.pkl other than the one scanned below
            names = [info.filename.lower() for info in entries]
            if len(set(names)) != len(names):
                raise CheckpointError(f"{path} is not a sevenrocks checkpoint (two archive "
                                      "entries whose names differ only in letter case)")
            damaged = archive.testzip()
            pickles = [info for info, name in zip(entries, names)
                       if name.endswith("/data.pkl") or name == "data.pkl"]
            if len(pickles) == 1 and pickles[0].file_size > MAX_PICKLE_BYTES:
                raise CheckpointError(f"{path}: its data.pkl is {pickles[0].file_size:,} bytes, "
                                      f"more than {MAX_PICKLE_BYTES >> 20} MB; not a "
                                      "sevenrocks checkpoint")
            if damaged is None and len(pickles) == 1:
                pickled = archive.read(pickles[0])
            tensor_bytes = sum(info.file_size for info in entries if "/data/" in info.filename)
    except CheckpointError:  # (a ValueError: said already)
        raise
    except ARCHIVE_ERRORS as error:
        raise CheckpointError(f"{path} is not a readable checkpoint "
                              f"({refusal_reason(error)})") from None
    if damaged is not None:
        raise CheckpointError(f"{path} is damaged: {damaged[:80]!r} fails its checksum")
    if len(pickles) != 1:
        raise CheckpointError(f"{path} is not a readable checkpoint (its archive has "
                              f"{len(pickles)} data.pkl entries; torch.save writes one)")
    return pickled, tensor_bytes


#: A zip's end records: the end of central directory (22 bytes, at the end of the file),
#: and before it, when there, the zip64 locator (20) and the zip64 end record (56).
_END, _LOCATOR, _END64 = struct.Struct("<4s4H2LH"), struct.Struct("<4sLQL"), \
    struct.Struct("<4sQ2H2L4Q")


def _layout_problem(path, archive: zipfile.ZipFile, count: int) -> str | None:
    """Why torch's zip reader (miniz) could see other entries than Python's ``archive``, or
    ``None``.  Python's zipfile finds the central directory just before the end records and
    shifts every offset by the bytes before it ("concatenated" data); miniz takes the offsets
    as written: a file with two archives, one behind the other, showed Python a clean data.pkl
    and torch a hash bomb, never scanned.  So, as ``torch.save`` writes it: the end records
    end the file (no comment), agree with each other (readers differ on which one wins), count
    ``count`` entries, and place the central directory where Python read it, right before
    them."""
    size = os.path.getsize(path)
    with open(path, "rb") as file:
        file.seek(max(0, size - _END.size - _LOCATOR.size - _END64.size))
        tail = file.read()
    end = _END.unpack(tail[-_END.size:]) if len(tail) >= _END.size else None
    if end is None or end[0] != b"PK\x05\x06" or end[7] != 0:
        return "its archive does not end with its end record, as torch.save writes it"
    _, disk, cd_disk, on_disk, entries, cd_size, cd_offset, _ = end
    records = size - _END.size  # where the end records start
    locator = tail[-_END.size - _LOCATOR.size:-_END.size]
    if locator[:4] == b"PK\x06\x07":
        records -= _LOCATOR.size + _END64.size
        end64 = tail[:_END64.size] if len(tail) == _END.size + _LOCATOR.size + _END64.size \
            else b""
        if len(end64) != _END64.size or end64[:4] != b"PK\x06\x06" or \
                _LOCATOR.unpack(locator)[2] != records:
            return "its zip64 end records are not where their locator says"
        values = _END64.unpack(end64)
        wide = values[4:10]  # disks, entries on this disk and in all, size, offset
        for plain, full, sentinel in zip((disk, cd_disk, on_disk, entries, cd_size, cd_offset),
                                         wide, (0xFFFF,) * 4 + (0xFFFFFFFF,) * 2):
            if plain not in (full, sentinel):
                return "its zip64 end record disagrees with its plain end record"
        disk, cd_disk, on_disk, entries, cd_size, cd_offset = wide
    if (disk, cd_disk) != (0, 0) or on_disk != entries or entries != count or \
            cd_offset != archive.start_dir or cd_offset + cd_size != records:
        return ("its central directory is not where its end record says, or holds another "
                "number of entries (bytes before the archive, or two archives in one file)")
    return None


_LOCAL = struct.Struct("<4s5H3L2H")  # a zip entry's local header: its name's and extra's lengths


def _overlap_problem(path, entries: list, start_dir: int) -> str | None:
    """Why the archive's entries are not laid out one after another, each one's local header
    and bytes before the next one's (and all before the central directory), or ``None``.
    Entries that share bytes -- one's data holding the next ones, as zip bombs nest them --
    declare many times the file's size: its every tensor would be allocated before a check
    could refuse the file, and the stored bytes :func:`_check_tensor_bytes` compares with would
    be as inflated (Python refuses overlapped entries only since 3.11.8 and 3.12.2)."""
    end = 0
    with open(path, "rb") as file:
        for info in sorted(entries, key=lambda info: info.header_offset):
            if info.header_offset < end:
                return f"archive entry {info.filename[:80]!r} overlaps the one before it"
            file.seek(info.header_offset)
            header = file.read(_LOCAL.size)
            if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
                return f"archive entry {info.filename[:80]!r} has no local header"
            name_length, extra_length = _LOCAL.unpack(header)[-2:]
            end = info.header_offset + _LOCAL.size + name_length + extra_length + \
                info.compress_size
    if end > start_dir:
        return "the last archive entry overlaps the central directory"
    return None


__all__ = ["ARCHIVE_ERRORS", "CheckpointError", "MAX_ENTRIES", "MAX_PICKLE_BYTES", "REFUSED_FLAGS",
           "read_archive", "refusal_reason"]
