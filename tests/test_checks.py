"""The one definition of "an int" that every argument and file value is checked with."""

import re

import numpy as np
import pytest

from sevenrocks_env.checks import checked_int, is_int, is_number_in, is_plain_int, shown


@pytest.mark.parametrize("value", [True, False, np.True_, 1.0, 1 + 0j, "1", None, np.float32(1)])
def test_values_equal_to_an_int_are_not_ints(value):
    assert not is_int(value) and not is_plain_int(value)
    with pytest.raises(TypeError, match="x must be an int"):
        checked_int("x", value, 0, 5)


@pytest.mark.parametrize("value", [1, np.int64(1), np.uint8(1)])
def test_python_and_numpy_integers_are_ints(value):
    assert is_int(value) and is_int(value, 1, 1)
    assert not is_int(value, 2) and not is_int(value, None, 0)
    assert checked_int("x", value, 0, 5) == 1 and type(checked_int("x", value, 0, 5)) is int
    assert is_plain_int(value) == (type(value) is int)  # a JSON value must be a plain int


def test_out_of_range_is_a_value_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"seed must be in \[0, 5\], got 6"):
        checked_int("seed", 6, 0, 5)


@pytest.mark.parametrize("value", [10 ** 5000, -10 ** 5000], ids=["huge", "huge_negative"])
def test_an_int_past_python_s_4300_digit_limit_is_named_not_printed(value):
    """An f-string of an int of more than 4300 digits raises Python's own ValueError ("Exceeds
    the limit ... for integer string conversion"), which names no argument."""
    with pytest.raises(ValueError, match=r"seed must be in \[0, 5\], got <int of 16610 bits>"):
        checked_int("seed", value, 0, 5)


def test_a_numpy_integer_out_of_range_is_quoted_by_its_value():
    with pytest.raises(ValueError, match=r"env must be in \[0, 5\], got 9$"):
        checked_int("env", np.int64(9), 0, 5)
    assert shown(np.uint8(7)) == "7" and shown(np.int64(-2)) == "-2"  # not "<uint8>"


def test_a_tensor_or_array_for_an_int_says_its_shape_and_how_to_pass_one():
    """``venv.match(i)`` for ``i`` in ``terminated.nonzero()`` said only "got Tensor <Tensor>"."""
    import torch

    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=0)
    with pytest.raises(TypeError, match=re.escape("env must be an int, got Tensor <Tensor> (shape "
                                                  "(), dtype int64: pass a Python int, e.g. "
                                                  "int(a.item()))")):
        venv.match(torch.tensor(2))
    with pytest.raises(TypeError, match=re.escape("got ndarray <ndarray> (shape (1,), dtype "
                                                  "uint8: pass")):
        venv.reset(seed=np.array([3], np.uint8))
    with pytest.raises(TypeError, match=re.escape("(shape (2,), dtype int64: pass a Python int, "
                                                  "one element at a time, e.g. int(a[i]))")):
        venv.match(torch.tensor([1, 2]))


def test_numpy_scalars_are_quoted_by_their_values():
    """``target=np.float64(60)`` was refused as "got float64 <float64>", NumPy's bool as
    "got bool <bool>" (which read as if a bool had been refused)."""
    assert [shown(v) for v in (np.float64(2.5), np.True_, np.str_("ab"), np.float32(0.5))] == \
        ["2.5", "True", "'ab'", "0.5"]
    assert shown(np.array([1, 2])) == "<ndarray>"  # an array is still not printed


def test_shown_is_bounded_even_for_a_dict_of_long_strings():
    """``shown``: "never larger than ~100 chars", whatever the value."""
    value = {"k" * 50 + str(i): "v" * 50 for i in range(10)}
    text = shown(value)
    assert text.startswith("{'kkk") and len(text) <= 100


def test_shown_never_calls_an_unknown_objects_repr():
    class Hostile:
        def __repr__(self):
            return "secret " * 3

    assert shown(Hostile()) == "<Hostile>"
    assert shown([Hostile()]) == "[<Hostile>]"
    # a class named like a builtin reaches reprlib's repr_int, which fails: still not its repr
    fake_int = type("int", (), {"__repr__": lambda self: "secret"})
    assert shown(fake_int()) == "<int>"


def test_shown_elides_long_and_deep_containers_element_by_element():
    assert shown(list(range(10))) == "[0, 1, 2, 3, ...]"
    assert shown([[[[1]]]]) == "[[[...]]]"


@pytest.mark.parametrize("value, inside", [
    (0, True), (np.float64(0.5), True), (1, True), (np.int64(1), True), (1.0000001, False),
    (-0.1, False), (float("nan"), False), (float("inf"), False), (10 ** 400, False),
    (True, False), (np.True_, False), ("0.5", False), (None, False), ([0.5], False),
    (0.5 + 0j, False), (np.complex128(0.5), False)])  # "a real number": not a TypeError
def test_a_number_in_a_range_is_a_real_finite_one_and_never_a_bool(value, inside):
    """One test for the search's prior, the inference power and the reward weights (three
    hand-written variants before; numpy's isfinite raised TypeError on ints past int64)."""
    assert is_number_in(value, 0, 1) is inside


def test_an_int_enum_is_quoted_by_its_value_and_name():
    """OpenSpiel's ``current_player()`` at a chance node is ``PlayerId.CHANCE``, an IntEnum: a
    message said "got <PlayerId>"."""
    import enum

    class PlayerId(enum.IntEnum):
        CHANCE = -1

    assert shown(PlayerId.CHANCE) == "-1 (CHANCE)"
    assert shown([PlayerId.CHANCE, 3]) == "[-1 (CHANCE), 3]"
