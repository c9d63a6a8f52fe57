"""``sevenrocks play`` scripted through a pipe: full rounds, refused input, saved record (issue 5)."""

import io
import subprocess
import sys

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.play import main, parse_answer
from sevenrocks_env.rules import legal_actions
from sevenrocks_env.tiles import KNOCK, WEST, encode_action, parse_tile

from rules_examples import EXAMPLES, example_match


def run(argv, answers):
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(answers), stdout=out)
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
    assert run(["--opponents", "random", "random", "random"], "")[0] == 2
    assert run(["--seat", "5"], "")[0] == 2


def test_parse_answer_reasons():
    match = example_match(EXAMPLES["A"], steps=4)  # ends: west 1 (spinner), east 3
    match.turn = 0
    legal = legal_actions(match)
    assert parse_answer("1", match, legal) == legal[0]
    assert parse_answer("1-2 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("1|2", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("2-1 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_tile("5|3") == parse_tile("3-5") == parse_tile("53") != parse_tile("5|5")
    with pytest.raises(ValueError, match=r"do not hold 1\|4"):
        parse_answer("1-4", match, legal)
    with pytest.raises(ValueError, match="does not fit the east end"):
        parse_answer("1-2 e", match, legal)
    with pytest.raises(ValueError, match="must place one"):
        parse_answer("knock", match, legal)
    with pytest.raises(ValueError, match="not on the list"):
        parse_answer("0", match, legal)
    assert parse_answer("1", match, [KNOCK]) == KNOCK
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
