"""Which weights a run's opponents and evaluation agents load, so ``--resume`` can tell.

A spec that loads a file (``ckpt:PATH``, ``ckpt:shipped``, ``sample:policy=PATH``,
``search:policy=PATH``) names a path, not weights: the file may be replaced between two
sessions of a run (a new shipped policy, another run's ``latest.pt``), and a resumed run would
then train against (or be evaluated against) another opponent without a word.  A training
checkpoint keeps, under ``fingerprints``, the SHA-256 of the files each such agent loaded
(:func:`sevenrocks_env.fingerprints.files_fingerprint`, as the arena's pair logs do), and
:func:`check_unchanged` refuses a resume whose agents now load other files.  Checkpoints
written before this piece have none and resume unchecked.
"""

from __future__ import annotations

import re

from sevenrocks_env.agents import same_spec, spec_files
from sevenrocks_env.fingerprints import files_fingerprint
from sevenrocks_env.checks import shown
from sevenrocks_env.driver import AgentError
from sevenrocks_env.policy import CheckpointError

from .config_yaml import ConfigError
from .opponents import is_past_key

#: A fingerprint as :func:`files_fingerprint` writes it.
SHA256 = re.compile(r"[0-9a-f]{64}")
#: Opponents (a config's and those of matches in progress) and evaluation agents a checkpoint
#: may pin beyond its ``num_matches`` (two lists of at most 32 specs, and room for more).
EXTRA_SPECS = 96
#: Matches in progress looked at for opponents whose files are gone (a checkpoint's
#: ``num_matches`` is at most this).
MAX_KEYS = 100_000


def fingerprint(spec: str, key: str) -> str | None:
    """:func:`files_fingerprint` of ``spec``, an unreadable file a :class:`ConfigError` naming
    ``key`` (the config field that names the spec)."""
    try:
        return files_fingerprint(spec)
    except ValueError as error:
        raise ConfigError(f"{key}: {str(error)[:300]}", key) from None


def fingerprints(specs, key: str) -> dict:
    """``{spec: sha256}`` of the specs in ``specs`` that load files (:func:`fingerprint`)."""
    found = {spec: fingerprint(spec, key) for spec in dict.fromkeys(specs)}
    return {spec: digest for spec, digest in found.items() if digest is not None}


def check_fingerprints(saved, num_matches: int, path) -> None:
    """The checkpoint's ``fingerprints`` piece: absent (``None``: written before it was kept)
    or a dict of at most ``num_matches + EXTRA_SPECS`` specs (strings of at most 4096
    characters), each to a SHA-256 in lower-case hex."""
    if saved is None:
        return
    if not (isinstance(saved, dict) and len(saved) <= num_matches + EXTRA_SPECS):
        raise CheckpointError(f"{path}: resume piece 'fingerprints' must be a dict of at most "
                              f"{num_matches + EXTRA_SPECS} agent specs")
    for spec, digest in saved.items():
        if not (isinstance(spec, str) and len(spec) <= 4096 and isinstance(digest, str)
                and SHA256.fullmatch(digest)):
            raise CheckpointError(f"{path}: resume piece 'fingerprints' must map agent specs to "
                                  f"SHA-256 digests (64 hex digits), got {shown(spec)[:80]}: "
                                  f"{shown(digest)[:80]}")


def check_unchanged(saved, opponents: dict, eval_agents: dict, playing, path) -> None:
    """:class:`ConfigError` when an agent of the resumed run loads other files than the run's
    did when ``saved`` (a checked ``fingerprints`` piece, or ``None``: not checked) was
    written.  ``opponents``, ``eval_agents``: ``{spec: sha256}`` of the files the resumed run's
    agents load; ``playing``: the opponents of the matches in progress (which ``--set`` cannot
    take away)."""
    for key, loaded in (("opponents", opponents), ("eval_agents", eval_agents)):
        for spec, now in loaded.items():
            then = saved_digest(saved or {}, spec)  # (none: an agent --set added, an old file)
            if then is None or then == now:
                continue
            go_on = ("start a new run (a match in progress plays it)" if key == "opponents"
                     and spec in playing else f"--set {key}=[...] without it")
            raise ConfigError(
                f"{path}: {key} {spec!r} loads other weights than when the checkpoint was "
                f"written (its files' sha256 {then[:16]}..., now {now[:16]}...): the resumed run "
                f"would not continue the run; put that file back, or {go_on}", key)


def saved_digest(saved: dict, spec: str) -> str | None:
    """The fingerprint ``saved`` keeps for ``spec`` or for another spelling of it: the same
    agent (:func:`~sevenrocks_env.agents.same_spec`) or one that loads the same files
    (``ckpt:x.pt`` and ``ckpt:./x.pt``); ``None`` if none does."""
    if spec in saved:
        return saved[spec]
    paths = _resolved_files(spec)
    for other, digest in saved.items():
        if same_spec(other, spec) or (paths and _resolved_files(other) == paths):
            return digest
    return None


def _resolved_files(spec: str) -> list | None:
    """The absolute paths of the files ``spec`` loads (``None``: none can be read now)."""
    try:
        return [path.resolve() for path in spec_files(spec)] or None
    except (ValueError, OSError):
        return None


def check_session_files(loaded: dict, specs, key: str) -> None:
    """:class:`~sevenrocks_env.driver.AgentError` when an agent of ``specs`` (``eval_agents``:
    the arena reads their files at every evaluation) now loads other files than ``loaded``
    (:func:`fingerprints` at the session's start, what its checkpoints keep): the evaluations
    would go on measuring another agent under the same name."""
    for spec, now in fingerprints(specs, key).items():
        then = loaded.get(spec)
        if then is not None and then != now:
            raise AgentError(f"{key} {spec!r} loads other weights than when this session "
                             f"started (its files' sha256 {then[:16]}..., now {now[:16]}...): "
                             "its evaluations would measure another agent under the same name; "
                             "put that file back")


def opponents_gone(engine) -> ConfigError | None:
    """The error for a resume whose matches in progress (``engine``: that piece as the file
    holds it) play opponents whose files cannot be read (:func:`unreadable_opponents`), or
    ``None``."""
    gone = unreadable_opponents(engine)
    if not gone:
        return None
    return ConfigError(f"the run's matches in progress play {'; '.join(gone[:3])}: a match "
                       "keeps its opponent to its end, and --set opponents cannot replace it; "
                       "put the file back, or start a new run", "opponents")


def unreadable_opponents(engine) -> list:
    """``spec (why)`` for each opponent of a resume's matches in progress (``engine``: that
    piece as the file holds it, not yet checked) whose file cannot be read: a match keeps its
    opponent to its end, so none can be restored without it."""
    keys = engine.get("opponents") if isinstance(engine, dict) else None
    gone = []
    keys = keys[:MAX_KEYS] if isinstance(keys, list) else []
    for key in dict.fromkeys(key for key in keys if isinstance(key, str) and len(key) <= 4096):
        if is_past_key(key):
            continue
        try:
            spec_files(key)  # (each path: a regular file, or "cannot read checkpoint: ...")
        except ValueError as error:
            if str(error).startswith("cannot read checkpoint"):
                gone.append(f"{key!r} ({str(error)[:300]})")  # (repr: no escape codes)
    return gone
