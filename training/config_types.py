"""The field types of the trainer's and the distillation's settings (:mod:`training.config`,
:mod:`training.distill_args`): bounded ints and finite floats, lists of widths and of agent
specs, run names and devices, each a pydantic ``Annotated`` type that refuses what would break a
run later (``nan``, bools as ints, a path as a run name, a set where order matters)."""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from sevenrocks_env.policy import MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH
from sevenrocks_env.policy_scorer import MAX_LAYERS as MAX_SCORER_LAYERS, \
    MAX_WIDTH as MAX_SCORER_WIDTH

#: A run name is a plain folder name: no path separators, no ``..``.
RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


#: What YAML 1.1 leaves as text of a number in e notation (``5e6``, ``1.5E3``; ``5.0e+6`` it reads).
_E_NOTATION = re.compile(r"[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+")
#: A number as text: only quotes make YAML read ``5000000`` or ``5.0`` so.
_QUOTED_NUMBER = re.compile(r"\s*[-+]?[0-9][0-9_]*(\.[0-9_]*)?\s*")


def _integral(value):
    """``5.0`` (YAML ``5.0e+6``) and ``5e6`` (read as text by YAML 1.1) -> ``5`` and
    ``5000000``: a whole number up to 2**53; a quoted ``"5000000"`` or ``"5.0"`` is text, and
    said so (the strict int check said "should be a valid integer" of what reads as one);
    anything else is left for the strict int check."""
    if isinstance(value, str) and len(value) <= 40 and _E_NOTATION.fullmatch(value):
        value = float(value)
    elif isinstance(value, str) and len(value) <= 40 and _QUOTED_NUMBER.fullmatch(value) \
            and float(value.replace("_", "")).is_integer():  # ("5.5": not a whole number)
        raise ValueError("a whole number is written without quotes (quoted, it is text)")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() \
            and abs(value) <= 2 ** 53:
        return int(value)
    return value


def _finite_number(value):
    """YAML 1.1 reads ``1e-4`` as a string: short numeric strings become floats; ``nan`` and
    ``inf`` (as text or as floats) are refused here, before any range check."""
    if isinstance(value, str) and len(value) <= 40:
        try:
            value = float(value)
        except ValueError:
            return value
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _plain_name(value):
    """A run name is a folder name inside the chosen roots, never a path out of them."""
    if isinstance(value, str) and value and (not RUN_NAME.fullmatch(value) or ".." in value):
        raise ValueError("must be a plain folder name (letters, digits, '_', '.', '-'; no path "
                         "separators or '..')")
    return value


def _device_name(value):
    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,2})?", value):
        raise ValueError("must be 'cpu', 'cuda' or 'cuda:N' (N: the GPU's index)")
    return value


def _as_list(value):
    """``None`` -> ``[]``, one item -> ``[item]`` (``opponents: greedy``); a list (or tuple) as
    it is.  A set (YAML's ``!!set``) is refused: its order, which decides the layers of a
    network and the opponents drawn, would depend on Python's string hashing."""
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (set, frozenset, dict)):
        raise ValueError(f"must be a list (in order), not a {type(value).__name__}")
    return value


def Int(low: int, high: int):  # noqa: N802 (a type alias factory)
    """An int field in ``[low, high]`` (bools refused, ``5.0`` accepted as ``5``)."""
    return Annotated[int, BeforeValidator(_integral), Field(ge=low, le=high, strict=True)]


def Real(low: float, high: float):  # noqa: N802
    """A finite float field in ``[low, high]``."""
    return Annotated[float, BeforeValidator(_finite_number),
                     Field(ge=low, le=high, strict=True, allow_inf_nan=False)]


def Positive(high: float):  # noqa: N802
    """A finite float field in ``(0, high]`` (0 would switch the thing off without a word)."""
    return Annotated[float, BeforeValidator(_finite_number),
                     Field(gt=0, le=high, strict=True, allow_inf_nan=False)]


Flag = Annotated[bool, Field(strict=True)]
Folder = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[^\x00]*$", strict=True)]
Specs = Annotated[list[Annotated[str, Field(max_length=1024, strict=True)]],
                  BeforeValidator(_as_list), Field(max_length=32),
                  AfterValidator(lambda specs: [spec.strip() for spec in specs])]  # " greedy"
NonEmptySpecs = Annotated[Specs, Field(min_length=1)]
Widths = Annotated[list[Int(1, MAX_HIDDEN_WIDTH)], BeforeValidator(_as_list),
                   Field(min_length=1, max_length=MAX_HIDDEN_LAYERS)]
ScorerWidths = Annotated[list[Int(1, MAX_SCORER_WIDTH)], BeforeValidator(_as_list),
                         Field(min_length=1, max_length=MAX_SCORER_LAYERS)]
RunName = Annotated[str, Field(max_length=100, strict=True), AfterValidator(_plain_name)]
Device = Annotated[str, Field(max_length=100, strict=True), AfterValidator(_device_name)]


__all__ = ["Device", "Flag", "Folder", "Int", "NonEmptySpecs", "Positive", "RUN_NAME", "Real",
           "RunName", "ScorerWidths", "Specs", "Widths"]
