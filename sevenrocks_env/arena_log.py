"""The arena's pair log: every finished duplicate pair appended to a file, so a long run resumes.

    sevenrocks arena A B --pairs 10000 --log runs/a_vs_b.jsonl      # stopped after 4,321 pairs
    sevenrocks arena A B --pairs 10000 --log runs/a_vs_b.jsonl      # plays pairs 4,321 .. 9,999
    sevenrocks arena A B --pairs 20000 --log runs/a_vs_b.jsonl      # adds 10,000 more pairs

A pair's outcome is a function of ``(agents, seed, pair, target, max_rounds)`` alone (duplicate
deals from ``seed + pair``, agents re-seeded per match), so pairs played in several sittings give
the same result as one run (timings aside) -- as long as the agents are the same: the header
names their specs and the SHA-256 of every file a spec loads (a checkpoint, a policy search's
policy, an SB3 zip), and a run whose files differ from the log's is refused, so overwriting a
checkpoint between sittings cannot mix two networks' pairs under one name.  The batched arena
writes a batch (``--batch`` pairs) at a time.  The file is JSON Lines: a header naming what was
played, then one :class:`~sevenrocks_env.arena.PairOutcome` per line, pairs ``0, 1, 2, ...`` in
order, each line flushed as it is written.

It is read as untrusted input: the header must name the same agents (the same specs, however
spelt: ``agents.spec_text.same_spec``), seed, target, round limit and engine as the run that
continues it; every line is size-bounded and every value type- and
range-checked; pairs must follow each other from 0.  A last line cut short (the run was killed
while writing it) is dropped; any other bad line is a :class:`PairLogError` with its line number.
A header key this module does not write (a log of another tool, or of a newer format) is refused
too.  The header also records the ``sevenrocks`` version that began the log, for information
only: a log is resumed by any version that reads its format (pairs do not change between patch
releases; a change that alters them changes :data:`FORMAT` instead, and a log of an older
format is refused with the reason, :data:`OLD_FORMATS`).

A run holds an exclusive lock on the log (``fcntl.flock``, non-blocking) from before it reads
a byte until its last line is written, and reads and writes it through that one locked file,
so two runs given the same file cannot interleave their lines: the second is refused with a
:class:`PairLogError` (:mod:`~sevenrocks_env.arena_log_lock`; its worker processes do not hold
the lock).  The log's folder must exist: it is not made.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .arena_log_lock import open_locked, release
from .checks import checked_path, shown
from .fingerprints import run_fingerprints
from .match_state import MAX_ROUND_MOVES
from .scoring import MAX_PLACEMENT_POINTS
from .record import unique_keys
from .textfile import shown_path

FORMAT = "sevenrocks-arena-pairs/2"
#: Earlier formats, refused with the reason their pairs differ from this version's.
OLD_FORMATS = {
    "sevenrocks-arena-pairs/1": "written before 2026-12-07, when the batched engine's random "
                                "draws (agents random and sample:) changed, so its pairs are not "
                                "the ones this version plays",
}
#: Longest line a log may hold, in bytes (a pair's line is about 300).
MAX_LINE = 4096
_HEADER_KEYS = ("agent_a", "agent_b", "seed", "target", "max_rounds", "engine")
_SPEC_KEYS = ("agent_a", "agent_b")
_FILE_KEYS = {"files_a": "A", "files_b": "B"}
#: Every key a header may hold: the first version wrote format and _HEADER_KEYS, the next added
#: _FILE_KEYS, then "version" (the sevenrocks version that began the log, not checked).
_KNOWN_KEYS = frozenset({"format", *_HEADER_KEYS, *_FILE_KEYS, "version"})
#: Most moves a round can take (R6: ``match_state.MAX_ROUND_MOVES``), and bounds of a pair's
#: points and think time (far beyond any real match, so never a real pair's).
MAX_MOVES = MAX_ROUND_MOVES
_MAX_POINTS, _MAX_SECONDS = 10 ** 12, 1e9
#: Most a partnership's score can move in one round: at most 14 placements of at most 35
#: points (R5), or a deduction (R7) of at most 120.
MAX_ROUND_SWING = 14 * MAX_PLACEMENT_POINTS


class PairLogError(ValueError):
    """A pair log that does not continue this run, or is not what :class:`PairLog` writes."""


class PairLogWriteError(OSError):
    """A pair that could not be appended to the log (the disk full): the pairs before it are in
    the log, and the same command plays the rest."""


class PairLog:
    """The pair log at ``path`` for one pairing (``header``: the run's agents and settings)."""

    def __init__(self, path, agent_a: str, agent_b: str, seed: int, target: int, max_rounds: int,
                 engine: str, files_a: str | None = None, files_b: str | None = None):
        from . import __version__

        self.path = Path(checked_path("log", path))  # log=123: named
        # "version" last: a header cut short by an older version is a prefix of this one
        self.header = {"format": FORMAT, "agent_a": agent_a, "agent_b": agent_b, "seed": seed,
                       "target": target, "max_rounds": max_rounds, "engine": engine,
                       "files_a": files_a, "files_b": files_b, "version": __version__}
        if len(json.dumps(self.header)) >= MAX_LINE:
            raise ValueError(f"the agent specs are too long for a pair log's {MAX_LINE}-byte "
                             "header; give shorter paths")
        self._valid_bytes: int | None = None
        self._loaded = 0
        self._file = None  # the log, open and locked, from load() to writer() or close()

    def load(self, pairs: int) -> list:
        """The outcomes of the pairs already played (at most ``pairs``), in pair order; ``[]``
        for a new file (made, empty; its folder must exist).  Takes the log's lock first, which
        :meth:`writer`'s writer or :meth:`close` releases.  Raises :class:`PairLogError` if the
        file is of another run or bad, its folder is missing, or another run holds its lock."""
        if self._file is None:
            self._file = open_locked(self.path)
        try:
            return self._read(self._file, pairs)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the log's lock, if this object still holds it."""
        file, self._file = self._file, None
        release(file)

    def _read(self, file, pairs: int) -> list:
        from .arena import PairOutcome

        outcomes, self._valid_bytes, self._loaded = [], 0, 0
        file.seek(0)
        header = file.readline(MAX_LINE + 1)
        if not header.endswith(b"\n"):
            if json.dumps(self.header).encode().startswith(header):
                return outcomes  # killed while the header was written: start it again
            raise PairLogError(f"{self.path}: no complete header line (not an arena pair log)")
        self._check_header(self._json(header, 1))
        valid, number = len(header), 1
        while len(outcomes) < pairs:
            line, number = file.readline(MAX_LINE + 1), number + 1
            if not line.endswith(b"\n"):
                if len(line) > MAX_LINE:
                    raise PairLogError(f"{self.path}:{number}: line longer than {MAX_LINE} "
                                       "bytes")
                break  # the end, or a last line cut short by a kill: played again
            data = _checked_outcome(self._json(line, number), len(outcomes),
                                    f"{self.path}:{number}", self.header["max_rounds"])
            outcomes.append(PairOutcome(**data))
            valid += len(line)
        self._valid_bytes, self._loaded = valid, len(outcomes)
        return outcomes

    def writer(self) -> "_Writer":
        """The locked file :meth:`load` read, cut after the last complete pair (a last line cut
        short is dropped; a new file, or a header cut short, gets the header again), to append
        the pairs after those :meth:`load` returned.  The writer holds the log's lock from now
        on, and its ``close`` releases it."""
        if self._valid_bytes is None or self._file is None:
            raise RuntimeError("PairLog.load() first: it says where the log continues")
        file, self._file = self._file, None  # the writer's now
        try:
            if not file.writable():
                raise PairLogError(f"{self.path}: the pair log is read-only, and this run has "
                                   "pairs to add (make it writable, or give another --log file)")
            file.seek(self._valid_bytes)
            file.truncate()
            if self._valid_bytes == 0:
                file.write(json.dumps(self.header).encode() + b"\n")
                file.flush()
            return _Writer(file, self._loaded, self.path)
        except BaseException:
            release(file)
            raise

    def _json(self, line: bytes, number: int):
        if len(line) > MAX_LINE:
            raise PairLogError(f"{self.path}:{number}: line longer than {MAX_LINE} bytes")
        try:
            return json.loads(line, parse_constant=_no_constant, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError) as error:  # (UnicodeDecodeError is a ValueError)
            raise PairLogError(f"{self.path}:{number}: not JSON ({str(error)[:80]})") from None

    def _check_header(self, header) -> None:
        old = header.get("format") if isinstance(header, dict) else None
        if isinstance(old, str) and old in OLD_FORMATS:
            raise PairLogError(f"{self.path}: a pair log of format {old!r}, {OLD_FORMATS[old]}; "
                               "start a new --log file")
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise PairLogError(f"{self.path}: not an arena pair log (header format "
                               f"{FORMAT!r} expected)")
        unknown = sorted(set(header) - _KNOWN_KEYS)
        if unknown:
            raise PairLogError(
                f"{self.path}: the header has unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(shown(key) for key in unknown[:3])}{', ...' * (len(unknown) > 3)}"
                " (a log of another tool or a newer format; use another --log file)")
        if not isinstance(header.get("version", ""), str):
            raise PairLogError(f"{self.path}: the header's version must be a string, got "
                               f"{shown(header['version'])}")
        from .agents.spec_text import same_spec

        for key in _HEADER_KEYS:  # (the type too: a seed of 1.0 is not this run's 1)
            if key in _SPEC_KEYS and isinstance(header.get(key), str) \
                    and same_spec(header[key], self.header[key]):
                continue  # one agent, another spelling (agents.spec_text)
            if (header.get(key), type(header.get(key))) != (self.header[key],
                                                             type(self.header[key])):
                raise PairLogError(
                    f"{self.path}: the log is of another run: its {key} is "
                    f"{json.dumps(header.get(key))[:80]}, this run's is "
                    f"{json.dumps(self.header[key])} "
                    "(use another --log file, or the same settings)")
        for key, side in _FILE_KEYS.items():
            logged, now = header.get(key), self.header[key]
            if logged == now:
                continue
            if logged is None:
                why = ("does not record what its files held (written before the arena kept "
                       "fingerprints)")
            else:
                why = (f"was played with files of SHA-256 {shown_path(str(logged)[:16])}..., "
                       "and this run's "
                       f"{'are ' + now[:16] + '...' if now else 'spec loads none'}")
            raise PairLogError(f"{self.path}: agent {side} ({self.header['agent_' + side.lower()]})"
                               f" {why}: the logged pairs were played by other weights (use "
                               "another --log file)")


class _Writer:
    """Appends outcomes to a locked pair log (:func:`~sevenrocks_env.arena_log_lock.open_locked`),
    one line each, flushed after each call; holds the log's lock until :meth:`close`.  A write
    that fails is a :class:`PairLogWriteError` naming the log (a line it cut short is dropped
    when the run resumes)."""

    def __init__(self, file, next_pair: int, path):
        self.file, self.next_pair, self.path, self.failed = file, next_pair, path, False

    def write(self, outcomes) -> None:
        from dataclasses import asdict
        try:
            for outcome in outcomes:
                line = json.dumps({"pair": self.next_pair, **asdict(outcome)}) + "\n"
                self.file.write(line.encode())
                self.next_pair += 1
            self.file.flush()
        except OSError as error:
            self.failed = True
            raise PairLogWriteError(error.errno, error.strerror or str(error),
                                    str(self.path)) from None

    def close(self) -> None:
        file, self.file = self.file, None
        try:
            release(file)
        except OSError:
            if not self.failed:  # (after a failed write, closing fails on the same bytes again)
                raise

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _NoWriter:
    """What :func:`open_log` returns when there is nothing to write."""

    def write(self, outcomes) -> None:
        pass

    def close(self) -> None:
        pass


def open_log(path, specs, seed: int, target: int, max_rounds: int, engine: str, pairs: int,
             files: tuple | None = None):
    """``(outcomes already logged, writer)`` of the arena run ``specs`` (A's and B's spec strings)
    with a pair log at ``path``; with ``path`` None, ``([], a writer that writes nothing)``.
    ``files``: the fingerprints of the specs' files taken at the run's start, before its agents
    were built (:func:`~sevenrocks_env.fingerprints.run_fingerprints`; None: taken now)."""
    if path is None:
        return [], _NoWriter()
    if not all(isinstance(spec, str) for spec in specs):
        raise ValueError("a pair log needs agent spec strings (it names what was played)")
    log = PairLog(path, specs[0], specs[1], seed, target, max_rounds, engine,
                  *(files or run_fingerprints(specs)))
    outcomes = log.load(pairs)  # locked from here (released on its errors)
    if len(outcomes) < pairs:
        return outcomes, log.writer()  # which holds the lock until it is closed
    log.close()
    return outcomes, _NoWriter()


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


@functools.cache
def _pair_keys() -> frozenset[str]:
    """The keys of a pair's line: its index and the PairOutcome fields (``_Writer.write``)."""
    from dataclasses import fields

    from .arena import PairOutcome
    return frozenset({"pair", *(field.name for field in fields(PairOutcome))})


def _checked_outcome(data, pair: int, where: str, max_rounds: int) -> dict:
    """The PairOutcome fields of one log line, every value checked (a pair is two matches of
    at most ``max_rounds`` rounds, each round at most :data:`MAX_MOVES` moves)."""
    most_rounds = 2 * max_rounds
    if not isinstance(data, dict):
        raise PairLogError(f"{where}: a pair line must be a JSON object")
    keys = _pair_keys()
    for odd, what in ((keys - set(data), "misses"), (set(data) - keys, "has an unknown key")):
        if odd:
            raise PairLogError(f"{where}: the pair line {what} {shown(min(odd))} (a pair line "
                               f"holds {', '.join(sorted(keys))})")
    if type(data["pair"]) is not int or data["pair"] != pair:
        raise PairLogError(f"{where}: pair {pair} expected, found {shown(data['pair'])[:20]}")
    fields = {
        "score": float(_number(data.get("score"), "score", 0, 2, False, where)),
        "truncated": _number(data.get("truncated"), "truncated", 0, 2, True, where),
        "margin": _number(data.get("margin"), "margin", -2 * _MAX_POINTS, 2 * _MAX_POINTS, True,
                          where),
        "rounds": _number(data.get("rounds"), "rounds", 0, most_rounds, True, where),
        "points_a": _number(data.get("points_a"), "points_a", -_MAX_POINTS, _MAX_POINTS, True,
                            where),
        "points_b": _number(data.get("points_b"), "points_b", -_MAX_POINTS, _MAX_POINTS, True,
                            where),
    }
    fields["round_wins_a"] = float(_number(data.get("round_wins_a"), "round_wins_a", 0,
                                           fields["rounds"], False, where))
    for key, high, integer in (("decisions", most_rounds * MAX_MOVES, True),
                               ("think_s", _MAX_SECONDS, False),
                               ("think_cpu_s", _MAX_SECONDS, False)):
        value = data.get(key)
        if not isinstance(value, list) or len(value) != 2:
            raise PairLogError(f"{where}: {key} must be a list of two numbers (A, B)")
        fields[key] = [_number(v, key, 0, high, integer, where) for v in value]
    _check_consistent(fields, max_rounds, where)
    return fields


def _check_consistent(fields: dict, max_rounds: int, where: str) -> None:
    """What every real pair satisfies: two matches of at least one round each, a truncated one
    being exactly ``max_rounds`` rounds and counting 1/2 (the others 0 or 1), the margin the
    difference of the points, positive when A won both matches and negative when it lost
    both, no round moving a score by more than :data:`MAX_ROUND_SWING`, points in fives (R5,
    R7), a round won by each match's winner (it ends ahead, R8, so it came out ahead in one
    round at least), and a real choice per round at least (its opening: any of 7 tiles, R3)."""
    score, truncated, rounds = fields["score"], fields["truncated"], fields["rounds"]
    problems = []
    if 2 * score != int(2 * score) or (2 * score) % 2 != truncated % 2:
        problems.append(f"score {score} with {truncated} truncated matches")
    if truncated == 2 and score != 1:
        problems.append("two truncated matches score 1/2 each")
    if not max(2, truncated * max_rounds + (2 - truncated)) <= rounds:
        problems.append(f"{rounds} rounds for two matches, {truncated} cut at {max_rounds}")
    if fields["margin"] != fields["points_a"] - fields["points_b"]:
        problems.append("margin is not points_a - points_b")
    if truncated == 0 and (score == 2 and fields["margin"] <= 0
                           or score == 0 and fields["margin"] >= 0):
        problems.append(f"score {score} with margin {fields['margin']} (a won match ends with "
                        "the winner ahead, R8)")
    if max(abs(fields["points_a"]), abs(fields["points_b"])) > MAX_ROUND_SWING * rounds:
        problems.append(f"points beyond {MAX_ROUND_SWING} a round")
    if 2 * fields["round_wins_a"] != int(2 * fields["round_wins_a"]):
        problems.append("round_wins_a is not a multiple of 1/2")
    if fields["points_a"] % 5 or fields["points_b"] % 5:
        problems.append(f"points {fields['points_a']}, {fields['points_b']} not all multiples "
                        "of 5 (R5, R7)")
    wins_a, wins_b = score - truncated / 2, 2 - truncated - (score - truncated / 2)
    if min(wins_a, wins_b) >= 0 and wins_a == int(wins_a) and not (  # (else reported above)
            wins_a <= fields["round_wins_a"] <= rounds - wins_b):
        problems.append(f"round_wins_a {fields['round_wins_a']} with {wins_a:.0f} and "
                        f"{wins_b:.0f} matches won by A and B (a match's winner "
                        "comes out ahead in a round at least)")
    if sum(fields["decisions"]) < rounds:
        problems.append(f"{sum(fields['decisions'])} decisions in {rounds} rounds (each "
                        "opening is a choice, R3)")
    if problems:
        raise PairLogError(f"{where}: not a pair any match can give: {'; '.join(problems)}")


def _number(value, key: str, low, high, integer: bool, where: str):
    """``value`` if it is a finite int (``integer``) or number in ``[low, high]``."""
    kinds = (int,) if integer else (int, float)
    # the range first: NaN fails it, and math.isfinite overflows on an int past a float's range
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        raise PairLogError(f"{where}: {key} must be {'an int' if integer else 'a number'} in "
                           f"[{low}, {high}], got {shown(value)[:20]}")
    return value if integer else float(value)


__all__ = ["FORMAT", "OLD_FORMATS", "PairLog", "PairLogError", "PairLogWriteError", "open_log"]
