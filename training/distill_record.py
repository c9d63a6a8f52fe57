"""What a distilled policy's checkpoint says about its distillation (``data["distill"]``, written
by :mod:`training.distill`, read by :mod:`training.ship` for the model card), checked: each
round's teacher, number of labels and held-out agreement, the last round's at the top level and
the rounds before it, oldest first, under ``earlier`` (a student of a student keeps them all)."""

from __future__ import annotations

import math

from sevenrocks_env.checks import shown
from sevenrocks_env.policy import CheckpointError

from .distill_labels import MAX_LABELS, TEACHER_TEXT, is_teacher_text

#: Distillation rounds a checkpoint may record (each one is hours of labelling).
MAX_ROUNDS = 64


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
    return {"teacher": teacher, "labels": labels,
            "holdout_agreement": None if agreement is None or math.isnan(agreement)
            else agreement}


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
