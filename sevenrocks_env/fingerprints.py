"""Which files an agent spec reads, by their contents: the SHA-256 a pair log's header, a
training checkpoint and the ratings ladder record of each agent's files (``ckpt:``,
``sample:policy=``, ``search:policy=``, ``sb3:``), and the check that the files an arena's
agents were built from are still those its run began with."""

from __future__ import annotations

import hashlib
import re

#: How a file read is named with its fingerprint (a distillation's teacher and init): the start
#: of :func:`files_fingerprint` in hex.  :func:`pinned` writes it, :func:`is_pinned` reads it.
_PIN = " (network sha256 {})"
_PINNED = re.compile(r" \(network sha256 [0-9a-f]{16}\)$")


def pinned(spec: str, fingerprint: str) -> str:
    """``spec`` with the start of its files' fingerprint (hex), as labels record a teacher."""
    return spec + _PIN.format(fingerprint[:16])


def is_pinned(text: str) -> bool:
    """Whether ``text`` ends with the pin :func:`pinned` writes."""
    return _PINNED.search(text) is not None


def files_fingerprint(spec: str) -> str | None:
    """SHA-256 (hex) of the contents of the files ``spec`` loads, in order; None if it loads
    none (``agents.spec_files``)."""
    from .agents import spec_files

    paths = spec_files(spec)
    if not paths:
        return None
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
        except OSError as error:
            raise ValueError(f"{spec}: cannot read {path} ({error.strerror})") from None
        digest.update(b"\0")
    return digest.hexdigest()


def run_fingerprints(agents) -> tuple:
    """:func:`files_fingerprint` of each spec string of ``agents`` (None for an agent object),
    taken once at a run's start, before its agents are built: what its log header records and
    every process that builds the agents checks (:func:`check_files`)."""
    return tuple(files_fingerprint(a) if isinstance(a, str) else None for a in agents)


def check_files(agents, files: tuple) -> None:
    """``ValueError`` unless the files each spec of ``agents`` loads are still those the run
    began with (``files``: :func:`run_fingerprints` then; call it once the agents are built):
    a checkpoint replaced meanwhile (a training run saving ``latest.pt``; a worker loads seconds
    later, as it starts and imports torch) played the pairs of a log naming another file."""
    for agent, then in zip(agents, files):
        if isinstance(agent, str) and files_fingerprint(agent) != then:
            raise ValueError(f"{agent}: its file changed since the run began (it is not the "
                             "file its log, if any, names): run again once it stops changing, "
                             "or give a copy")


__all__ = ["check_files", "files_fingerprint", "is_pinned", "pinned", "run_fingerprints"]
