"""What a distilled policy's checkpoint says about its distillation (``data["distill"]``, written
by :mod:`training.distill`, read by :mod:`training.ship` for the model card), checked: each
round's teacher, number of labels and held-out agreement, the student's training settings
(``settings``: :data:`SETTINGS`, from the run's ``args``; a file from before they were kept has
none), the last round's at the top level and the rounds before it, oldest first, under
``earlier`` (a student of a student keeps them all)."""

from __future__ import annotations

import math

from sevenrocks_env.checks import is_number_in, is_plain_int, shown
from sevenrocks_env.policy import CheckpointError
from sevenrocks_env.policy_file import HIDDEN_SIZES, are_hidden_sizes

from .distill_labels import MAX_LABELS, MAX_VALUE, TEACHER_TEXT, is_teacher_text

#: Distillation rounds a checkpoint may record (each one is hours of labelling).
MAX_ROUNDS = 64

#: The student's settings a card shows (``training.distill.Args``' fields, as a run records them
#: under ``args``): each one's check on a value read from a file, and what it must be.  An
#: ``init`` that is no card text (a path holding ``|``, say) is left out, not refused.
SETTINGS = {
    "init": (is_teacher_text, TEACHER_TEXT),
    "epochs": (lambda v: is_plain_int(v, 1, 10_000), "an int in 1..10000"),
    "learning_rate": (lambda v: is_number_in(v, 0, 1) and v > 0, "a number in (0, 1]"),
    "batch_size": (lambda v: is_plain_int(v, 1, 1 << 16), "an int in 1..65536"),
    "temperature": (lambda v: is_number_in(v, 0, MAX_VALUE), f"a number in [0, {MAX_VALUE:g}]"),
    "hidden_sizes": (lambda v: v is None or are_hidden_sizes(v), f"null or {HIDDEN_SIZES}"),
    "seed": (lambda v: is_plain_int(v, 0, 2 ** 63 - 1), "an int in 0..2**63-1"),
}


def _settings(args, path) -> dict:
    """The :data:`SETTINGS` a round's ``args`` holds, each checked (those it lacks: left out)."""
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise CheckpointError(f"{path}: 'distill' 'args' must be a dict, got {shown(args)}")
    settings = {}
    for key, (check, what) in SETTINGS.items():
        if key in args:
            if not check(args[key]):
                if key == "init":  # a path may hold what a card cannot show (| or `): left out
                    continue
                raise CheckpointError(f"{path}: 'distill' 'args' '{key}' must be {what}, got "
                                      f"{shown(args[key])}")
            settings[key] = args[key]
    return settings


def _round(record, path) -> dict:
    """One round's facts, checked; a NaN agreement (a run too small to hold labels out) is
    ``None``, which JSON can carry."""
    record = record if isinstance(record, dict) else {}
    teacher, labels, agreement = (record.get(key)
                                  for key in ("teacher", "labels", "holdout_agreement"))
    if not (is_teacher_text(teacher) and type(labels) is int and 0 < labels <= MAX_LABELS
            and (agreement is None or type(agreement) is float
                 and (math.isnan(agreement) or 0 <= agreement <= 1))):
        raise CheckpointError(f"{path}: 'distill' must hold the teacher ({TEACHER_TEXT}), "
                              f"labels (1..{MAX_LABELS:,}) and holdout_agreement (0..1), "
                              f"got {shown(record)}")
    settings = _settings(record.get("settings", record.get("args")), path)
    return {"teacher": teacher, "labels": labels,
            "holdout_agreement": None if agreement is None or math.isnan(agreement)
            else agreement, **({"settings": settings} if settings else {})}


def distill_facts(data: dict, path) -> dict | None:
    """The checked record of ``data``'s distillation (the last round's facts, and ``earlier``
    rounds when there were any), or ``None`` for a policy that was not distilled."""
    facts = data.get("distill")
    if facts is None:
        return None
    last = _round(facts, path)
    earlier = facts.get("earlier", []) if isinstance(facts, dict) else []
    if not (isinstance(earlier, list) and len(earlier) < MAX_ROUNDS):
        raise CheckpointError(f"{path}: 'distill' 'earlier' must be a list of at most "
                              f"{MAX_ROUNDS - 1} rounds, got {shown(earlier)}")
    rounds = [_round(record, path) for record in earlier]
    return {**last, "earlier": rounds} if rounds else last


def rounds_before(init_data: dict, path) -> list[dict]:
    """The distillation rounds that made the init (checked, oldest first; ``[]`` for a policy
    never distilled): what a student of it records under ``earlier``."""
    facts = distill_facts(init_data, path)
    if facts is None:
        return []
    rounds = [*facts.pop("earlier", []), facts]
    if len(rounds) >= MAX_ROUNDS:
        raise CheckpointError(f"{path}: distilled {len(rounds)} times already; a student may "
                              f"record at most {MAX_ROUNDS} rounds")
    return rounds
