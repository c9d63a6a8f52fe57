"""Step 1 of :mod:`training.distill`: play the student's matches and label its real choices with
the teacher's (issue 11, DAgger), in this process or in worker processes.

Every label is a function of its coordinates alone.  Decision ``(step, env)`` -- the step of the
collection and the env's index in the whole collection -- is dealt from the batched engine's
stream ``env``; the student samples its move from a counter-based draw of ``(seed, step, env)``
(:func:`sevenrocks_env.batched.deal.counter_key`) and the teacher its worlds from a generator
seeded by ``(seed, TEACHER_SALT, step, env)``.  So ``workers`` processes, each stepping a span of
the envs, label the same decisions as one process stepping them all; only where each span stops
differs (a span of ``n`` envs collects its share, ``decisions * n / num_envs``).  For the same
reason a labels file's matches can be played again (:func:`labelled_turns`), e.g. to label its
decisions a second time with other worlds (``benchmarks/teacher_noise.py``).

A long collection keeps what it searched: labels are saved while collecting (every
:func:`save_interval` labels; with workers, each span to its own part file), and Ctrl-C stops it
cleanly with the labels of every step labelled in full.
"""

from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from sevenrocks_env.agents.layout import best_action, legal_from_mask
from sevenrocks_env.arena_pool import (WorkerDied, a_worker_died, pool_context, start_worker,
                                       sigterm_as_ctrl_c, stop_workers)
from sevenrocks_env.batched import VectorEnv, layout
from sevenrocks_env.batched.deal import counter_key, counter_uniform
from sevenrocks_env.batched.history import RoundHistory
from sevenrocks_env.fingerprints import files_fingerprint, pinned
from sevenrocks_env.policy import MaskedCategorical, PolicyNet, build_model, read_checkpoint
from sevenrocks_env.public_round import reads_history

from .distill_labels import MAX_VALUE, save_labels

#: Most envs a collection steps (``--num-envs``), and a file's matches may be played again in.
MAX_ENVS = 1 << 16
#: The teacher's worlds at decision ``(step, env)`` of a collection: ``(seed, TEACHER_SALT, step,
#: env)`` (another salt labels the same decisions again with other worlds).
TEACHER_SALT = 0xD157
_SAMPLE_SALT = 0xD158   # the student's moves
_LABEL_KEYS = ("observation", "action_mask", "action", "values", "match")


def make_teacher(spec: str):
    """The batched searcher of a ``search`` spec: an object with ``action_values_many``, or for
    the search with inference (``needs_history``) its agent, with ``scores_in``."""
    from sevenrocks_env.batched_agents import BatchedSearchAgent, batched_agent
    teacher = batched_agent(spec)
    if teacher.needs_history:  # the search with inference: scores_in(env, rows, rngs, history)
        return teacher
    if not isinstance(teacher, BatchedSearchAgent):
        raise ValueError(f"teacher {spec!r} is not a search agent (search:..., "
                         "search:policy=...)")
    return teacher.searcher


def pinned_teacher(spec: str) -> str:
    """The teacher as its labels record it: the spec, plus the SHA-256 of the network files it
    loads (``fingerprints.files_fingerprint``), since a path such as ``shipped`` names other
    weights once a new policy is shipped."""
    fingerprint = files_fingerprint(spec)
    return spec if fingerprint is None else pinned(spec, fingerprint)


class Turn(NamedTuple):
    """One step of a collection's matches, before it is played (:func:`student_games`)."""
    step: int
    env: VectorEnv
    env_ids: torch.Tensor       # each env's index in the whole collection (its deal stream)
    observation: torch.Tensor   # [B, 238]: the seat on turn's
    action_mask: torch.Tensor   # [B, 113]
    rows: torch.Tensor          # the envs whose seat has a real choice: the decisions labelled
    history: RoundHistory | None


def student_games(student: PolicyNet, seed: int, env_ids: torch.Tensor, history: bool = False):
    """The matches of a collection: the student against itself in the envs ``env_ids`` (their
    deal streams), each move drawn from its distribution by the counter of ``(seed, step,
    env)``.  Yields a :class:`Turn` before each step (with the round's :class:`RoundHistory` if
    ``history``); the envs step when the generator is resumed.  The matches depend on the
    student, the seed and each env's index alone: a collection's games can be played again."""
    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=len(env_ids), validate=False, deal_streams=env_ids)
    venv.reset(seed=seed)
    rounds = RoundHistory(venv) if history else None
    for step in itertools.count():
        obs, mask = venv.observation, venv.action_mask
        logits, _ = student(obs, mask)
        key = counter_key(seed, _SAMPLE_SALT, torch.full_like(env_ids, step), env_ids)
        chosen = MaskedCategorical(logits, mask).sample_at(counter_uniform(key))
        rows = (layout.legal_counts(mask) > 1).nonzero().squeeze(1)
        yield Turn(step, venv, env_ids, obs, mask, rows, rounds)
        venv.step(chosen)
        if rounds is not None:
            rounds.record(venv, chosen)


def labelled_turns(labels: dict, student: PolicyNet, envs: range, history: bool = False):
    """A collection's labelled decisions in its envs ``envs`` (a range of env indices), played
    again: its matches (:func:`student_games` with ``student``, its seed) up to the last such
    label.  Yields ``(turn, envs_now, label_rows)``: ``turn``'s envs ``envs_now`` hold the
    decisions at rows ``label_rows`` of ``labels`` (one collection's, with its ``seed`` and
    ``match`` ids), their observations and masks checked equal to the file's (``ValueError`` if
    not: another student, or a file that is not one collection's decisions in order)."""
    if not (len(envs) and envs.step == 1 and 0 <= envs.start and envs.stop <= MAX_ENVS):
        raise ValueError(f"a collection's envs are 0 to {MAX_ENVS - 1:,}, not "
                         f"{envs.start:,} to {envs.stop - 1:,}")
    env_of = labels["match"] >> 32
    in_span = np.flatnonzero((env_of >= envs.start) & (env_of < envs.stop))
    in_span = in_span[np.argsort(env_of[in_span], kind="stable")]  # by env, in the file's order
    count = np.bincount(env_of[in_span] - envs.start, minlength=len(envs))
    rows_of = np.split(in_span, np.cumsum(count)[:-1])              # each env's label rows
    got = np.zeros(len(envs), np.int64)
    games = student_games(student, int(labels["seed"]), torch.arange(envs.start, envs.stop),
                          history)
    while (got < count).any():
        turn = next(games)
        wanted = got[turn.rows.numpy()] < count[turn.rows.numpy()]
        envs_now = turn.rows[torch.from_numpy(wanted)]
        label_rows = [int(rows_of[env][got[env]]) for env in envs_now.tolist()]
        if not (np.array_equal(turn.observation[envs_now].numpy(),
                               labels["observation"][label_rows])
                and np.array_equal(turn.action_mask[envs_now].numpy(),
                                   labels["action_mask"][label_rows])):
            raise ValueError(f"at step {turn.step} the matches played again are not those of the "
                             "labels: the student must be the collection's (its --init), and the "
                             "file one collection's decisions in the order it made them")
        got[envs_now.numpy()] += 1
        if len(envs_now):
            yield turn, envs_now, label_rows


def teacher_labels(teacher, seed: int, turn: Turn, rows: torch.Tensor,
                   salt: int = TEACHER_SALT) -> tuple[np.ndarray, list[int]]:
    """The teacher's values of every legal action at ``turn``'s envs ``rows`` (float32 ``[len(rows),
    113]``, 0 for illegal actions) and its action at each (its best value, ties to the lower
    action), its worlds drawn by a generator seeded ``(seed, salt, step, env)``."""
    obs_np, mask_np = turn.observation[rows].numpy(), turn.action_mask[rows].numpy()
    rngs = [np.random.default_rng((seed, salt, turn.step, int(turn.env_ids[r]))) for r in rows]
    if turn.history is None:
        scores = teacher.action_values_many(obs_np, mask_np, rngs)
    else:
        scores = teacher.scores_in(turn.env, rows, rngs, turn.history)
    table = np.zeros(mask_np.shape, dtype=np.float32)
    actions = []
    for row, (legal_mask, score) in enumerate(zip(mask_np, scores)):
        legal = legal_from_mask(legal_mask)
        table[row, legal] = score
        if not np.isfinite(table[row]).all() or np.abs(table[row]).max() > MAX_VALUE:
            raise ValueError(f"teacher value out of range (finite, within +-{MAX_VALUE:g}) at "
                             f"step {turn.step}: {score}")
        # chosen from the values as stored, so a label is always their argmax
        actions.append(best_action(legal, table[row, legal].tolist()))
    return table, actions


@torch.inference_mode()
def collect(student: PolicyNet, teacher, decisions: int, num_envs: int, seed: int,
            log=print, save=None, first_env: int = 0, save_every: int | None = None,
            stop=None) -> dict:
    """Play student-vs-student matches in envs ``first_env .. first_env + num_envs - 1``
    (:func:`student_games`), label every real choice with the teacher's values.

    Returns ``{"observation": float32 [N, 238], "action_mask": bool [N, 113], "action": int64
    [N], "values": float32 [N, 113], "match": int64 [N]}`` with ``N == decisions``: the
    teacher's action (its best value, ties to the lower action), its value of every legal action
    (0 for illegal ones) and which match of the collection the decision is from
    (``env << 32 | matches that env finished before it``, for ``distill.holdout_split``);
    ``save(labels)`` (optional) gets the labels so far every ``save_every`` labels
    (:func:`save_interval` by default).  Ctrl-C (``KeyboardInterrupt``), or ``stop`` (an event)
    once set, stops it cleanly: the labels of every step labelled in full are returned (fewer
    than ``decisions``); a step interrupted part-way is dropped."""
    games = student_games(student, seed, first_env + torch.arange(num_envs),
                          history=reads_history(teacher))
    observations, masks, actions, values, matches = [], [], [], [], []
    have, started = 0, time.perf_counter()
    every = save_every or save_interval(decisions)
    try:  # ``have`` grows only once a step's labels are in all five lists
        while have < decisions and not (stop is not None and stop.is_set()):
            turn = next(games)
            rows = turn.rows[: decisions - have]
            if len(rows):
                table, teachers_actions = teacher_labels(teacher, seed, turn, rows)
                actions += teachers_actions
                observations.append(turn.observation[rows].numpy())
                masks.append(turn.action_mask[rows].numpy())
                values.append(table)
                matches.append(((turn.env_ids[rows] << 32)
                                | turn.env.state.matches[rows]).numpy())
                have += len(rows)
                if have // 1000 != (have - len(rows)) // 1000:
                    rate = have / (time.perf_counter() - started)
                    log(f"collect: {have:,}/{decisions:,} labels, {rate:.1f} labels/s")
                saving = have // every != (have - len(rows)) // every
                if save is not None and saving and have < decisions:
                    save(_joined(observations, masks, actions, values, matches, have))
    except KeyboardInterrupt:
        if not have:
            raise
        log(f"collect: interrupted at {have:,} labels (the step in progress is dropped)")
    return _joined(observations, masks, actions, values, matches, have)


def save_interval(decisions: int) -> int:
    """Labels between two saves of a collection in progress: every thousand, or every twentieth
    of a large collection (each save rewrites the whole file, so a fixed interval would make a
    collection of N labels write O(N^2) bytes)."""
    return max(1000, decisions // 20 // 1000 * 1000)


def _joined(observations, masks, actions, values, matches, have: int) -> dict:
    """The first ``have`` labels of each list (an interrupted step may be in some lists)."""
    if not have:
        return _no_labels()
    return {"observation": np.concatenate(observations)[:have],
            "action_mask": np.concatenate(masks)[:have],
            "action": np.asarray(actions[:have], dtype=np.int64),
            "values": np.concatenate(values)[:have],
            "match": np.concatenate(matches).astype(np.int64)[:have]}


def _no_labels() -> dict:
    """The five arrays of a collection stopped before its first label, each of length 0."""
    from sevenrocks_env.observation import OBS_SIZE
    from sevenrocks_env.tiles import NUM_ACTIONS
    return {"observation": np.zeros((0, OBS_SIZE), np.float32),
            "action_mask": np.zeros((0, NUM_ACTIONS), bool),
            "action": np.zeros(0, np.int64), "values": np.zeros((0, NUM_ACTIONS), np.float32),
            "match": np.zeros(0, np.int64)}


# ---------------------------------------------------------------------------- worker processes
def spans(num_envs: int, decisions: int, workers: int) -> list[tuple[int, int, int]]:
    """``(first env, envs, decisions)`` of each worker: the envs cut into ``workers`` near-equal
    spans, each collecting its share of the decisions (rounded so that the shares add up)."""
    workers = max(1, min(workers, num_envs, decisions))
    cuts = [num_envs * w // workers for w in range(workers + 1)]
    shares = [decisions * cut // num_envs for cut in cuts]
    return [(cuts[w], cuts[w + 1] - cuts[w], shares[w + 1] - shares[w]) for w in range(workers)]


def part_path(labels_path, index: int) -> Path:
    """Where span ``index`` saves its labels while collecting (``<stem>.part<index>.npz``)."""
    path = Path(labels_path)
    return path.with_name(f"{path.name.removesuffix('.npz')}.part{index}.npz")


def part_paths_there(labels_path) -> list[Path]:
    """The part files of ``labels_path`` (:func:`part_path`, any index) already there, in order:
    those of an earlier collection that was stopped."""
    path = Path(labels_path)
    start, end = f"{path.name.removesuffix('.npz')}.part", ".npz"
    names = os.listdir(path.parent) if path.parent.is_dir() else []
    found = sorted(int(name[len(start):-len(end)]) for name in names
                   if name.startswith(start) and name.endswith(end)
                   and name[len(start):-len(end)].isdigit())
    return [part_path(path, index) for index in found]


_SETTINGS: dict = {}


def _span_init(settings: dict) -> None:
    """A worker keeps the settings (run by :func:`~sevenrocks_env.arena_pool.start_worker`:
    the worker ignores Ctrl-C -- the main process stops the spans through ``settings["stop"]``,
    an event that can only reach a worker this way -- and ends with the main process, even one
    killed outright).  Nothing here can fail: building the agents is the task's."""
    _SETTINGS.update(settings)


def _collect_span(index: int, first: int, envs: int, decisions: int) -> dict:
    """One worker's span: it builds the student and the teacher itself (an error is the
    task's, raised in the main process), and sets ``stop`` if it fails, so that the other spans
    stop too instead of collecting on for hours before the error is seen."""
    init, teacher, stop = _SETTINGS["init"], _SETTINGS["teacher"], _SETTINGS["stop"]
    try:
        torch.set_num_threads(_SETTINGS["threads"])
        student = build_model(read_checkpoint(init), init).eval()
        searcher, pinned = make_teacher(teacher), pinned_teacher(teacher)
        part = part_path(_SETTINGS["labels_path"], index)

        def save(labels):
            save_labels(part, labels, pinned, _SETTINGS["seed"])

        def log(line):
            print(f"[envs {first}-{first + envs - 1}] {line}", flush=True)

        labels = collect(student, searcher, decisions, envs, _SETTINGS["seed"], log, save, first,
                         _SETTINGS["save_every"], stop)
        if len(labels["action"]):
            save(labels)
        return labels
    except BaseException:
        stop.set()
        raise


def collect_in_pool(init: str, teacher: str, decisions: int, num_envs: int, seed: int,
                    workers: int, labels_path, threads: int = 1, save_every: int | None = None,
                    log=print) -> dict:
    """:func:`collect` in ``workers`` processes, each building the student (``init``, a
    checkpoint) and the teacher (a spec) itself and stepping one span of the envs
    (:func:`spans`); the labels of all spans, in span order.  Span ``i`` saves its labels so
    far, with the seed, to :func:`part_path` ``(labels_path, i)`` while it collects (a run that
    is killed keeps them: train on them with ``--labels``); part files already there are
    refused, not overwritten.  Ctrl-C stops every span after its current step and returns what
    they labelled; a second Ctrl-C drops their labels.  A span that fails stops the others, and
    its error is raised here; a worker that dies is a ``WorkerDied`` error (a
    ``RuntimeError``)."""
    work = [(index, *span) for index, span in enumerate(spans(num_envs, decisions, workers))]
    stale = [path for index in range(len(work))
             if (path := part_path(labels_path, index)).exists()]
    if stale:
        raise ValueError(f"{stale[0]} is there already (the labels of an earlier collection "
                         "that was stopped?): train on it with --labels, or move it away")
    context = pool_context()
    stop = context.Event()
    settings = {"init": init, "teacher": teacher, "seed": seed, "threads": threads,
                "labels_path": str(labels_path), "save_every": save_every, "stop": stop}
    died = WorkerDied("a collection worker died (killed, or out of memory?); the part files "
                      f"beside {labels_path} hold what the spans saved (train on them with "
                      "--labels)")
    with sigterm_as_ctrl_c(), ProcessPoolExecutor(len(work), context, start_worker,
                                                  (_span_init, (settings,))) as pool:
        pending = [pool.submit(_collect_span, *span) for span in work]
        while not all(future.done() for future in pending):
            try:
                wait(pending, timeout=1.0)  # a timed wait: a signal is handled within the second
            except KeyboardInterrupt:
                if stop.is_set():
                    raise
                stop.set()
                log("collect: interrupted; each span stops after its current step (Ctrl-C "
                    "again to drop their labels)")
            if a_worker_died(pool) and not all(future.done() for future in pending):
                interrupted = stop.is_set()
                stop.set()  # (the executor may not have seen it: arena_pool.a_worker_died)
                stop_workers(pool)
                raise KeyboardInterrupt if interrupted else died
        try:
            parts = [future.result() for future in pending]
        except BrokenProcessPool:
            # after an interruption, a dead worker is one that SIGTERM to the whole process
            # group ended: the labels are in the part files, as after a second Ctrl-C
            raise (KeyboardInterrupt if stop.is_set() else died) from None
    return {key: np.concatenate([part[key] for part in parts]) for key in _LABEL_KEYS}


def collect_labels(args, student: PolicyNet, path: Path, log=print) -> tuple[dict, str]:
    """Step 1 of a run (``args``: its :class:`training.distill.Args`): the labels, saved to
    ``path``, and the teacher as they record it."""
    searcher = make_teacher(args.teacher)  # a bad spec fails here, before any process starts
    teacher = pinned_teacher(args.teacher)
    started = time.perf_counter()
    if args.workers == 1:
        labels = collect(student, searcher, args.decisions, args.num_envs, args.seed, log,
                         save=lambda so_far: save_labels(path, so_far, teacher, args.seed))
    else:
        labels = collect_in_pool(args.init, args.teacher, args.decisions, args.num_envs,
                                 args.seed, args.workers, path, args.threads, log=log)
    n = len(labels["action"])
    log(f"collected {n:,} labels in {time.perf_counter() - started:.0f} s")
    if not n:
        raise KeyboardInterrupt  # stopped before the first label: nothing to save or train
    log(f"labels saved to {save_labels(path, labels, teacher, args.seed)}")
    if args.workers > 1:  # the spans' part files are now in the joined file
        for index in range(args.workers):
            part_path(path, index).unlink(missing_ok=True)
    return labels, teacher


__all__ = ["MAX_ENVS", "TEACHER_SALT", "Turn", "collect", "collect_in_pool", "collect_labels",
           "labelled_turns", "make_teacher", "part_path", "part_paths_there", "pinned_teacher",
           "save_interval", "spans", "student_games", "teacher_labels"]
