"""``Match.from_state`` names unknown fields in a bounded message: the dict may come from a
hostile file with any number of keys of any size, and callers cut a message at 200 chars."""

import pytest

from sevenrocks_env.rules import Match


def _state(**extra):
    return {**Match.new(3).to_state(), **extra}


def test_many_long_unknown_names_give_a_short_message_that_counts_them():
    state = _state(**{f"{i:04d}" + "x" * 10_000: i for i in range(1000)})
    with pytest.raises(ValueError) as error:
        Match.from_state(state)
    message = str(error.value)
    assert len(message) < 200, len(message)
    assert message.startswith("match state: missing fields [], unknown fields ['0000xxx")
    assert message.endswith(", ... (1000 in all)]") and "0001xx" in message
    assert "0003xx" not in message  # the first three only


@pytest.mark.parametrize("key", [10 ** 5000, b"\0" * 10 ** 6, ("a",) * 10 ** 5, 1.5, None],
                         ids=["huge int", "long bytes", "long tuple", "float", "None"])
def test_an_unknown_key_of_any_type_or_size_is_shown_cut_short(key):
    state = _state()
    state[key] = 1
    with pytest.raises(ValueError, match=r"unknown fields \[.{1,24}\]$") as error:
        Match.from_state(state)
    assert len(str(error.value)) < 120


def test_a_few_unknown_and_missing_names_are_listed_as_before():
    state = _state(history=[], note=1)
    del state["turn"]
    with pytest.raises(ValueError, match=r"^match state: missing fields \['turn'\], unknown "
                                         r"fields \['history', 'note'\]$"):
        Match.from_state(state)
