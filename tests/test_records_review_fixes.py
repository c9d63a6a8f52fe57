"""Smaller things a records user met: ``replay --check`` with drawing options (they were
ignored: ``--check --round 99`` said the record was fine), a folder name with a dot, the rules
engine's function name in a record's refusal, ``record.save`` under a file, an empty upload."""

import copy

import pytest

from sevenrocks_env import record
from sevenrocks_env.render import replay
from sevenrocks_env.rules import Match

from positions import played_to_the_end

RECORD = record.game_record(played_to_the_end(Match.new(1, target=60), 1))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "game.json"
    record.save(RECORD, path)
    return path


@pytest.mark.parametrize("options, named", [
    (["--round", "99"], "--round is"), (["--out", "x.gif"], "--out is"),
    (["--fps", "2", "--force"], "--fps, --force are"), (["--scale", "2"], "--scale is"),
    (["--max-frames", "5"], "--max-frames is"),
])
def test_check_refuses_the_options_that_draw(saved, tmp_path, capsys, options, named):
    assert replay.main([str(saved), "--check", *options]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --check only checks the record; {named} for drawing it: leave "
                   "--check out\n")
    assert not (tmp_path / "x.gif").exists()
    assert replay.main([str(saved), "--check"]) == 0


def test_a_new_folder_with_a_dot_is_told_to_end_with_a_slash(saved, tmp_path, capsys):
    assert replay.main([str(saved), "--out", str(tmp_path / "frames.v2")]) == 2
    assert "(a new folder whose name has a dot: end it with /)" in capsys.readouterr().err
    assert replay.main([str(saved), "--out", str(tmp_path / "frames.v2") + "/", "--round",
                        "0"]) == 0


def test_a_wrong_opener_after_a_domino_is_said_in_the_records_words():
    bad = copy.deepcopy(RECORD)
    rnd = next(i for i, r in enumerate(bad["rounds"][:-1]) if r["result"] == "domino")
    following = bad["rounds"][rnd + 1]
    following["opener"] = (following["opener"] + 1) % 4
    with pytest.raises(record.RecordError) as refused:
        record.validate(bad)
    message = str(refused.value)
    assert message.startswith(f"round {rnd + 1}: seat ") and "start_round" not in message
    assert "dominoed the last round and must open the next (R2)" in message


def test_save_under_a_file_says_the_folder_is_a_file(tmp_path):
    (tmp_path / "notes").write_text("mine")
    for path in (tmp_path / "notes" / "x.json", tmp_path / "notes" / "a" / "x.json"):
        with pytest.raises(NotADirectoryError, match=r"cannot save the record to .*x\.json: .* "
                                                     r"or a folder above it is a file"):
            record.save(RECORD, path)
    assert (tmp_path / "notes").read_text() == "mine"


@pytest.mark.parametrize("body", [b"", b"  \n"])
def test_an_empty_upload_is_said_to_be_empty(client, body):
    answer = client.post("/api/replays", content=body,
                         headers={"content-type": "application/json"})
    assert answer.status_code == 422
    assert answer.json()["error"] == "not a valid game record: the uploaded file is empty"


def test_a_match_dealt_at_scores_other_than_0_0_has_no_record():
    """``record.game_record`` wrote such a match's record, which validate (and save) refused
    with a message about a record the user never wrote."""
    from sevenrocks_env import record
    from sevenrocks_env.dealing import deal
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    hands, opener = deal(5, 0)
    match = Match.from_deal(hands, opener, target=250, scores=(100, 0))
    for _ in range(5):
        apply_action(match, legal_actions(match)[0])
    with pytest.raises(ValueError, match=r"history starts at scores \[100, 0\], not 0-0"):
        record.game_record(match)
    fresh = Match.from_deal(hands, opener, target=250)
    for _ in range(5):
        apply_action(fresh, legal_actions(fresh)[0])
    record.validate(record.game_record(fresh))


def test_a_match_dealt_at_a_later_round_has_no_record():
    """Dealt at round 2 of 3 and cut by max_rounds after its one round, its record (one round,
    max_rounds 3) passed validate and read as unfinished."""
    from sevenrocks_env import record, sevenrocks_v0
    from sevenrocks_env.dealing import deal
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.from_deal(*deal(7, 0), seed=7, max_rounds=3, round_index=2)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    assert match.truncated and len(match.history) == 1
    with pytest.raises(ValueError, match=r"^this match's history starts at round 2, not the first "
                                         r"\(dealt with round_index, or edited\), so it has no "
                                         r"record$"):
        record.game_record(match)
    env = sevenrocks_v0.raw_env(max_rounds=3)
    env.reset(options={"match": Match.from_deal(*deal(7, 0), seed=7, max_rounds=3,
                                                round_index=1)})
    with pytest.raises(ValueError, match="or a round after the first at its deal"):
        env.game_record()
