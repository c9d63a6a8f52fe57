"""``sevenrocks replay`` (``sevenrocks_env.render.replay``): properties a mutation audit found
unpinned (each test here failed on one small change to the module)."""

from __future__ import annotations

import pytest
from PIL import ImageChops

from sevenrocks_env import record as records
from sevenrocks_env.render import replay

from test_replay import short_match_record


def test_a_player_s_view_is_not_the_spectator_s():
    """``spectator=False`` draws what the seat on turn sees (the others' hands face down), so
    its first frame differs from the spectator's, which shows every hand."""
    record = short_match_record()
    seen = next(replay.record_frames(record, round_index=0, scale=0.25))[0]
    hidden = next(replay.record_frames(record, round_index=0, spectator=False, scale=0.25))[0]
    assert ImageChops.difference(seen.convert("RGB"), hidden.convert("RGB")).getbbox()


def test_one_round_s_frames_stop_replaying_at_the_next_round(monkeypatch):
    """``--round N`` replays the record up to round N's end, not the rest of a long match."""
    record = short_match_record()
    assert len(record["rounds"]) > 2
    calls, original = [], records.replay

    def counted(rec):
        calls.append([])  # (validating the record replays it too, whole)
        for step in original(rec):
            calls[-1].append(step[2])
            yield step

    monkeypatch.setattr(replay.records, "replay", counted)
    frames = list(replay.record_frames(record, round_index=0, scale=0.1))
    assert len(frames) == len(record["rounds"][0]["moves"])
    read = calls[-1]
    assert max(read) == 1 and read.count(1) == 1  # round 1's start seen, nothing after it


def test_a_scaled_frame_is_rounded_to_the_size_the_cli_plans_for():
    """A frame scaled by 0.37 is 1280 * 0.37 = 473.6 -> 474 pixels wide, as ``main`` reckons
    when it sizes a GIF before drawing (not cut down to 473)."""
    record = short_match_record()
    image = next(replay.record_frames(record, round_index=0, scale=0.37))[0]
    assert image.size == tuple(max(1, round(side * 0.37)) for side in replay.SIZE)
    assert image.size[0] == 474


def _frames(count, r=0):
    record = short_match_record()
    frames = replay.record_frames(record, round_index=0, scale=0.1)
    return [(image, move, r) for (image, move, _), _ in zip(frames, range(count))]


def test_a_gif_frame_lasts_20_ms_at_least(tmp_path):
    """GIF players show frames of under 20 ms slowly or not at all: at 100 fps asked of
    ``write_gif`` itself (the CLI allows 50 at most), each frame still lasts 20 ms."""
    from PIL import Image
    path = tmp_path / "fast.gif"
    assert replay.write_gif(_frames(3), path, fps=100) == 3
    with Image.open(path) as gif:
        gif.seek(0)
        assert gif.info["duration"] == 20
        assert gif.info["loop"] == 0  # and it plays over and over


def test_no_frames_write_no_gif(tmp_path):
    path = tmp_path / "none.gif"
    assert replay.write_gif(iter([]), path, fps=2) == 0
    assert not path.exists() and not list(tmp_path.iterdir())


def test_ten_thousand_frames_are_numbered_with_four_digits(tmp_path):
    """Frames 0..9999 fit in four digits: a replay of exactly 10,000 frames names its first
    one frame_0000.png (more digits only from frame 10,000 on)."""
    assert replay.write_pngs(_frames(1), tmp_path, total=10_000) == 1
    assert [path.name for path in tmp_path.iterdir()] == ["frame_0000.png"]
    assert replay.write_pngs(_frames(1), tmp_path / "more", total=10_001) == 1
    assert [path.name for path in (tmp_path / "more").iterdir()] == ["frame_00000.png"]


def test_a_file_named_like_a_frame_but_not_numbered_is_left_alone(tmp_path):
    """``frame_abcd.png``, ``frame_123.png`` (not four digits) or ``frame_0002.txt`` is no
    frame of a replay: a replay into the folder neither removes it nor fails on it."""
    for name in ("frame_abcd.png", "frame_123.png", "frame_0001.png.txt", "frame_0002.txt"):
        assert replay.frame_number(name) is None
        (tmp_path / name).write_bytes(b"mine")
    assert replay.frame_number("frame_0012.png") == 12
    assert replay.write_pngs(_frames(2), tmp_path, total=2) == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "frame_0000.png", "frame_0001.png", "frame_0001.png.txt", "frame_0002.txt",
        "frame_123.png", "frame_abcd.png"]


def test_an_existing_folder_with_a_suffix_takes_png_frames(tmp_path, capsys):
    """``--out frames.v1`` names a folder when one of that name exists (with no slash at the
    end): the frames go there, rather than the name being refused for its suffix."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    folder = tmp_path / "frames.v1"
    folder.mkdir()
    assert replay.main([str(path), "--out", str(folder), "--round", "0", "--scale", "0.1"]) == 0
    assert (folder / "frame_0000.png").is_file()
    assert replay.main([str(path), "--out", str(tmp_path / "new.v1"), "--round", "0"]) == 2
    assert "--out must end in .gif or name a folder" in capsys.readouterr().err


def test_a_dangling_link_in_place_of_the_gif_is_replaced_only_with_force(tmp_path, capsys):
    """A link at ``--out`` pointing nowhere is still a name taken: refused without --force."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    gif = tmp_path / "game.gif"
    gif.symlink_to(tmp_path / "nowhere.gif")
    assert replay.main([str(path), "--out", str(gif), "--round", "0", "--scale", "0.1"]) == 2
    assert "exists; --force replaces it" in capsys.readouterr().err
    assert gif.is_symlink() and not (tmp_path / "nowhere.gif").exists()


def test_a_folder_holding_only_files_named_like_frames_is_not_refused(tmp_path, capsys):
    """Without --force a folder holding frames is refused, but ``frame_abcd.png`` is no frame
    (:func:`replay.frame_number`): the replay goes ahead and leaves it there."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    folder = tmp_path / "frames"
    folder.mkdir()
    (folder / "frame_abcd.png").write_bytes(b"mine")
    assert replay.main([str(path), "--out", str(folder), "--round", "0", "--scale", "0.1"]) == 0
    assert (folder / "frame_abcd.png").read_bytes() == b"mine"


@pytest.mark.parametrize("option, value, allowed", [
    ("--fps", "50", True), ("--fps", "0.1", True), ("--fps", "50.01", False),
    ("--fps", "0.099", False), ("--scale", "4", True), ("--scale", "0.1", True),
    ("--scale", "4.01", False), ("--scale", "0.099", False), ("--scale", "0.05", False),
])
def test_fps_and_scale_bounds_are_inclusive(tmp_path, capsys, option, value, allowed):
    """The ends of --fps [0.1, 50] and --scale [0.1, 4] are allowed: such a replay goes on to
    the next check (here: too many frames for --max-frames 1, so nothing is drawn)."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    out = tmp_path / "frames"  # (PNGs: a GIF of 4x frames would be too large first)
    assert replay.main([str(path), "--out", str(out), option, value, "--max-frames", "1"]) == 2
    err = capsys.readouterr().err
    assert ("more than --max-frames 1" in err) is allowed, err
    assert (f"{option} must be between" in err) is not allowed, err
    assert not out.exists()


def test_a_gif_name_in_capitals_is_a_gif(tmp_path):
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    out = tmp_path / "GAME.GIF"
    assert replay.main([str(path), "--out", str(out), "--round", "0", "--scale", "0.1"]) == 0
    assert out.is_file() and out.read_bytes()[:6] == b"GIF89a"


def test_the_gif_memory_bound_counts_the_scaled_frames(tmp_path, capsys, monkeypatch):
    """A GIF is bounded by the pixels of its frames as drawn: at --scale 0.5 four times as many
    frames fit as at full size (checked before drawing; --max-frames 1 stops it next)."""
    path = tmp_path / "game.json"
    record = short_match_record()
    records.save(record, path)
    frames = len(record["rounds"][0]["moves"])
    monkeypatch.setattr(replay, "MAX_GIF_PIXELS", frames * 640 * 430)  # all of them, at 0.5
    args = [str(path), "--out", str(tmp_path / "g.gif"), "--round", "0", "--max-frames", "1"]
    assert replay.main(args + ["--scale", "0.5"]) == 2
    assert "more than --max-frames 1" in capsys.readouterr().err
    assert replay.main(args + ["--scale", "0.51"]) == 2
    assert "too many for one GIF" in capsys.readouterr().err


def test_scale_shrinks_the_frames_written(tmp_path):
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    folder = tmp_path / "frames"
    assert replay.main([str(path), "--out", str(folder), "--round", "0", "--scale", "0.1"]) == 0
    from PIL import Image
    with Image.open(folder / "frame_0000.png") as frame:
        assert frame.size == (128, 86)


def test_bad_arguments_exit_2_and_help_exits_0(capsys):
    assert replay.main(["game.json", "--fps"]) == 2
    assert replay.main(["--help"]) == 0
    capsys.readouterr()


def test_a_failure_to_check_or_write_the_output_is_one_error_line(tmp_path, capsys,
                                                                  monkeypatch):
    """Any OSError (not only a missing file) checking ``--out`` or writing the frames is an
    error line and exit 2, never a traceback."""
    import errno
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    args = [str(path), "--out", str(tmp_path / "frames"), "--round", "0", "--scale", "0.1"]

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(replay, "write_pngs", full)
    assert replay.main(args) == 2
    assert "cannot write" in capsys.readouterr().err
    monkeypatch.setattr(replay, "_out_problem", lambda *_: full())
    assert replay.main(args) == 2
    assert "No space left on device" in capsys.readouterr().err


def test_a_record_under_a_frame_s_name_is_kept_with_a_relative_out(tmp_path, capsys,
                                                                    monkeypatch):
    """``--out frames --force`` (relative) with the record at frames/frame_0000.png: the
    frames would replace the record, so the replay is refused, as with an absolute path."""
    folder = tmp_path / "frames"
    folder.mkdir()
    records.save(short_match_record(), folder / "frame_0000.png")
    before = (folder / "frame_0000.png").read_bytes()
    monkeypatch.chdir(tmp_path)
    assert replay.main(["frames/frame_0000.png", "--out", "frames", "--force"]) == 2
    assert "under a frame's name" in capsys.readouterr().err
    assert (folder / "frame_0000.png").read_bytes() == before


def test_a_replay_stopped_part_way_leaves_no_frame_of_the_folder_s_earlier_replay(tmp_path):
    """The old frames were removed only after the last new one: Ctrl-C (or a full disk)
    left this record's first frames followed by another record's, numbered as one replay."""
    assert replay.write_pngs(_frames(5), tmp_path, total=5) == 5

    def stopped():
        yield from _frames(2)
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        replay.write_pngs(stopped(), tmp_path, total=9)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["frame_0000.png",
                                                               "frame_0001.png"]


def test_a_folder_named_like_a_frame_stops_the_replay_before_anything_is_removed(tmp_path):
    assert replay.write_pngs(_frames(2), tmp_path, total=2) == 2
    (tmp_path / "frame_0050.png").mkdir()
    with pytest.raises(ValueError, match="frame_0050.png is a folder, not a frame"):
        replay.write_pngs(_frames(1), tmp_path, total=1)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "frame_0000.png", "frame_0001.png", "frame_0050.png"]


def test_a_frame_name_of_other_scripts_digits_is_no_frame():
    """``str.isdigit`` takes ``²`` and ``٣``; ``int`` does not: the check of the output folder
    crashed with a traceback."""
    for name in ("frame_\u00b2\u00b2\u00b2\u00b2.png", "frame_\u0663\u0663\u0663\u0663.png"):
        assert replay.frame_number(name) is None
