"""Game records: exact format, round trip through JSON, and clear errors for bad records."""

import copy
import json
import random

import pytest

from sevenrocks_env.record import (FORMAT, RecordError, cut_off, ending, game_record, load, replay,
                                   save, validate)
from sevenrocks_env.rules import Match, apply_action, legal_actions


def finished_record(seed=1, max_rounds=None):
    match = Match.new(seed, max_rounds=max_rounds)
    rng = random.Random(seed)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    return game_record(match)


def test_format_exactly():
    record = finished_record()
    assert set(record) == {"format", "target", "rounds", "winner", "scores"}
    assert record["format"] == FORMAT and record["target"] == 250
    rnd = record["rounds"][0]
    assert set(rnd) == {"opener", "hands", "moves", "result", "deductions", "scores"}
    assert len(rnd["hands"]) == 4 and all(len(h) == 7 for h in rnd["hands"])
    assert all(isinstance(t, str) and "|" in t for h in rnd["hands"] for t in h)
    for move in rnd["moves"]:
        if move["action"] == 112:
            assert move == {"seat": move["seat"], "action": 112, "pass": True}
        else:
            assert set(move) == {"seat", "action", "tile", "slot", "end_sum", "points"}
            low, high = map(int, move["tile"].split("|"))
            assert low <= high
    assert record["rounds"][-1]["result"] == "won"
    assert record["rounds"][-1]["deductions"] == [0, 0, 0, 0]


def test_round_trip_through_a_file(tmp_path):
    record = finished_record(seed=4)
    save(record, tmp_path / "game.json")
    assert load(tmp_path / "game.json") == record
    final, _, _ = list(replay(record))[-1]
    assert final.scores == record["scores"] and final.winner == record["winner"]


def test_save_writes_only_records_load_takes_and_makes_their_folder(tmp_path):
    """save wrote whatever it was given (a record load then refused, or json's bare TypeError
    for a NumPy int), and a missing folder was a FileNotFoundError naming its temporary file."""
    import numpy as np

    record = finished_record(seed=4)
    for bad, words in (({"format": "x"}, "format"),
                       (dict(record, target=np.int64(250)), "target"),
                       (dict(record, winner=1 - record["winner"]), "winner")):
        with pytest.raises(RecordError, match=words):
            save(bad, tmp_path / "bad.json")
    assert list(tmp_path.iterdir()) == []
    save(record, tmp_path / "new" / "folders" / "game.json")
    assert load(tmp_path / "new" / "folders" / "game.json") == record


def tampered(record, edit):
    bad = copy.deepcopy(record)
    edit(bad)
    return bad


def first_placement(record, r=0, skip=0):
    moves = [m for m in record["rounds"][r]["moves"] if m["action"] != 112]
    return moves[skip]


@pytest.mark.parametrize("edit,message", [
    (lambda r: r.update(format="other/9"), "unknown record format"),
    (lambda r: r.pop("rounds"), "missing keys"),
    (lambda r: r["rounds"][0]["hands"][0].__setitem__(0, "7|7"), "no tile 7|7"),
    (lambda r: r["rounds"][0]["hands"][0].__setitem__(
        0, "|".join(reversed(r["rounds"][0]["hands"][0][0].split("|"))) + " "), "low|high"),
    (lambda r: r["rounds"][0]["hands"][0].__setitem__(0, r["rounds"][0]["hands"][1][0]),
     "dealt twice"),
    (lambda r: first_placement(r).update(end_sum=first_placement(r)["end_sum"] + 1), "move 0"),
    (lambda r: first_placement(r).update(points=35), "R5"),
    (lambda r: r["rounds"][0]["moves"][1].update(seat=(r["rounds"][0]["moves"][1]["seat"] + 1) % 4),
     "round 0, move 1"),
    (lambda r: r["rounds"][0]["moves"][0].update(action=113), "illegal action"),
    (lambda r: r["rounds"][0].update(deductions=[0, 0, 0, 5]), "deductions"),
    (lambda r: r["rounds"][0].update(result="won"), "result"),
    (lambda r: r.update(scores=[0, 0]), "scores"),
    (lambda r: r.update(winner=None), "winner"),
    (lambda r: r.update(winner=bool(r["winner"])), "winner"),
    (lambda r: r.update(rounds=[], winner=1, scores=[999, -5]), "non-empty"),
    (lambda r: first_placement(r).update(slot=bool(first_placement(r)["slot"])), "slot"),
    (lambda r: first_placement(r).update(end_sum=float(first_placement(r)["end_sum"])),
     "end_sum and points must be ints"),
    (lambda r: r["rounds"][0].update(deductions=[float(d) for d in r["rounds"][0]["deductions"]]),
     "deductions"),
    (lambda r: r["rounds"][0]["moves"].append({"seat": 0, "action": 112, "pass": True}),
     "after the round"),
    (lambda r: r["rounds"].append(copy.deepcopy(r["rounds"][-1])),
     r"round \d+: the match had already ended: team [01] had won it \(R8\); no round follows"),
    # a finished round recorded as one in progress (null): the replay's result is compared
    (lambda r: r["rounds"][-1].update(result=None), r"record says result None, replay gives 'won'"),
    (lambda r: r["rounds"][0].update(result=None), r"round 0: record says result None"),
    # a move after the winning tile: the match is over, not merely the round
    (lambda r: r["rounds"][-1]["moves"].append({"seat": 0, "action": 112, "pass": True}),
     r"a move after the round or match ended"),
    # the format's types and ranges: winner 0 | 1 | null, scores two ints, opener a seat 0-3,
    # four hands of 7 tiles each
    (lambda r: r.update(winner=2), r"winner must be 0, 1 or null, got 2"),
    (lambda r: r.update(winner=float(r["winner"])), r"winner must be 0, 1 or null"),
    (lambda r: r.update(scores=r["scores"] + [0]), r"scores must be two ints"),
    (lambda r: r["rounds"][0].update(scores=r["rounds"][0]["scores"] + [0]),
     r"round 0: scores must be two ints"),
    (lambda r: r["rounds"][0].update(opener=4), r"opener must be a seat 0-3, got 4"),
    (lambda r: r["rounds"][0].update(opener=-1), r"opener must be a seat 0-3, got -1"),
    (lambda r: r["rounds"][0].update(hands=r["rounds"][0]["hands"][:3]),
     r"'hands' must be four lists of tiles"),
    (lambda r: r["rounds"][0]["hands"][0].append(r["rounds"][0]["hands"][1].pop()),
     r"seat 0's hand must list 7 tiles"),
    (lambda r: r["rounds"][0]["hands"][0].__setitem__(0, r["rounds"][0]["hands"][0][0] + " " * 6),
     r"a tile is a string like '3\|5'"),    # a negative number is refused as one, not compared with the replay's (R5 sums are >= 0)
    (lambda r: first_placement(r).update(points=-5), r"end_sum and points must be ints >= 0"),
    (lambda r: first_placement(r).update(end_sum=-5), r"end_sum and points must be ints >= 0"),
    # a result of the wrong type is named as one (a huge int could not even be repr'd)
    (lambda r: r["rounds"][0].update(result=5), r"round 0: result must be one of .* got 5$"),
    (lambda r: r["rounds"][0].update(result=10 ** 5000), r"round 0: result must be one of"),
    (lambda r: r["rounds"][0].update(result=["won"]), r"round 0: result must be one of"),
    # a move's seat out of range, or a move without its action, is named as such
    (lambda r: r["rounds"][0]["moves"][1].update(seat=4),
     r"round 0, move 1: seat must be an int 0-3, got 4$"),
    (lambda r: r["rounds"][0]["moves"][1].pop("action"),
     r"round 0, move 1: a move is an object with 'seat' and 'action'$"),
])
def test_bad_records_name_the_problem(edit, message):
    record = finished_record(seed=2)
    with pytest.raises(RecordError, match=message):
        validate(tampered(record, edit))


def test_a_match_cut_off_by_its_round_limit_says_so():
    """A record kept ``max_rounds`` nowhere: a match cut off by its round limit read as one still
    in progress, and a round after the limit was accepted."""
    cut = finished_record(seed=3, max_rounds=2)
    assert cut["max_rounds"] == 2 and len(cut["rounds"]) == 2 and cut["winner"] is None
    assert cut_off(cut)
    final, _, _ = list(replay(cut))[-1]
    assert final.truncated and final.over and final.scores == cut["scores"]
    assert json.loads(json.dumps(cut)) == cut
    # the same rounds without the limit: a match in progress, waiting for its third deal
    unlimited = tampered(cut, lambda r: r.pop("max_rounds"))
    validate(unlimited)
    assert not cut_off(unlimited) and not list(replay(unlimited))[-1][0].over
    # a limit of 3 is not reached yet: unfinished too
    assert not cut_off(tampered(cut, lambda r: r.update(max_rounds=3)))
    validate(tampered(cut, lambda r: r.update(max_rounds=3)))
    # no round after the limit
    with pytest.raises(RecordError, match="round 1: the match had already ended: no winner "
                                          "after max_rounds 1 rounds; no round follows"):
        validate(tampered(cut, lambda r: r.update(max_rounds=1)))
    # a won match keeps its limit, and was not cut off
    won = finished_record(seed=2, max_rounds=100)
    assert won["max_rounds"] == 100 and won["winner"] is not None and not cut_off(won)
    validate(won)
    assert "max_rounds" not in finished_record(seed=2)



def test_a_match_in_its_last_allowed_round_is_not_cut_off_yet():
    """A one-round match with one move played has as many rounds as its limit, but that round
    goes on: the match is unfinished, not cut off (the round must have ended too)."""
    match = Match.new(5, max_rounds=1)
    apply_action(match, legal_actions(match)[0])
    record = game_record(match)
    validate(record)
    assert len(record["rounds"]) == record["max_rounds"] == 1
    assert not cut_off(record)
    assert ending(record) == "no winner: unfinished"


def test_the_scores_after_each_round_are_checked():
    """R7: each round's scores (after its deductions) are replayed and compared, not only the
    match's final ones."""
    record = finished_record(seed=5, max_rounds=3)
    assert len(record["rounds"]) >= 2  # round 0 is not the last: the final scores are right
    bad = tampered(record, lambda r: r["rounds"][0]["scores"].__setitem__(
        0, r["rounds"][0]["scores"][0] + 5))
    with pytest.raises(RecordError, match=r"round 0: record says scores \[-?\d+, -?\d+\], "
                                          r"replay gives"):
        validate(bad)

def test_a_match_nobody_won_has_winner_null():
    """A record claiming a winner for a match the replay leaves without one (cut off by its
    round limit, or still in progress) is refused: team 0 is not "no winner"."""
    cut = finished_record(seed=3, max_rounds=2)
    assert cut["winner"] is None
    for claimed in (0, 1):
        with pytest.raises(RecordError, match=f"record says winner {claimed}, replay gives None"):
            validate(tampered(cut, lambda r: r.update(winner=claimed)))
    match = Match.new(5)
    apply_action(match, legal_actions(match)[0])
    unfinished = game_record(match)
    with pytest.raises(RecordError, match="record says winner 0, replay gives None"):
        validate(tampered(unfinished, lambda r: r.update(winner=0)))


def test_a_round_limit_of_the_match_s_length_is_a_cut_off_and_a_won_match_is_not():
    """``ending`` says how the match ended: won (even in its last allowed round), cut off, or
    unfinished."""
    cut = finished_record(seed=3, max_rounds=2)
    assert ending(cut) == "no winner: cut off by its round limit (max_rounds 2)"
    won = finished_record(seed=2)
    rounds = len(won["rounds"])
    won_last = tampered(won, lambda r: r.update(max_rounds=rounds))  # won in its last round
    validate(won_last)
    assert not cut_off(won_last)
    assert ending(won_last) == f"won by team {won['winner']}"


def test_save_into_a_device_writes_through_it_and_never_replaces_it(tmp_path):
    """``save(record, "/dev/null")`` keeps no record: the device is written into, not replaced."""
    import os
    import stat

    save(finished_record(seed=4), "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    # "writes through it": a named pipe (what /dev/null cannot show) gets the whole record
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    record = finished_record(seed=4)
    try:
        save(record, fifo)
    finally:
        if reader.is_alive() and not received:  # nothing opened the pipe: let the reader end
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # (the reader had already closed it)
                pass
        reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # not replaced by a file
    assert received and received[0], "nothing was written into the pipe"
    assert json.loads(received[0]) == record


@pytest.mark.parametrize("value", [0, -1, 1001, 2.0, "2", True, None, [2]])
def test_a_bad_round_limit_is_refused(value):
    record = finished_record(seed=3, max_rounds=2)
    with pytest.raises(RecordError, match=r"max_rounds must be an int in \[1, 1000\]"):
        validate(tampered(record, lambda r: r.update(max_rounds=value)))


def test_opener_after_a_domino_is_checked():
    record = finished_record(seed=3)
    r = next(i for i, rnd in enumerate(record["rounds"][:-1]) if rnd["result"] == "domino")
    finisher = [m for m in record["rounds"][r]["moves"]][-1]["seat"]
    bad = tampered(record, lambda rec: rec["rounds"][r + 1].update(opener=(finisher + 1) % 4))
    with pytest.raises(RecordError, match="R2"):
        validate(bad)


def test_unreadable_files(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(RecordError, match="not JSON"):
        load(tmp_path / "x.json")
    (tmp_path / "nan.json").write_text('{"a": NaN}')
    with pytest.raises(RecordError, match=r"nan.json: is not JSON: NaN is not a JSON number$"):
        load(tmp_path / "nan.json")
    (tmp_path / "inf.json").write_text('{"a": 1e400}')  # parsed as inf before
    with pytest.raises(RecordError, match=r"inf.json: is not a game record: the number 1e400 "
                                          r"is out of range$"):
        load(tmp_path / "inf.json")
    with pytest.raises(RecordError, match="cannot read"):
        load(tmp_path / "missing.json")
    with pytest.raises(RecordError, match="JSON object"):
        validate([1, 2])


def test_record_is_json_with_ints_only():
    record = finished_record(seed=6, max_rounds=2)
    text = json.dumps(record)
    assert json.loads(text) == record


def test_an_unfinished_round_followed_by_another_is_refused_at_that_round():
    """A round recorded (and replayed) as still in progress must be the match's last: the error
    names that round, not the one after it."""
    record = finished_record(seed=3)
    assert len(record["rounds"]) >= 2

    def cut_round_0(r):
        r["rounds"][0]["moves"] = r["rounds"][0]["moves"][:3]
        r["rounds"][0].update(result=None, deductions=[0, 0, 0, 0])
    with pytest.raises(RecordError, match=r"^round 0: an unfinished round must be the last one$"):
        validate(tampered(record, cut_round_0))


def test_a_record_of_a_match_in_progress_is_a_snapshot():
    """A record taken mid-match (``sevenrocks play`` saving on a signal, the web page) holds the
    scores of that moment: playing on changes neither the match's nor the round's scores in it."""
    match = Match.new(7)
    rng = random.Random(7)
    while match.scores == [0, 0]:  # until a placement has scored (R5)
        apply_action(match, rng.choice(legal_actions(match)))
    record = game_record(match)
    kept = copy.deepcopy(record)
    assert record["scores"] == match.scores and record["rounds"][-1]["result"] is None
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    assert record == kept
    validate(record)


def test_a_match_without_history_has_no_record():
    """Either way a match comes to keep none: the message names both (it named only the
    keyword, to a caller who had used from_state)."""
    words = (r"^this match keeps no history \(built with keep_history=False, or by "
             r"Match.from_state\), so it has no record$")
    for match in (Match.new(1, keep_history=False), Match.from_state(Match.new(1).to_state())):
        with pytest.raises(ValueError, match=words):
            game_record(match)


def test_a_match_of_more_rounds_than_a_record_holds_has_none(monkeypatch):
    """A match without a round limit (play, the web page) could outlast the 1000 rounds a record
    holds: game_record wrote one that validate and save refuse (the web handed it out)."""
    import sevenrocks_env.record_writer as record_writer
    monkeypatch.setattr(record_writer, "MAX_ROUNDS", 1)  # (1001 rounds take a while to play)
    match = Match.new(2, target=5000)
    game_record(match)  # its first round: one round
    while len(match.history) < 2:
        apply_action(match, legal_actions(match)[0])
    with pytest.raises(ValueError, match=r"^this match has 2 rounds, more than the 1 a record "
                                         r"holds \(a match without a round limit played on "
                                         r"that long\)$"):
        game_record(match)
    # the ended rounds alone (what a player may download mid-match) fit
    ended = game_record(match, ended_only=True)
    assert len(ended["rounds"]) == 1 and ended["scores"] == match.history[0].scores
