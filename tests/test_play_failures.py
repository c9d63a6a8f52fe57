"""``sevenrocks play`` refusing what it cannot use (bad arguments, record paths it would not
save to) and failing in one line with the record saved (Ctrl-C, undecodable input, closed
streams, an agent that fails mid-game).  The game's flow: test_play.py."""

import io
import sys

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.agents import make_agent
from sevenrocks_env.play import main
from sevenrocks_env.tiles import KNOCK

from test_play import run


def test_bad_arguments_exit_2(capsys):
    assert run(["--opponents", "nonsense"], "")[0] == 2
    assert "unknown agent spec" in capsys.readouterr().err
    assert run(["--opponents", "bot=heuristic"], "")[0] == 2  # a display name: the arena's only
    assert "NAME=SPEC names an agent in `sevenrocks arena`" in capsys.readouterr().err
    assert run(["--opponents", "random", "random", "random"], "")[0] == 2
    assert run(["--seat", "5"], "")[0] == 2


@pytest.mark.parametrize("argv", [["--target", "0"], ["--seed", str(2**63)], ["--seed", "-1"],
                                  ["--target", str(records.MAX_TARGET + 1)]])  # (no record)
def test_out_of_range_numbers_exit_2(argv, tmp_path, capsys):
    code, _ = run(argv + ["--record", str(tmp_path / "g.json")], "q\n")
    assert code == 2 and "error:" in capsys.readouterr().err
    assert not (tmp_path / "g.json").exists()


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


def test_a_record_name_of_only_spaces_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(["--record", "   ", "--seed", "3", "--opponents", "random"], "q\n")[0] == 2
    assert "--record is empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_byte_0x80_ends_the_game_as_not_utf_8(tmp_path):
    """0x80 is read as U+DC80, the first of the surrogates that stand for bytes not UTF-8."""
    path = tmp_path / "g.json"
    stdin = io.TextIOWrapper(io.BytesIO(b"\x80\n"), encoding="utf-8", errors="surrogateescape")
    code, _ = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record", str(path)],
                  stdin)
    assert code == 2 and path.exists()
