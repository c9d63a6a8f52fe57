"""What a run's checkpoints say about its resumes that changed what it learns (``data["resumes"]``).

A run resumed with ``--set learning_rate=1e-3`` at step 1024 (or ``total_steps`` raised: the
schedules are recomputed) trains other weights than one run of its final config would; the
checkpoint keeps only that final config, so the model card's training command
(:func:`training.ship.training_command`) said the whole run used it.  Every checkpoint written
after such a resume carries the record, and so does its exported policy file:

    [{"step": 1024, "set": {"learning_rate": [0.00025, 0.001]}}, ...]

each resume's step and the learning settings it changed, ``[before, after]``.  Changes of
:data:`RESUME_NEUTRAL` keys (where the run writes, how it reports and evaluates, when it stops
and checkpoints: a resumed run goes on bit for bit), and of ``total_steps`` where no schedule
depends on it (``anneal_lr`` false, no ``ent_coef_final``) or its number of updates stays the
same, are not recorded.  The record is read from files others send: it is
checked (:func:`resumes_of`) before it is extended or printed.
"""

from __future__ import annotations

import json

from sevenrocks_env.checks import shown
from sevenrocks_env.policy import CheckpointError

from .config import OUTPUT_FOLDERS, TrainConfig

#: Keys whose change on ``--resume`` leaves the weights those of one run of the final config.
RESUME_NEUTRAL = frozenset({"run_name", "progress", "max_minutes", "checkpoint_every",
                            "eval_every", "eval_agents", "eval_pairs", "final_eval_pairs",
                            "eval_seed", *OUTPUT_FOLDERS})
#: Most resumes a record holds, and the most characters of it as JSON.
MAX_RESUMES = 1000
MAX_RECORD_CHARS = 64_000


def resumes_of(data: dict, path) -> list[dict]:
    """``data``'s record (``[]`` without one), checked: a list of at most :data:`MAX_RESUMES`
    entries ``{"step": int, "set": {config key: [before, after]}}`` of plain JSON values, steps
    in order; :class:`CheckpointError` naming ``path`` otherwise."""
    record = data.get("resumes", [])
    try:
        size = len(json.dumps(record, allow_nan=False)) if isinstance(record, list) else None
    except (TypeError, ValueError, RecursionError):
        size = None
    steps = [entry.get("step") if isinstance(entry, dict) else None
             for entry in record] if size is not None else [None]
    if size is None or size > MAX_RECORD_CHARS or len(record) > MAX_RESUMES \
            or not all(type(step) is int and 0 <= step <= 10 ** 12 for step in steps) \
            or steps != sorted(steps) or not all(_entry(entry) for entry in record):
        raise CheckpointError(f"{path}: 'resumes' must be a list of {{\"step\": N, \"set\": "
                              "{key: [before, after]}} (the run's resumes that changed what "
                              f"it learns), got {shown(record)}"[:400])
    return record


def _entry(entry: dict) -> bool:
    changed = entry.get("set")
    return set(entry) == {"step", "set"} and isinstance(changed, dict) and bool(changed) \
        and all(key in TrainConfig.model_fields and key not in RESUME_NEUTRAL
                and isinstance(pair, list) and len(pair) == 2 and pair[0] != pair[1]
                for key, pair in changed.items())


def resume_record(data: dict, before: TrainConfig, cfg: TrainConfig, path) -> list[dict]:
    """The record a run resumed from checkpoint ``data`` keeps: the file's (checked), and this
    resume's learning settings that differ between ``before`` (the file's config as
    ``--resume`` reads it: an older run's missing fields its defaults) and ``cfg`` (after
    ``--set``), if any."""
    record = resumes_of(data, path)
    saved, now = before.as_dict(), cfg.as_dict()
    scheduled = cfg.anneal_lr or before.anneal_lr or cfg.ent_coef_final is not None \
        or before.ent_coef_final is not None  # (what total_steps' updates are spread over)
    same_updates = cfg.num_updates == before.num_updates  # (2048 -> 2300: 8 updates of 256)
    neutral = RESUME_NEUTRAL | (set() if scheduled and not same_updates else {"total_steps"})
    changed = {key: [saved[key], value] for key, value in now.items()
               if key not in neutral and saved[key] != value}
    return [*record, {"step": data["global_step"], "set": changed}] if changed else list(record)


def resumes_text(record: list[dict]) -> str:
    """``"step 1024: learning_rate 0.00025 -> 0.001; step 2048: ..."``: a checked record in
    words (JSON values)."""
    return "; ".join(
        f"step {entry['step']}: " + ", ".join(
            f"{key} {json.dumps(before)} -> {json.dumps(after)}"
            for key, (before, after) in entry["set"].items())
        for entry in record)


__all__ = ["MAX_RESUMES", "RESUME_NEUTRAL", "resume_record", "resumes_of", "resumes_text"]
