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



def _floating_state(others) -> dict:
    """5|5 opened with both sides open, and ``others`` 'played' joined to nothing: a layout no
    play reaches (the scalar and batched engines counted such ends differently)."""
    from sevenrocks_env.tiles import tile_index
    played = [tile_index(5, 5), *(tile_index(*pair) for pair in others)]
    rest = iter(t for t in range(28) if t not in played)
    played_by = [0] * 4
    for index, tile in enumerate(played):
        played_by[index % 4] |= 1 << tile
    hands = [sum(1 << next(rest) for _ in range(7 - bits.bit_count())) for bits in played_by]
    return _state(seed=None, hands=hands, played_by=played_by, played=sum(1 << t for t in played),
                  placements=len(played), spinner=5, turn=len(played) % 4,
                  ends=[5, 5, -1, -1], end_double=[True, True, False, False],
                  branch_started=[False] * 4, last_end_sum=10)


@pytest.mark.parametrize("others, words", [
    # a ring 0|3 3|4 4|0 pairs every half: only the spinner's two open sides give it away
    ([(0, 3), (3, 4), (0, 4)], "end_double must be one end per double .*alone on the table"),
    ([(0, 0), (1, 1)], r"played must be tiles joined to the 0\|0"),
])
def test_a_layout_no_play_reaches_is_refused(others, words):
    with pytest.raises(ValueError, match=words):
        Match.from_state(_floating_state(others))
