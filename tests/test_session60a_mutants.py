"""Tests from a mutation audit of the rules engine (``sevenrocks_env/rules.py``) and the game
records (``sevenrocks_env/record.py``): each pins what a small change to one of them left every
earlier test passing -- a clone's or a loaded state's lists shared with their source, a clone
without history by default, a half-built Match not called "no Match"; a record's key given twice
named, a hand of six tiles or with one tile twice refused in words (not by an assertion), and
the facts a refusal names (the tile, the seat on turn, the number of moves, the optional key,
the legal moves in words, deductions' shape and bound, a huge number cut short), and no record
saved in place of a folder."""

from __future__ import annotations

import copy
import json
import random
import re

import pytest

from sevenrocks_env.record import (MAX_MOVES_PER_ROUND, MAX_POINTS, RecordError, game_record,
                                   load, parse, save, validate)
from sevenrocks_env.rules import KNOCK, Match, apply_action, is_legal, legal_actions

from positions import played_to_the_end


def _played(match: Match, until, seed: int = 0) -> Match:
    """``match`` after uniformly random legal moves until ``until(match)`` (at most 5000)."""
    rng = random.Random(seed)
    for _ in range(5000):
        if until(match):
            return match
        apply_action(match, rng.choice(legal_actions(match)))
    raise AssertionError("the position was not reached in 5000 moves")


def _finished_record(seed: int = 2) -> dict:
    return game_record(played_to_the_end(Match.new(seed), seed=seed))


def _refused(record: dict) -> str:
    with pytest.raises(RecordError) as error:
        validate(record)
    return str(error.value)


# -- rules.py ---------------------------------------------------------------------------------

def test_a_match_from_a_state_shares_no_list_with_that_state():
    """``Match.from_state`` copies the dict's lists: playing on the match leaves the dict as it
    was (a search keeps one state and rebuilds many matches from it), and the other way round."""
    match = _played(Match.new(3), lambda m: m.placements == 3)
    state = match.to_state()
    kept = copy.deepcopy(state)
    loaded = Match.from_state(state)
    apply_action(loaded, legal_actions(loaded)[-1])
    assert state == kept
    loaded = Match.from_state(state)
    for value in state.values():
        if isinstance(value, list):
            value[:] = [99] * len(value)
    assert loaded.to_state() == kept


def test_a_clone_with_history_shares_no_list_with_the_match_s_log():
    """``clone(keep_history=True)`` copies each round's log: writing into the clone's moves,
    hands, deductions and scores leaves the match's log as it was."""
    match = _played(Match.new(4), lambda m: len(m.history) == 2)
    logs = [(log.opener, list(log.hands), list(log.moves), log.result, log.finisher,
             list(log.deductions), None if log.scores is None else list(log.scores))
            for log in match.history]
    clone = match.clone(keep_history=True)
    for log in clone.history:
        for values in (log.hands, log.moves, log.deductions, log.scores or []):
            values[:] = [99] * len(values)
    assert logs == [(log.opener, log.hands, log.moves, log.result, log.finisher, log.deductions,
                     log.scores) for log in match.history]


def test_a_clone_keeps_no_history_unless_asked():
    """``clone()`` is the cheap copy for search: without its history log, as documented."""
    match = _played(Match.new(5), lambda m: m.placements == 2)
    assert match.history is not None
    assert match.clone().history is None
    assert len(match.clone(keep_history=True).history) == len(match.history)


def test_a_match_object_missing_a_field_is_not_called_no_match():
    """``legal_actions`` and ``is_legal`` name a wrong argument's type; a :class:`Match` that
    lacks a field (a half-built one) is a plain ``AttributeError``, not "match must be a
    rules.Match"."""
    with pytest.raises(TypeError, match=r"match must be a rules\.Match, got dict "):
        legal_actions({"turn": 0})
    with pytest.raises(TypeError, match=r"match must be a rules\.Match, got dict "):
        is_legal({"turn": 0}, 3)
    for asked in (legal_actions, lambda match: is_legal(match, 3)):
        with pytest.raises(AttributeError, match="no attribute"):
            asked(Match.__new__(Match))


# -- record.py --------------------------------------------------------------------------------

def test_a_key_given_twice_in_a_record_is_refused_by_its_name(tmp_path):
    """JSON readers differ on which of two equal keys wins: a record with one is refused, and
    the message names the repeated key (not the object's first key)."""
    text = json.dumps(_finished_record(), indent=1)
    twice = text.replace('"winner":', '"scores": [0, 0],\n "winner":', 1)
    with pytest.raises(RecordError, match=r"key 'scores' given twice in one object"):
        parse(twice)
    (tmp_path / "twice.json").write_text(twice)
    with pytest.raises(RecordError, match=r"twice\.json: .*key 'scores' given twice"):
        load(tmp_path / "twice.json")


def test_a_number_too_large_for_a_float_is_quoted_short():
    huge = "1" + "0" * 5000 + ".5"
    message = str(pytest.raises(RecordError, parse, f'{{"target": {huge}}}').value)
    assert "out of range" in message and "1000000000" in message
    assert len(message) < 120


def test_an_unknown_key_s_message_names_the_optional_one_too():
    record = dict(_finished_record(), extra=1)
    assert _refused(record) == ("record: unknown keys ['extra']; expected exactly ['format', "
                                "'rounds', 'scores', 'target', 'winner'] (and optionally "
                                "['max_rounds'])")


def test_a_hand_of_six_tiles_is_named_not_an_assertion():
    """A dealt hand lists 7 tiles (R1): one short is refused naming the seat (the tiles' sum
    over the four hands is asserted after that check only)."""
    record = _finished_record()
    record["rounds"][0]["hands"][2].pop()
    assert _refused(record) == "round 0: seat 2's hand must list 7 tiles"


def test_a_tile_listed_twice_in_one_hand_is_dealt_twice():
    record = _finished_record()
    hands = record["rounds"][0]["hands"]
    hands[1][3] = hands[1][0]
    assert _refused(record) == f"round 0: tile {hands[1][0]} dealt twice"


def test_a_round_that_is_not_an_object_is_named():
    record = _finished_record()
    record["rounds"][0] = 5
    assert _refused(record) == "round 0: a round is a JSON object"


def test_too_many_moves_in_a_round_are_counted_in_the_message():
    record = _finished_record()
    record["rounds"][0]["moves"] = [{}] * (MAX_MOVES_PER_ROUND + 1)
    assert _refused(record) == ("round 0: 113 moves; a round has at most 112 (R6, see "
                                "docs/rules.md)")


def test_a_move_out_of_turn_names_the_seat_whose_turn_it_is():
    record = _finished_record()
    moves = record["rounds"][0]["moves"]
    on_turn = moves[1]["seat"]
    moves[1]["seat"] = (on_turn + 2) % 4
    assert _refused(record) == (f"round 0, move 1: seat {(on_turn + 2) % 4} moved but it is "
                                f"seat {on_turn}'s turn")


def test_an_illegal_action_lists_the_legal_ones_in_words():
    record = _finished_record()
    first = record["rounds"][0]["moves"][0]
    first["action"] = KNOCK  # the opener can always place (R3)
    message = _refused(record)
    assert message.startswith(f"round 0, move 0: illegal action 112 (knock) for seat "
                              f"{first['seat']}; legal: [")
    assert re.search(r"; legal: \[\d+ \(\d\|\d west\)(, \d+ \(\d\|\d west\))*\]$", message)


def test_deductions_are_four_ints_within_the_record_s_bound():
    """Three deductions are a shape error; a negative one within ``MAX_POINTS`` is compared
    with R7 (and refused as not what it gives); one past the bound is refused unread."""
    record = _finished_record()
    ended = next(r for r, rnd in enumerate(record["rounds"]) if rnd["result"] != "won")
    rnd = record["rounds"][ended]
    shape = copy.deepcopy(record)
    shape["rounds"][ended]["deductions"] = rnd["deductions"][:3]
    assert _refused(shape).startswith(f"round {ended}: deductions must be four ints, got ")
    negative = copy.deepcopy(record)
    negative["rounds"][ended]["deductions"][0] = -5
    assert f"round {ended}: record says deductions [-5, " in _refused(negative)
    assert "R7 of docs/rules.md gives" in _refused(negative)
    past = copy.deepcopy(record)
    past["rounds"][ended]["deductions"][0] = -MAX_POINTS - 1
    assert _refused(past).startswith(f"round {ended}: deductions must be four ints, got ")


def test_a_record_is_not_saved_in_place_of_a_folder(tmp_path):
    """``save`` writes into a device or pipe that exists, never into a folder: a folder at the
    path is an error saying so, and stays an empty folder."""
    folder = tmp_path / "game.json"
    folder.mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        save(_finished_record(), folder)
    assert folder.is_dir() and list(folder.iterdir()) == []
