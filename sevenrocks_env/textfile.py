"""Reading a small text file from an untrusted source: at most ``limit`` bytes are read (a
larger file is refused, not read whole), and the bytes must be UTF-8.  Game records and
training configs are read this way."""

from __future__ import annotations


def read_text(path, limit: int, what: str) -> str:
    """The text of ``path``; ``ValueError`` saying why not, naming ``what`` ("game record")."""
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit} bytes"
        raise ValueError(f"{path} is larger than {size}; not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text (byte {error.start})") from None
