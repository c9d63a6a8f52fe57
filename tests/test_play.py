"""``sevenrocks play`` scripted through a pipe: full rounds, refused input, saved record (issue 5)."""

import io
import subprocess
import sys

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.agents import make_agent
from sevenrocks_env.play import MAX_ANSWER, Session, main, move_words, parse_answer, round_summary
from sevenrocks_env.rules import Match, legal_actions, team_of
from sevenrocks_env.tiles import (EAST, KNOCK, WEST, encode_action, parse_tile, tile_name,
                                  tiles_of)

from positions import finished_round
from rules_examples import EXAMPLES, example_match


def run(argv, answers):
    """``main`` on scripted answers (a string, or a stream standing for stdin)."""
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(answers) if isinstance(answers, str) else answers,
                stdout=out)
    return code, out.getvalue()


def test_scripted_match_plays_rounds_rejects_bad_input_and_saves(tmp_path):
    path = tmp_path / "game.json"
    answers = "99\n9-9 e\nhello\n" + "1\n" * 400
    code, out = run(["--seat", "0", "--seed", "3", "--partner", "greedy", "--opponents", "random",
                     "--target", "100", "--record", str(path)], answers)
    assert code == 0
    assert "not accepted: 99 is not on the list" in out
    assert "not accepted: not understood: '9-9 e'" in out or "not accepted: no tile 9|9" in out
    assert "round over" in out and "rounds to" in out and "scores: team 0" in out
    assert "wins" in out and f"game record saved to {path}" in out
    record = records.load(path)  # validates by replaying every move
    assert record["winner"] is not None and len(record["rounds"]) >= 2
    assert any(m["seat"] == 0 for m in record["rounds"][0]["moves"])


def test_quit_saves_the_round_in_progress(tmp_path):
    path = tmp_path / "quit.json"
    code, out = run(["--seat", "1", "--seed", "5", "--opponents", "random", "greedy",
                     "--record", str(path)], "1\nq\n")
    assert code == 0 and "quit; game record saved" in out
    record = records.load(path)
    assert record["rounds"][-1]["result"] is None


def test_real_pipe(tmp_path):
    path = tmp_path / "pipe.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sevenrocks_env.cli", "play", "--seat", "2", "--seed", "8",
         "--opponents", "random", "--partner", "random", "--record", str(path)],
        input="1\n" * 30 + "q\n", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "your move, seat 2" in proc.stdout and "quit; game record saved" in proc.stdout
    records.load(path)


def test_bad_arguments_exit_2(capsys):
    assert run(["--opponents", "nonsense"], "")[0] == 2
    assert "unknown agent spec" in capsys.readouterr().err
    assert run(["--opponents", "bot=heuristic"], "")[0] == 2  # a display name: the arena's only
    assert "NAME=SPEC names an agent in `sevenrocks arena`" in capsys.readouterr().err
    assert run(["--opponents", "random", "random", "random"], "")[0] == 2
    assert run(["--seat", "5"], "")[0] == 2


def test_parse_answer_reasons():
    match = example_match(EXAMPLES["A"], steps=4)  # ends: west 1 (spinner), east 3
    match.turn = 0
    legal = legal_actions(match)
    assert parse_answer("1", match, legal) == legal[0]
    assert parse_answer("00001", match, legal) == legal[0]  # was "00001 is not on the list"
    assert parse_answer("1-2 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("1|2", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("2-1 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_tile("5|3") == parse_tile("3-5") == parse_tile("53") != parse_tile("5|5")
    with pytest.raises(ValueError, match=r"do not hold 1\|4"):
        parse_answer("1-4", match, legal)
    with pytest.raises(ValueError, match="does not fit the east end"):
        parse_answer("1-2 e", match, legal)
    with pytest.raises(ValueError, match=r"the north end is not open \(branches open once"):
        parse_answer("1-2 n", match, legal)
    with pytest.raises(ValueError, match="must place one"):
        parse_answer("knock", match, legal)
    with pytest.raises(ValueError, match="not on the list"):
        parse_answer("0", match, legal)
    assert parse_answer("1", match, [KNOCK]) == KNOCK
    # two digits that also spell a held tile: '12' is 1|2 (held), and move 12 is not on the
    # list, so it is the tile; '01' is move 1 and the tile 0|1 (not held): the move
    assert len(legal) < 12 and parse_answer("12", match, legal) == encode_action(
        parse_tile("1|2"), WEST)
    assert not match.hands[0] >> parse_tile("0|1") & 1 and parse_answer("01", match, legal) == legal[0]
    # '04' played move 4 of the list where the human meant the tile 0|4: both readings valid
    # and different are refused, saying how to answer either
    hand = match.hands[0]
    match.hands[0] = hand | 1 << parse_tile("0|2")
    try:
        assert len(legal) >= 2 and legal[1] >> 2 != parse_tile("0|2")
        with pytest.raises(ValueError, match=r"02 is both move 2 on the list .* your tile 0\|2"):
            parse_answer("02", match, legal)
    finally:
        match.hands[0] = hand
    for odd in ("²", "١"):  # str.isdigit() says yes, int() says no
        with pytest.raises(ValueError) as info:
            parse_answer(odd, match, legal)
        assert "invalid literal" not in str(info.value)


class _QuitAtPause(io.StringIO):
    """Answers 1 to every move prompt and q at the pause between rounds."""

    def __init__(self, out: io.StringIO):
        super().__init__()
        self.out = out

    def readline(self, *args):
        return "q\n" if self.out.getvalue().endswith("press Enter for the next round (q to quit): ") \
            else "1\n"


def test_pause_between_rounds_and_quit_there():
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.play import Session

    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=250, stdin=_QuitAtPause(out), stdout=out,
                      echo=False, pause=True)
    assert session.run() is False
    text = out.getvalue()
    assert text.count("press Enter for the next round") == 1 and "scores: team 0" in text
    match = session.match
    assert not match.over and match.history[0].result is not None and not match.history[-1].moves


def test_agents_are_never_asked_about_forced_moves():
    from sevenrocks_env.agents import RandomAgent
    from sevenrocks_env.play import Session

    class Strict(RandomAgent):
        name = "strict"

        def act(self, observation, action_mask):
            assert action_mask.sum() > 1, "a forced move reached an agent"
            return super().act(observation, action_mask)

    out = io.StringIO()
    session = Session(2, {s: Strict(seed=s) for s in (0, 1, 3)}, seed=11, target=100,
                      stdin=io.StringIO("1\n" * 400), stdout=out, echo=False)
    assert session.run() is True and session.match.over
    assert "seat 1 (strict)" in out.getvalue()


@pytest.mark.parametrize("text", ["1|2|3", "1-2-3", "0|0|0", "106", "0005", "345", "1", "", "|"])
def test_parse_tile_refuses_what_is_not_one_tile(text):
    """``parse_tile``: ``"a|b"``, ``"a-b"`` or ``"ab"`` (two numbers); anything else is a
    ``ValueError`` -- three halves, or three or more digits with no separator."""
    with pytest.raises(ValueError):
        parse_tile(text)


def test_parse_tile_spellings_of_one_tile():
    assert parse_tile("1|6") == parse_tile("6-1") == parse_tile("16") == parse_tile(" 1 | 6 ")


def test_reaching_the_target_exactly_is_announced_as_a_win():
    """R8: the first side to reach *or pass* the target wins."""
    match = example_match(EXAMPLES["A"], steps=2)  # step 3: seat 2 lays 4|4 east, scores 10
    match.turn = 2
    action = encode_action(parse_tile("4|4"), EAST)
    match.scores[0] = match.target - 10
    assert move_words(match, action).endswith("scores 10 and WINS the match")
    match.scores[0] = match.target - 11
    assert "WINS" not in move_words(match, action)


def test_a_tile_fitting_two_ends_needs_the_end_named():
    match = example_match(EXAMPLES["A"], steps=4)  # ends: west 1 (spinner line B), east 3
    match.turn = 0                                  # seat 0 holds 1|3: fits both
    legal = legal_actions(match)
    with pytest.raises(ValueError, match="fits more than one end"):
        parse_answer("1-3", match, legal)
    assert parse_answer("1-3 e", match, legal) == encode_action(parse_tile("1|3"), EAST)
    assert parse_answer("1-3 w", match, legal) == encode_action(parse_tile("1|3"), WEST)


def test_an_end_showing_a_blank_can_be_named():
    """Example C after step 2: the west end shows 0 (a blank is an open end, R3)."""
    match = example_match(EXAMPLES["C"], steps=2)
    assert match.ends[WEST] == 0
    for seat in range(4):
        match.turn = seat
        legal = legal_actions(match)
        west = [a for a in legal if a < 112 and a & 3 == WEST]
        if west:
            tile = west[0] >> 2
            assert parse_answer(f"{tile_name(tile)} w", match, legal) == west[0]
            return
    pytest.fail("no seat holds a blank")


def test_the_opening_tile_may_name_any_end():
    match = Match.new(3)
    assert match.opening
    legal = legal_actions(match)
    tile = tiles_of(match.hands[match.turn])[0]
    assert parse_answer(f"{tile_name(tile)} east", match, legal) == encode_action(tile, WEST)


def test_round_summary_shows_each_hand_with_its_own_team_unless_won():
    log = finished_round().history[-1]
    lines = round_summary(log)
    seat_lines = [line for line in lines if line.lstrip().startswith("seat ")]
    assert len(seat_lines) == 4  # R7: every hand is counted
    for seat, line in enumerate(seat_lines):
        assert line.lstrip().startswith(f"seat {seat}:")
        assert f"team {team_of(seat)} " in line  # R1: seats 0, 2 team 0; 1, 3 team 1
    won = finished_round(won=True, target=5).history[-1]
    assert not any(line.lstrip().startswith("seat ") for line in round_summary(won))  # R8


@pytest.mark.parametrize("seat", [0, 1])
def test_the_final_line_says_whether_your_team_won(seat):
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in range(4) if s != seat}
    session = Session(seat, agents, seed=3, target=60, stdin=io.StringIO("1\n" * 2000),
                      stdout=out, echo=False)
    assert session.run() is True
    winner = session.match.winner
    expected = "your team wins!" if team_of(seat) == winner else "your team loses."
    assert out.getvalue().rstrip().endswith(expected)


@pytest.mark.parametrize("argv", [["--target", "0"], ["--seed", str(2**63)], ["--seed", "-1"],
                                  ["--target", str(records.MAX_TARGET + 1)]])  # (no record)
def test_out_of_range_numbers_exit_2(argv, tmp_path, capsys):
    code, _ = run(argv + ["--record", str(tmp_path / "g.json")], "q\n")
    assert code == 2 and "error:" in capsys.readouterr().err
    assert not (tmp_path / "g.json").exists()


def test_a_drawn_seed_comes_from_all_2_to_the_63_seeds(tmp_path, monkeypatch):
    """The seed deals every hand: drawn from a small range, a player could find it from their
    own hand and know the others' (the web page draws from the same range)."""
    import secrets

    asked = []
    monkeypatch.setattr(secrets, "randbelow", lambda n: asked.append(n) or 12345)
    code, out = run(["--opponents", "random", "--record", str(tmp_path / "g.json")], "q\n")
    assert code == 0 and asked == [2**63]
    assert records.load(tmp_path / "g.json")["rounds"][0]["hands"] == [
        [tile_name(t) for t in tiles_of(hand)] for hand in Match.new(12345).history[0].hands]


def test_no_pause_after_the_round_that_ends_the_match():
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=30, stdin=io.StringIO("1\n" * 400 + "\n" * 50),
                      stdout=out, echo=False, pause=True)
    assert session.run() is True
    text = out.getvalue()
    rounds = len(session.match.history)
    assert text.count("press Enter for the next round") == rounds - 1 >= 1


def test_two_opponent_specs_are_left_then_right(tmp_path):
    """``--opponents LEFT RIGHT``: left is the next seat clockwise (seat + 1), right seat + 3."""
    code, out = run(["--seat", "0", "--seed", "3", "--partner", "heuristic", "--opponents",
                     "random", "greedy", "--target", "60", "--record", str(tmp_path / "g.json")],
                    "1\n" * 2000)
    assert code == 0
    assert "opponents seat 1 = random, seat 3 = greedy" in out
    assert "seat 1 (random)" in out and "seat 3 (greedy)" in out
    assert "seat 1 (greedy)" not in out and "seat 3 (random)" not in out


class _Interrupt(io.StringIO):
    def readline(self, *args):
        raise KeyboardInterrupt


def test_ctrl_c_exits_130_and_saves(tmp_path):
    path = tmp_path / "g.json"
    code, _ = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record", str(path)],
                  _Interrupt())
    assert code == 130 and path.exists()


def test_undecodable_input_exits_2_and_saves(tmp_path):
    path = tmp_path / "g.json"
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\n" * 50), encoding="utf-8")
    code, _ = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record", str(path)],
                  stdin)
    assert code == 2 and path.exists()


def test_an_answer_of_exactly_max_answer_characters_is_read():
    out = io.StringIO()
    line = " " * (MAX_ANSWER - 1) + "1"  # the last line of the input, no newline
    session = Session(0, {s: make_agent("random") for s in (1, 2, 3)}, seed=3, target=250,
                      stdin=io.StringIO(line), stdout=out, echo=False)
    assert session.ask("? ") == line
    assert "not accepted" not in out.getvalue()


def test_an_existing_read_only_record_is_refused_before_the_game(tmp_path, monkeypatch, capsys):
    import os

    from sevenrocks_env import play_record
    path = tmp_path / "old.json"
    path.write_text("{}")
    real = os.access
    monkeypatch.setattr(play_record.os, "access",  # as for a non-root user and a 0444 file
                        lambda p, mode: False if str(p) == str(path) else real(p, mode))
    code, out = run(["--seed", "3", "--opponents", "random", "--record", str(path)], "q\n")
    assert code == 2 and "not writable" in capsys.readouterr().err
    assert path.read_text() == "{}" and "your move" not in out


@pytest.mark.parametrize("word", ["quit", "Q", " exit "])
def test_the_pause_between_rounds_takes_every_quit_word_the_move_prompt_takes(word):
    """'quit' at the pause started the next round (only an exact 'q' was taken there)."""
    out = io.StringIO()

    class QuitWordAtPause(_QuitAtPause):
        def readline(self, *args):
            return word + "\n" if super().readline() == "q\n" else "1\n"

    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=250, stdin=QuitWordAtPause(out), stdout=out,
                      echo=False, pause=True)
    assert session.run() is False
    assert out.getvalue().count("press Enter for the next round") == 1


def test_a_record_path_that_is_an_agents_checkpoint_is_refused(tmp_path, capsys):
    """--record over the partner's checkpoint replaced a trained model by a 1 kB record."""
    import shutil

    from sevenrocks_env.policy import resolve_path

    checkpoint = tmp_path / "partner.pt"
    shutil.copy(resolve_path("shipped"), checkpoint)
    size = checkpoint.stat().st_size
    for partner in (f"ckpt:{checkpoint}", f"search:policy={checkpoint},samples=2"):
        code, out = run(["--seed", "3", "--opponents", "random", "--partner", partner,
                         "--record", str(checkpoint)], "q\n")
        err = capsys.readouterr().err
        assert code == 2 and f"is the file {checkpoint} of agent" in err, err
        assert checkpoint.stat().st_size == size and "your move" not in out


def test_an_existing_record_file_with_an_incomplete_agent_spec_is_refused_as_existing(tmp_path):
    """A spec whose files cannot be told (no checkpoint named, or one that is missing) is left
    for make_agent to refuse: the record path is still judged, as a file that exists."""
    from sevenrocks_env.play_record import existing_file_problem

    path = tmp_path / "game.json"
    path.write_text("{}")
    specs = ["ckpt:", f"ckpt:{tmp_path / 'missing.pt'}", "random"]
    assert existing_file_problem(path, specs).startswith("exists already")
    assert existing_file_problem(tmp_path / "new.json", specs) is None


class _FailingAgent:
    """An agent that breaks mid-game, as a hostile checkpoint's network does."""
    name = "broken"

    def __init__(self, error):
        self.error = error

    def act(self, observation, match=None):
        raise self.error


@pytest.mark.parametrize("error", [
    RuntimeError("ckpt:bad.pt: the network's outputs for legal actions are not finite"),
    ValueError("MaskedCategorical: the logits are not finite"),  # as search:policy=... raises
    None])
def test_an_agent_that_fails_mid_game_is_one_line_and_the_record_is_saved(tmp_path, capsys,
                                                                          monkeypatch, error):
    """A failing agent (or one choosing an illegal move: the driver's IllegalActionError)
    escaped as a traceback and the game record was lost."""
    from sevenrocks_env import play
    from sevenrocks_env.agents import RandomAgent

    class Illegal(RandomAgent):  # the knock while holding a tile that fits
        def act(self, observation, match=None):
            return KNOCK

    made = {"bad": lambda: _FailingAgent(error) if error is not None else Illegal(seed=0)}
    monkeypatch.setattr(play, "make_agent",
                        lambda spec, seed=None: made[spec]() if spec in made
                        else make_agent(spec, seed=seed))
    path = tmp_path / "g.json"
    code, _ = run(["--seed", "3", "--opponents", "bad", "--record", str(path)], "1\n" * 200)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and path.exists() and "Traceback" not in "\n".join(err)
    expected = ("chose illegal action 112" if error is None else
                f"failed: {type(error).__name__}: {error}")
    name = "broken" if error is not None else "random"
    assert err[-1].startswith(f"error: agent '{name}' at seat ") and expected in err[-1], err
    assert err[-1].endswith(f"game record saved to {path}")
    records.validate(records.load(path))


def test_ctrl_c_while_the_agents_load_exits_130_without_a_traceback(monkeypatch, capsys):
    from sevenrocks_env import play

    def interrupted(spec, seed=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(play, "make_agent", interrupted)
    code, out = run(["--seed", "3", "--opponents", "random"], "q\n")
    assert code == 130 and "interrupted before the game started" in capsys.readouterr().err


def test_a_closed_stdout_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["--seed", "3", "--opponents", "random"], stdin=io.StringIO("q\n")) == 2
    assert "standard output is closed" in capsys.readouterr().err


def test_a_closed_stdin_is_one_line(capsys, monkeypatch):
    """Started with stdin closed (<&-): an AttributeError traceback, and no record."""
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["--seed", "3", "--opponents", "random"], stdout=io.StringIO()) == 2
    assert "standard input is closed" in capsys.readouterr().err


def test_record_paths_that_would_fail_at_the_end_are_refused_first(tmp_path, monkeypatch,
                                                                   capsys):
    """An empty --record took the default path; a games/ link to nothing passed the check and
    the save failed after the whole game; a record path made a folder during the game was
    an OutputError traceback, the record lost."""
    assert run(["--seed", "3", "--opponents", "random", "--record", ""], "q\n")[0] == 2
    assert "--record is empty" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    # a folder's spelling (replay reads a trailing slash so) wrote a file named "sub"
    assert run(["--seed", "3", "--opponents", "random", "--record", "sub/"], "q\n")[0] == 2
    assert capsys.readouterr().err == "error: --record sub/: names a folder; give a file name\n"
    assert not (tmp_path / "sub").exists()
    (tmp_path / "games").symlink_to(tmp_path / "nowhere")
    assert run(["--seed", "3", "--opponents", "random"], "q\n")[0] == 2
    assert "symbolic link to nothing" in capsys.readouterr().err
    target = tmp_path / "race.json"

    class MakesAFolder(io.StringIO):
        def readline(self, *args):
            target.mkdir(exist_ok=True)
            return "q\n"
    code, _ = run(["--seed", "3", "--opponents", "random", "--record", str(target)],
                  MakesAFolder())
    assert code == 2 and "cannot save the record to" in capsys.readouterr().err


def test_a_winning_move_is_told_by_the_score_of_the_mover_s_own_team():
    """"WINS the match" looks at the team of the seat on turn: for a seat of team 1, team 0's
    score near the target says nothing."""
    from sevenrocks_env.rules import apply_action
    from sevenrocks_env.play import outcome

    checked = set()
    match = Match.new(12, target=300)
    while len(checked) < 2:
        for action in legal_actions(match):
            points = outcome(match, action)[1] if action != KNOCK else 0
            if points:
                mine, theirs = team_of(match.turn), 1 - team_of(match.turn)
                scores = list(match.scores)
                match.scores[mine], match.scores[theirs] = match.target - points, 0
                assert move_words(match, action).endswith("and WINS the match")
                match.scores[mine], match.scores[theirs] = 0, match.target - points
                assert "WINS" not in move_words(match, action)
                match.scores[:] = scores
                checked.add(mine)
        apply_action(match, legal_actions(match)[0])


def test_a_move_that_ends_the_round_is_worded_with_its_own_end_sum():
    """The end sum a round's last tile leaves (not the next deal's empty table)."""
    from sevenrocks_env.rules import apply_action

    ends_seen = 0
    for seed in range(6):
        match = Match.new(seed, target=300)
        while not match.over:
            action = legal_actions(match)[0]
            words = move_words(match, action)
            rounds = len(match.history)
            apply_action(match, action)
            log = match.history[rounds - 1]
            if action != KNOCK and log.result is not None:
                total = log.moves[-1][2]
                assert f"end sum {total}," in words, (words, total)
                ends_seen += total > 0
    assert ends_seen


def test_the_moves_are_numbered_from_1_and_a_piped_answer_is_echoed(tmp_path):
    """The list starts at 1 (the number answered); a piped answer is echoed after its prompt,
    so a transcript reads as a dialogue."""
    code, out = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record",
                     str(tmp_path / "g.json")], "1\nq\n")
    assert code == 0
    assert "\n   1. " in out and "\n   0. " not in out
    assert "or q to quit: 1\n" in out


def test_a_record_name_of_only_spaces_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(["--record", "   ", "--seed", "3", "--opponents", "random"], "q\n")[0] == 2
    assert "--record is empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bots_are_seeded_from_the_seed_and_their_seat(tmp_path, monkeypatch):
    from sevenrocks_env import play

    made = []
    real = play.make_agent
    monkeypatch.setattr(play, "make_agent", lambda spec, seed: made.append(seed) or
                        real(spec, seed=seed))
    run(["--seat", "1", "--seed", "5", "--opponents", "random", "--record",
         str(tmp_path / "g.json")], "q\n")
    assert sorted(made) == [20, 22, 23]  # 5 * 4 + seat, for seats 0, 2 and 3


def test_a_byte_0x80_ends_the_game_as_not_utf_8(tmp_path):
    """0x80 is read as U+DC80, the first of the surrogates that stand for bytes not UTF-8."""
    path = tmp_path / "g.json"
    stdin = io.TextIOWrapper(io.BytesIO(b"\x80\n"), encoding="utf-8", errors="surrogateescape")
    code, _ = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record", str(path)],
                  stdin)
    assert code == 2 and path.exists()


def test_a_and_b_name_branch_a_north_and_branch_b_south():
    """The board calls the spinner's branches A (north) and B (south): ``3-5 a`` is north."""
    from sevenrocks_env.rules import apply_action, is_legal

    named = set()
    for seed in range(40):
        match = Match.new(seed, target=5000)
        while len(match.history) == 1:
            legal = legal_actions(match)
            for slot, word in ((2, "a"), (3, "b")):
                for action in legal:
                    if action != KNOCK and action & 3 == slot and \
                            not is_legal(match, (action & ~3) | (5 - slot)):
                        answer = f"{tile_name(action >> 2).replace('|', '-')} {word}"
                        assert parse_answer(answer, match, legal) == action
                        named.add(word)
            apply_action(match, legal[0])
        if named == {"a", "b"}:
            return
    raise AssertionError(f"only {named} was named")


def test_a_knock_is_told_in_the_player_s_grammar():
    """"you knock", "seat 2 (random) knocks": one line for each knock of the match, yours and
    the bots' (a knock is forced, R6: it plays itself, and is still told)."""
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=120, stdin=io.StringIO("1\n" * 4000),
                      stdout=out, echo=False)
    assert session.run() is True
    knocks = [seat for rnd in session.match.history for seat, action, *_ in rnd.moves
              if action == KNOCK]
    text = out.getvalue()
    assert 0 in knocks and set(knocks) != {0}
    assert text.count(">> you knock: no tile fits") == knocks.count(0)
    assert text.count(") knocks: no tile fits") == len(knocks) - knocks.count(0)
    assert "you knocks" not in text
