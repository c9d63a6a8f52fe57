"""``parse_tile`` reads a half as one ASCII digit 0-6 and names the text it cannot read (a
record's tile ``'²|3'`` used to fail with ``int()``'s "invalid literal ... '²'")."""

import pytest

from sevenrocks_env.record import RecordError, game_record, validate
from sevenrocks_env.rules import Match
from sevenrocks_env.tiles import NUM_TILES, parse_tile, tile_name

from positions import played_to_the_end


@pytest.mark.parametrize("text", [
    "\u00b2|3", "3|\u00b2", "\u0663|4", "\uff13|4", "\u00b2\u00b3", "03|5", "3|7", "12|3", "3|5|6",
    "|", "", "3|", "x|y", "-1|3",
])
def test_anything_but_two_halves_0_to_6_is_not_a_tile_in_words(text):
    with pytest.raises(ValueError) as error:
        parse_tile(text)
    message = str(error.value)
    assert message.startswith(f"not a tile: {text!r}") and "each half a digit 0 to 6" in message
    assert "invalid literal" not in message


def test_a_long_text_is_shown_cut_short():
    with pytest.raises(ValueError, match=r"not a tile: '9{20}'\.\.\. \(") as error:
        parse_tile("9" * 5000)
    assert len(str(error.value)) < 120


@pytest.mark.parametrize("text, tile", [("3|5", "3|5"), ("5|3", "3|5"), ("3-5", "3|5"),
                                        ("35", "3|5"), (" 3 | 5 ", "3|5"), ("0|0", "0|0"),
                                        ("6|6", "6|6")])
def test_the_spellings_play_and_records_use_are_read(text, tile):
    assert tile_name(parse_tile(text)) == tile


def test_every_tile_name_reads_back():
    assert [parse_tile(tile_name(t)) for t in range(NUM_TILES)] == list(range(NUM_TILES))


def test_a_record_tile_with_a_superscript_digit_is_a_clear_record_error():
    match = played_to_the_end(Match.new(1), 1)
    record = game_record(match)
    record["rounds"][0]["hands"][0][0] = "\u00b2|3"
    with pytest.raises(RecordError, match=r"seat 0's hand: not a tile: '\u00b2\|3' \(expected"):
        validate(record)
