"""The zip level of a labels file (:mod:`training.distill_labels`): the file is opened once (a
regular file, never waited on), its members' names, compression and ``.npy`` headers are read
without their data, and what its members inflate to is bounded by the file's own size.

``np.savez_compressed`` (what a collection writes) deflates each array, and ``np.savez`` stores
it: both are read.  Another compression is refused from the archive's index, before anything is
unpacked: Python's zipfile unpacks a bzip2 or LZMA chunk whole, so reading the first bytes of a
2.5 kB member took 7 s and 3.7 GB.  A deflated member inflates at most about 1,000 times: 2 MB
of zeros declaring 2 M labels made ``np.load`` take 2 GB and 11 s before any check of their
data, so all of a file's arrays together may inflate to at most :data:`MAX_INFLATION` times
the file's size.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile

import numpy as np

from sevenrocks_env.checks import shown
from sevenrocks_env.textfile import open_without_waiting

#: Longest ``.npy`` header read from a labels file (NumPy's own default limit).
MAX_NPY_HEADER = 10_000
#: What a labels file's arrays may inflate to, at most, per byte of the file: a collection's
#: file inflates about 22 times (25 from one env at a time, measured); deflate reaches ~1,000.
MAX_INFLATION = 100
#: How NumPy writes an ``.npz``'s members (``np.savez``, ``np.savez_compressed``).
_NUMPY_COMPRESSION = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
#: How a file np.savez writes starts (a zip entry): what np.load reads as an archive.
_ZIP_START = b"PK\x03\x04"


class LabelsError(ValueError):
    """Labels that cannot be trained on: a file that is not what
    :func:`training.distill_labels.save_labels` writes, or a set of files that cannot be joined."""


def open_labels(path):
    """``path`` opened for reading (binary); :class:`LabelsError` if it cannot be, or is not a
    regular file: a device or a pipe (``/dev/zero``) would be read to its end by zipfile, and a
    named FIFO is never waited on.  The checks and ``np.load`` read this one open file."""
    descriptor, mode = open_without_waiting(
        path, lambda where, why: LabelsError(f"{where}: cannot read it ({why})"))
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise LabelsError(f"{path}: not a labels file (not a regular file)")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def read_headers(path, file, allowed: set[str]) -> dict[str, tuple]:
    """``{key: (shape, dtype, (header bytes, stored bytes))}`` for each member ``key.npy`` of
    the open labels ``file``, from its ``.npy`` header (not its data); only the names in
    ``allowed``, each once, stored or deflated."""
    declared = {}
    # np.load picks its reader from the file's first bytes, zipfile finds the archive from its
    # end (skipping bytes before it): an .npy followed by a labels zip passed these checks and
    # np.load read the .npy, allocating what its never-checked header declared
    try:
        file.seek(0)
        if file.read(len(_ZIP_START)) != _ZIP_START:
            raise LabelsError(f"{path}: not a labels file (it does not start with a zip entry, "
                              "as np.savez writes it)")
        with zipfile.ZipFile(file) as archive:
            members = archive.infolist()
            names = [member.filename for member in members]
            # np.load would read a member named "observation" before "observation.npy", and a
            # zip may hold one name twice: only the arrays this file has, each once
            if len(set(names)) != len(names) or not set(names) <= allowed:
                odd = sorted(set(names) - allowed) or ["a name given twice"]
                raise LabelsError(f"{path}: not a labels file (it holds {shown(odd[0])}; a "
                                  f"labels file holds only {', '.join(sorted(allowed))})")
            odd = next((m for m in members if m.compress_type not in _NUMPY_COMPRESSION), None)
            if odd is not None:
                raise LabelsError(f"{path}: {shown(odd.filename)} is compressed with method "
                                  f"{odd.compress_type}, not stored or deflated as NumPy writes "
                                  "it (np.savez, np.savez_compressed): refused unread")
            for member in members:
                key = member.filename[:-len(".npy")]
                with archive.open(member) as data:
                    shape, dtype = _array_header(data, path, key)
                    declared[key] = (shape, dtype, (data.tell(), member.file_size))
    except (LabelsError, MemoryError):
        raise
    except Exception as error:  # not a zip, or a damaged one (zlib, tokenize, CRC errors...)
        raise not_labels(path, error) from None
    return declared


def read_scalar(path, file, key: str) -> int:
    """The one integer of member ``key.npy`` of the open labels ``file``, whose header
    :func:`read_headers` read and the caller checked (a scalar int: at most 8 bytes)."""
    try:
        file.seek(0)
        with zipfile.ZipFile(file) as archive, archive.open(f"{key}.npy") as member:
            return int(np.lib.format.read_array(member, allow_pickle=False))
    except Exception as error:  # a damaged member
        raise not_labels(path, error) from None


def check_inflation(path, file, declared: dict) -> None:
    """:class:`LabelsError` if the arrays of ``declared`` (:func:`read_headers`) inflate to
    more than :data:`MAX_INFLATION` times the size of ``file``: zipfile inflates a member to
    its declared size, and each is exactly its array (checked by the caller)."""
    inflated = sum(stored for _, _, (_, stored) in declared.values())
    size = os.fstat(file.fileno()).st_size
    if inflated > MAX_INFLATION * size:
        raise LabelsError(f"{path}: its arrays inflate to {inflated:,} bytes, more than "
                          f"{MAX_INFLATION} times its {size:,} bytes (a collection's labels "
                          "inflate about 22 times): refused before unpacking")


def _array_header(member, path, name: str) -> tuple[tuple, np.dtype]:
    """``(shape, dtype)`` from the ``.npy`` header at the start of ``member``, whose declared
    length is read and bounded first: NumPy's readers take the whole declared header (up to
    4 GB: a member of spaces compresses to almost nothing) before their own size check."""
    version = np.lib.format.read_magic(member)
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise LabelsError(f"{path}: '{name}' is .npy version {version}, not 1, 2 or 3")
    length_bytes = member.read(2 if version == (1, 0) else 4)
    length = int.from_bytes(length_bytes, "little")
    if length > MAX_NPY_HEADER:
        raise LabelsError(f"{path}: '{name}' declares a .npy header of {length:,} bytes (an "
                          f"array's is under {MAX_NPY_HEADER:,})")
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read(io.BytesIO(length_bytes + member.read(length)))
    return shape, dtype


def not_labels(path, error: Exception) -> LabelsError:
    """A damaged or foreign file's error, in one line."""
    first = (str(error).splitlines() or [""])[0]  # NumPy's messages run over several lines
    return LabelsError(f"{path}: not a labels file, or a damaged one ({type(error).__name__}: "
                       f"{first[:200]})")
