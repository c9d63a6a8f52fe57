"""A record built in Python from arrays holds NumPy integers where JSON holds plain ints: the
refusal says which kind it got ("target must be an int in [1, 5000], got 250" contradicted
itself: ``shown`` prints an ``int64`` as its value)."""

import copy

import numpy as np
import pytest

from sevenrocks_env.checks import shown_kind
from sevenrocks_env.record import RecordError, game_record, validate
from sevenrocks_env.rules import Match

from positions import played_to_the_end

RECORD = game_record(played_to_the_end(Match.new(5, target=60), 5))


def _first_placement(record):
    return next(move for move in record["rounds"][0]["moves"] if "points" in move)


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.update(target=np.int64(r["target"])), r"target .* got 60 \(a NumPy int64\)$"),
    (lambda r: r.update(winner=np.int32(r["winner"])), r"winner .* \(a NumPy int32\)$"),
    (lambda r: r.update(scores=[np.int64(s) for s in r["scores"]]), r"\(a list of int64\)$"),
    (lambda r: r["rounds"][0].update(opener=np.int64(r["rounds"][0]["opener"])),
     r"round 0: opener must be a seat 0-3, got \d \(a NumPy int64\)$"),
    (lambda r: r["rounds"][0]["moves"][0].update(seat=np.int64(r["rounds"][0]["moves"][0]["seat"])),
     r"move 0: seat must be an int 0-3, got \d \(a NumPy int64\)$"),
    (lambda r: _first_placement(r).update(action=np.int64(_first_placement(r)["action"])),
     r"move 0: action must be an int 0-112, got \d+ \(a NumPy int64\)$"),
    (lambda r: _first_placement(r).update(action=float(_first_placement(r)["action"])),
     r"move 0: action must be an int 0-112, got \d+\.0$"),  # (it read 'illegal', then legal)
    (lambda r: _first_placement(r).update(slot=np.int64(_first_placement(r)["slot"])),
     r"slot \d \(a NumPy int64\)$"),
    (lambda r: _first_placement(r).update(points=np.int64(_first_placement(r)["points"])),
     r"end_sum and points must be ints >= 0, got \d+ and \d+ \(a NumPy int64\)$"),
    (lambda r: r["rounds"][0].update(deductions=tuple(r["rounds"][0]["deductions"])),
     r"deductions must be four ints, got .* \(a tuple of int\)$"),
])
def test_a_numpy_or_python_only_value_is_named_by_its_kind(edit, message):
    record = copy.deepcopy(RECORD)
    edit(record)
    with pytest.raises(RecordError, match=message):
        validate(record)


def test_shown_kind_adds_a_kind_only_where_the_text_hides_it():
    assert shown_kind(np.int64(7)) == "7 (a NumPy int64)"
    assert shown_kind(np.float32(0.5)) == "0.5 (a NumPy float32)"
    assert shown_kind([1, 2]) == "[1, 2]" and shown_kind(7) == "7" and shown_kind("7") == "'7'"
    assert shown_kind((1, 2)) == "(1, 2) (a tuple of int)"
