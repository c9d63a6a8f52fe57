"""``sevenrocks replay``: one frame per move, GIF and PNG outputs, clear errors (issue 5); where
its outputs may be written: ``test_replay_outputs.py``."""

import io
import json
import random

import pytest
from PIL import Image

from sevenrocks_env import record as records
from sevenrocks_env.render import replay
from sevenrocks_env.render.picture import SIZE
from sevenrocks_env.render.replay import _gif_too_large, frame_count, main, record_frames
from sevenrocks_env.rules import Match, apply_action, legal_actions

from positions import played_to_the_end


def short_match_record(seed=4, target=60):
    match = Match.new(seed, target=target)
    rng = random.Random(seed)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    return records.game_record(match)


def test_one_frame_per_move(tmp_path):
    record = short_match_record()
    moves = sum(len(r["moves"]) for r in record["rounds"])
    frames = list(record_frames(record))
    assert len(frames) == moves
    assert [move for _, move, _ in frames] == [m for r in record["rounds"] for m in r["moves"]]
    one = list(record_frames(record, round_index=0, scale=0.5))
    assert len(one) == len(record["rounds"][0]["moves"])
    assert one[0][0].size == (640, 430)


def test_gif_and_png_folder(tmp_path, capsys):
    record = short_match_record()
    path = tmp_path / "game.json"
    records.save(record, path)
    moves = len(record["rounds"][1]["moves"])
    gif = tmp_path / "round.gif"
    assert main([str(path), "--out", str(gif), "--round", "1", "--fps", "4", "--scale", "0.4"]) == 0
    for fps in ("0.001", "0", "nan", "1000"):  # a GIF frame's duration is 16 bits of ms
        assert main([str(path), "--out", str(tmp_path / "new.gif"), "--fps", fps]) == 2
        assert "--fps must be between 0.1 and 50" in capsys.readouterr().err
    assert not (tmp_path / "new.gif").exists()
    with Image.open(gif) as image:
        assert image.n_frames == moves
    folder = tmp_path / "frames"
    assert main([str(path), "--out", str(folder) + "/", "--round", "1", "--scale", "0.4"]) == 0
    assert len(list(folder.glob("frame_*.png"))) == moves


def test_every_frame_of_a_round_is_framed_by_the_round_s_final_layout(monkeypatch):
    """Tiles keep their place from frame to frame: each frame of a round is drawn with the
    framing of that round's last layout (framed move by move, the board jumped)."""
    from sevenrocks_env.render.geometry import frame_layout
    from sevenrocks_env.render.layout import build_layout
    from sevenrocks_env.render.picture import board_box

    record = short_match_record()
    drawn = []
    real = replay.draw_picture
    monkeypatch.setattr(replay, "draw_picture", lambda match, spectator, framing: (
        drawn.append(framing), real(match, spectator=spectator, framing=framing))[1])
    rounds = [r for _, _, r in record_frames(record, scale=0.1)]
    assert len(drawn) == len(rounds) and len(set(rounds)) >= 2
    for framing, r in zip(drawn, rounds):
        moves = record["rounds"][r]["moves"]
        assert framing == frame_layout(build_layout(moves), board_box(SIZE))


def test_bad_input_exits_2_with_a_message(tmp_path, capsys):
    record = short_match_record()
    record["rounds"][0]["moves"][1]["action"] = 111  # not legal there
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    assert main([str(bad), "--out", str(tmp_path / "x.gif")]) == 2
    assert "move 1" in capsys.readouterr().err
    good = tmp_path / "good.json"
    records.save(short_match_record(), good)
    assert main([str(good), "--out", str(tmp_path / "x.mp4")]) == 2
    assert main([str(good), "--out", str(tmp_path / "x.gif"), "--round", "99"]) == 2
    assert "--round 99" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json"), "--out", str(tmp_path / "x.gif")]) == 2


def test_tiles_keep_their_place_within_a_round():
    """Frames of one round share the final layout's framing: a tile never moves once laid."""
    from sevenrocks_env.render.geometry import board_geometry, frame_layout
    from sevenrocks_env.render.layout import build_layout
    from sevenrocks_env.render.picture import board_box

    moves = short_match_record()["rounds"][0]["moves"]
    framing = frame_layout(build_layout(moves), board_box())
    final = {t.placed.move: t.box for t in board_geometry(build_layout(moves), board_box(), framing).tiles}
    for k in range(1, len(moves)):
        for tile in board_geometry(build_layout(moves[:k]), board_box(), framing).tiles:
            assert tile.box == final[tile.placed.move]


def test_a_gif_too_large_to_build_in_memory_is_refused_before_drawing(tmp_path, capsys,
                                                                      monkeypatch):
    """Pillow holds every GIF frame: a long record (the bounds allow ~112k moves) must not eat
    the machine. Refused up front, with the ways out named (PNG folders stream: they have only
    the --max-frames cap)."""
    from sevenrocks_env.render import replay

    record = short_match_record()
    moves = sum(len(r["moves"]) for r in record["rounds"])
    path = tmp_path / "game.json"
    records.save(record, path)
    monkeypatch.setattr(replay, "MAX_GIF_PIXELS", (moves - 1) * 1280 * 860)
    drawn = []
    monkeypatch.setattr(replay, "draw_picture", lambda *a, **k: drawn.append(1) or (None, None))
    assert main([str(path), "--out", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert f"{moves} frames of 1280x860 are too many" in err and "--round" in err and "PNG" in err
    assert drawn == [] and not (tmp_path / "x.gif").exists()
    # the library function checks as it goes (after the 4th frame here)
    monkeypatch.undo()
    monkeypatch.setattr(replay, "MAX_GIF_PIXELS", 3 * 1280 * 860)
    with pytest.raises(ValueError, match="too many for one GIF"):
        replay.write_gif(replay.record_frames(record), tmp_path / "y.gif", fps=2)
    assert not (tmp_path / "y.gif").exists()


def test_a_long_record_s_frames_are_refused_unless_narrowed_or_allowed(tmp_path, capsys,
                                                                      monkeypatch):
    """``--out FOLDER`` of a match to 5000 (~10,000 moves) drew ~10,000 PNGs (~400 MB, minutes)
    without a word: more than --max-frames (default 2000) is refused before any drawing, naming
    the count and the ways to narrow it."""
    match = Match.new(3, target=5000, max_rounds=1000)
    rng = random.Random(3)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    record = records.game_record(match)
    total, rounds = frame_count(record), len(record["rounds"])
    assert total > replay.MAX_FRAMES == 2000
    path = tmp_path / "long.json"
    records.save(record, path)
    folder = tmp_path / "frames"

    def no_drawing(*args, **kwargs):
        raise AssertionError("a frame was drawn")
    monkeypatch.setattr(replay, "draw_picture", no_drawing)
    for limit in ([], ["--max-frames", str(total - 1)]):
        assert main([str(path), "--out", str(folder), *limit]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{total} frames (one per move) are more than " \
            f"--max-frames {total - 1 if limit else 2000}" in err, err
        assert f"--round N (rounds 0..{rounds - 1})" in err and f"--max-frames {total}" in err
    assert not folder.exists()
    assert main([str(path), "--out", str(folder), "--max-frames", "0"]) == 2
    assert "argument --max-frames: must be an int in [1," in capsys.readouterr().err
    monkeypatch.undo()
    moves = len(record["rounds"][1]["moves"])  # a limit of exactly the frame count passes
    assert main([str(path), "--out", str(folder), "--round", "1", "--scale", "0.1",
                 "--max-frames", str(moves)]) == 0
    assert len(list(folder.glob("frame_*.png"))) == moves


def test_a_key_given_twice_is_refused(tmp_path):
    """JSON readers differ on which of two equal keys wins: a record with one is refused."""
    from sevenrocks_env.render.layout import build_layout

    text = json.dumps(short_match_record())
    doubled = tmp_path / "doubled.json"
    doubled.write_text('{"target": 9999, ' + text[1:])
    with pytest.raises(records.RecordError, match="key 'target' given twice"):
        records.load(doubled)
    with pytest.raises(ValueError) as caught:  # a bad move is quoted in short
        build_layout([{"seat": "x" * 10 ** 6, "action": 1}])
    assert len(str(caught.value)) < 300


def test_gif_frames_last_one_per_move_and_longer_at_each_round_end(tmp_path):
    """Frames reach Pillow one at a time; each one's duration is set once the next frame shows
    whether its round ended (the round's last frame, and the match's, are held 3x)."""
    from sevenrocks_env.render import replay

    record = short_match_record()
    assert len(record["rounds"]) >= 2
    frames = list(replay.record_frames(record, scale=0.1))
    assert replay.write_gif(iter(frames), tmp_path / "m.gif", fps=2) == len(frames)
    rounds = [r for _, _, r in frames]
    ends = [i == len(rounds) - 1 or rounds[i + 1] != r for i, r in enumerate(rounds)]
    with Image.open(tmp_path / "m.gif") as gif:
        assert gif.n_frames == len(frames)
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
    assert durations == [1500 if end else 500 for end in ends]


def test_a_round_one_past_the_last_is_refused_at_once():
    record = short_match_record()
    n = len(record["rounds"])  # a library call: no command-line flag in its words
    with pytest.raises(ValueError, match=f"^round {n} is not in the record: it has rounds "
                                         f"0..{n - 1}$"):
        record_frames(record, round_index=n)


def test_frame_count_is_one_per_move_of_the_chosen_round():
    record = short_match_record()
    assert len(record["rounds"]) >= 2
    for index, rnd in enumerate(record["rounds"]):
        assert frame_count(record, index) == len(rnd["moves"])
    assert frame_count(record) == sum(len(r["moves"]) for r in record["rounds"])


def test_a_gif_may_hold_exactly_800_full_size_frames():
    """docs/render.md: a GIF has at most 800 full-size frames."""
    assert _gif_too_large(800, *SIZE) is None
    assert _gif_too_large(801, *SIZE) is not None


@pytest.mark.parametrize("scale", ["4.5", "0.05"])
def test_scale_out_of_range_exits_2(scale, tmp_path, capsys):
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    assert main([str(path), "--out", str(tmp_path / "g.gif"), "--scale", scale]) == 2
    assert "--scale must be between 0.1 and 4" in capsys.readouterr().err
    assert not (tmp_path / "g.gif").exists()


def test_a_record_without_moves_exits_2(tmp_path, capsys):
    from sevenrocks_env.play import main as play_main
    seed = 3
    opener = Match.new(seed).turn
    path = tmp_path / "empty.json"
    assert play_main(["--seat", str(opener), "--seed", str(seed), "--opponents", "random",
                      "--record", str(path)], stdin=io.StringIO("q\n"), stdout=io.StringIO()) == 0
    assert records.load(path)["rounds"][0]["moves"] == []
    frames = tmp_path / "frames"
    frames.mkdir()
    (frames / "frame_0000.png").write_text("an earlier replay's frame")
    assert main([str(path), "--out", str(frames), "--force"]) == 2
    assert "no moves" in capsys.readouterr().err
    assert (frames / "frame_0000.png").exists()  # refused before the folder's frames were cleared


def test_frames_are_drawn_only_from_a_whole_valid_record():
    """A bad move late in a record raised a TypeError after 51 frames had been yielded."""
    record = short_match_record()
    record["rounds"][-1]["moves"][-1]["action"] = "x"
    with pytest.raises(records.RecordError):
        record_frames(record)


def test_ctrl_c_exits_130(tmp_path, monkeypatch):
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "write_gif", interrupted)
    assert main([str(path), "--out", str(tmp_path / "g.gif")]) == 130
    # --check too (a pipe may keep it waiting a minute): was a traceback
    monkeypatch.setattr(records, "load", interrupted)
    assert main([str(path), "--check"]) == 130


def test_check_only_checks_the_record_and_says_what_it_holds(tmp_path, capsys):
    """There was no way to check a record without drawing it (455 frames: 10 s, 660 MB), and a
    record without moves could not be checked at all."""
    record = short_match_record()
    path = tmp_path / "game.json"
    records.save(record, path)
    assert main([str(path), "--check"]) == 0
    moves = sum(len(r["moves"]) for r in record["rounds"])
    out = capsys.readouterr().out
    assert out == (f"{path}: a valid sevenrocks-record/1 record: target {record['target']}, "
                   f"{len(record['rounds'])} rounds, {moves} moves, scores "
                   f"{record['scores'][0]}:{record['scores'][1]}, won by team "
                   f"{record['winner']}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json"]  # nothing written
    # cut after its first round: "1 round", not "1 rounds"
    one = played_to_the_end(Match.new(4, max_rounds=1), choose=lambda _, legal: legal[0])
    records.save(records.game_record(one), tmp_path / "one.json")
    assert main([str(tmp_path / "one.json"), "--check"]) == 0
    assert ": target 250, 1 round, " in capsys.readouterr().out
    (tmp_path / "one.json").unlink()
    record["scores"] = [record["scores"][0] + 5, record["scores"][1]]
    path.write_text(json.dumps(record))
    assert main([str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") and err.count("\n") == 1
    assert main([str(path)]) == 2
    assert "--out is required (or --check" in capsys.readouterr().err


@pytest.mark.parametrize("encoding, bad", [
    ("utf-8-sig", b"\xff"), ("utf-16", b"\x00\xdc"),     # a lone low surrogate
    ("utf-32-le", b"\x00\x00\x11\x00")])                  # past U+10FFFF
def test_a_record_in_any_encoding_json_detects_is_read_as_the_web_page_reads_it(
        tmp_path, capsys, encoding, bad):
    """Notepad writes a BOM, PowerShell's ``>`` UTF-16: the web page read such records (as
    ``json.loads(bytes)`` does) where ``replay --check`` refused them; one rule now."""
    from sevenrocks_env.web.api import parse_json
    record = short_match_record()
    path = tmp_path / "game.json"
    path.write_bytes(json.dumps(record).encode(encoding))
    assert records.load(path) == record == parse_json(path.read_bytes())
    assert main([str(path), "--check"]) == 0 and ": a valid" in capsys.readouterr().out
    path.write_bytes(json.dumps(record).encode(encoding) + bad)
    assert main([str(path), "--check"]) == 2
    assert f"{path} is not {'UTF-8' if encoding == 'utf-8-sig' else encoding.upper()} text " \
        "(byte " in capsys.readouterr().err


def test_a_record_file_name_with_control_characters_is_quoted_in_every_message(tmp_path,
                                                                              capsys):
    """A name holding an escape sequence (from an unpacked archive) was printed raw to the
    terminal once the file had opened."""
    path = tmp_path / "evil\x1b]0;pwned\x07.json"
    path.write_text("{")
    assert main([str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and repr(str(path)) in err, err
    records.save(short_match_record(), path)
    assert main([str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.startswith(repr(str(path))), out


@pytest.mark.parametrize("max_rounds, end", [
    (2, "no winner: cut off by its round limit (max_rounds 2)"),
    (None, "no winner: unfinished"),            # the same rounds, no limit: in progress
    (5, "no winner: unfinished"),               # the limit not reached
])
def test_check_says_whether_a_match_was_cut_off(tmp_path, capsys, max_rounds, end):
    match = Match.new(3, max_rounds=2)
    rng = random.Random(3)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    record = records.game_record(match)
    assert match.truncated and len(record["rounds"]) == 2
    record.pop("max_rounds")
    if max_rounds is not None:
        record["max_rounds"] = max_rounds
    path = tmp_path / "game.json"
    records.save(record, path)
    assert main([str(path), "--check"]) == 0
    assert capsys.readouterr().out.endswith(f", {end}\n")


def test_check_shows_negative_scores_unambiguously(tmp_path, capsys):
    """Scores joined by "-" read "5--40" for 5 and -40, and "-15-5" for -15 and 5."""
    match = Match.new(5, max_rounds=2)
    rng = random.Random(5)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    record = records.game_record(match)
    assert min(record["scores"]) < 0
    path = tmp_path / "game.json"
    records.save(record, path)
    assert main([str(path), "--check"]) == 0
    assert f", scores {record['scores'][0]}:{record['scores'][1]}, " in capsys.readouterr().out
