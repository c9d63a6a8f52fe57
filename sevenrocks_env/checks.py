"""What counts as an int, said once for every argument and every value read from a file.

``True == 1`` in Python, so a bare ``isinstance(value, int)`` lets ``True`` pass as seat 1 or
``False`` as seed 0; ``1.0`` and ``1+0j`` compare equal to 1 as well.  The int checks of the
envs, agents and arena (settings, seeds, seats, actions) and of what a record, a match state or
a web request holds use these; files with their own number rules (the arena log's ints and
floats, pydantic's configs, OpenSpiel's game parameters) and ``rules.is_legal``'s fast path
keep theirs.

:func:`shown` is the short, bounded ``repr`` with which every error message quotes a value it
was given (a hostile file's value may be deeply nested, huge, or an object with its own
``__repr__``); :func:`checked_path`, a path argument's type, named.
"""
from __future__ import annotations

import enum
import numbers
import os
import reprlib

import numpy as np


def is_int(value, low: int | None = None, high: int | None = None) -> bool:
    """``value`` is an integer, not a bool, within ``[low, high]`` where those are given.
    NumPy integers count: an action taken from an array is one."""
    if type(value) is not int and (isinstance(value, bool)
                                   or not isinstance(value, numbers.Integral)):
        return False  # numpy's bool_ is not Integral; Python's bool is (a plain int: fast path)
    return (low is None or low <= value) and (high is None or value <= high)


def is_number_in(value, low: float, high: float) -> bool:
    """``value`` is a real number (Python's or NumPy's; not a bool) in ``[low, high]``, so a
    finite one when the bounds are: NaN fails every comparison, an infinity the bound, and an
    int too large for a float is compared exactly (``math.isfinite(10**400)`` raises)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and bool(low <= value <= high))


def is_plain_int(value, low: int | None = None, high: int | None = None) -> bool:
    """:func:`is_int`, and a plain ``int``: a value that is saved as JSON (a record's, a match
    state's) must not be a NumPy integer."""
    return type(value) is int and is_int(value, low, high)


def checked_int(name: str, value, low: int, high: int) -> int:
    """``value`` as a plain ``int``: ``TypeError`` if it is not an integer (:func:`is_int`),
    ``ValueError`` if it is outside ``[low, high]``; both name the argument and quote the value
    with :func:`shown` (an f-string of an int past 4300 digits raises Python's own error)."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {shown(value)}"
                        f"{array_hint(value)}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {shown(value)}")
    return int(value)


def checked_seed(seed) -> int | None:
    """``seed`` as a plain int (a NumPy integer too), or ``None``; ``TypeError`` for anything
    but an int (a bool is not one), ``ValueError`` for a negative one.  No upper bound: the
    agents' and envs' generators take any non-negative int."""
    if seed is None:
        return None
    if not is_int(seed, 0):
        raise (ValueError if is_int(seed) else TypeError)(
            f"seed must be a non-negative int or None, got {type(seed).__name__} {shown(seed)}"
            f"{array_hint(seed)}")
    return int(seed)


def checked_bool(name: str, value, error: type = TypeError) -> bool:
    """``value`` as a plain bool (a NumPy bool too); ``error`` naming the argument otherwise
    (``bool("no")`` is True, ``None`` or ``0`` meant another setting than the one written)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{name} must be True or False, got {type(value).__name__} {shown(value)}")
    return bool(value)


def checked_path(name: str, value, expected: str = "a path (a str or os.PathLike)") -> str:
    """``value``, a file path (a ``str`` or an ``os.PathLike`` of one), as a ``str``;
    ``TypeError`` naming the argument and what it must be otherwise (``None``, ``3``,
    ``b"x"``: pathlib's own error named no argument)."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__} {shown(value)}")
    return text


class _ShortRepr(reprlib.Repr):
    """``repr`` cut to a few dozen characters, whatever the value (deep nesting, huge ints)."""

    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxtuple = 2, 4, 4, 4
        self.maxstring, self.maxother, self.maxlong = 30, 30, 20

    def repr_int(self, value, level):
        if abs(value).bit_length() > 64:
            return f"<int of {abs(value).bit_length()} bits>"
        return super().repr_int(value, level)

    def repr_instance(self, value, level):
        if type(value) in (float, bool, type(None)):
            return repr(value)
        if isinstance(value, np.generic) and not isinstance(value, np.void):
            return self.repr1(value.item(), level)  # a NumPy scalar: its value, as Python's
        if isinstance(value, enum.Enum) and isinstance(value, int):  # pyspiel.PlayerId.CHANCE
            return f"{self.repr_int(int(value), level)} ({str(value.name)[:40]})"
        return f"<{type(value).__name__}>"  # never call an unknown object's own __repr__


_SHORT = _ShortRepr()


def shown(value) -> str:
    """A short, bounded ``repr`` of any value for error messages (never larger than ~100 chars)."""
    try:
        return _SHORT.repr(value)[:100]
    except Exception:  # a value whose repr fails: name its type
        return f"<{type(value).__name__}>"


def array_hint(value) -> str:
    """For a NumPy array or a torch tensor given where one int belongs (an action taken from a
    batch's row or a policy's sample, an env index from ``nonzero()``): ``" (shape (1,), dtype
    int64: pass a Python int, e.g. int(a.item()))"``; empty for anything else."""
    kind = type(value)
    if not (isinstance(value, np.ndarray)
            or (kind.__name__ == "Tensor" and kind.__module__.partition(".")[0] == "torch")):
        return ""
    shape = tuple(int(size) for size in value.shape)
    one = int(np.prod(shape)) == 1  # (.item() takes one element only)
    return (f" (shape {shape}, dtype {str(value.dtype).removeprefix('torch.')}: pass a Python "
            f"int, {'e.g. int(a.item())' if one else 'one element at a time, e.g. int(a[i])'})")


def kinds_of(value) -> str:
    """What a list field is made of, where :func:`shown` cannot tell it: ``" (a tuple of
    int)"`` for ``(10, 5)``, ``" (a list of int64)"`` for NumPy integers that print as ints;
    empty for a list of plain ints or anything else."""
    if not isinstance(value, (list, tuple)):
        return ""
    kinds = sorted({type(item).__name__ for item in value})[:3]
    if type(value) is list and kinds in ([], ["int"], ["list"]):
        return ""
    return f" (a {type(value).__name__} of {', '.join(kinds) or 'nothing'})"


def shown_kind(value) -> str:
    """:func:`shown`, and the value's kind where its text hides why a plain-int check
    (:func:`is_plain_int`) refused it: ``"2 (a NumPy int64)"``, ``"(10, 5) (a tuple of int)"``
    (a value built in Python rather than read from JSON)."""
    if isinstance(value, np.generic):
        return f"{shown(value)} (a NumPy {type(value).__name__})"
    return shown(value) + kinds_of(value)


def counted(count: int, noun: str) -> str:
    """``"1 pair"``, ``"200 pairs"``: a count and its noun, plural unless the count is 1."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


__all__ = ["checked_bool", "checked_int", "checked_path", "checked_seed", "counted", "is_int",
           "is_number_in",
           "is_plain_int", "kinds_of", "shown", "shown_kind"]
