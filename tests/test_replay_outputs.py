"""``sevenrocks replay``'s outputs: a GIF or a folder of PNG frames written only where the user
said -- bad or unwritable outputs refused before anything is drawn, a used folder left with only
this replay's frames, links replaced rather than written through, an existing GIF replaced only
with ``--force``, an interrupted save leaving the old file, never the record itself overwritten
(the frames and the checks: ``test_replay.py``)."""

import os

import pytest
from PIL import Image

from sevenrocks_env import record as records
from sevenrocks_env.render import replay
from sevenrocks_env.render.replay import main, record_frames, write_gif

from test_replay import short_match_record


def test_pngs_of_an_earlier_replay_with_more_digits_are_removed(tmp_path):
    """A replay of 10,000+ frames names them with five digits: a later, shorter replay into the
    folder removes those too (a stale frame_10000.png sorts after the new ones)."""
    folder = tmp_path / "frames"
    folder.mkdir()
    for name in ("frame_00000.png", "frame_10000.png", "frame_0007.png", "frame_7.png"):
        (folder / name).write_text("old")
    frames = [(Image.new("RGB", (2, 2)), None, 0)] * 3
    assert replay.write_pngs(frames, folder, 3) == 3
    assert sorted(p.name for p in folder.iterdir()) == [
        "frame_0000.png", "frame_0001.png", "frame_0002.png", "frame_7.png"]  # not a frame name


def test_bad_outputs_are_refused_before_anything_is_drawn_or_made(tmp_path, capsys,
                                                                  monkeypatch):
    """A GIF in a missing folder or onto a folder, an empty --out, a round the record lacks:
    refused at once (no frame drawn, no folder made); a GIF is written whole or not at all."""
    import sevenrocks_env.render.replay as replay

    record = short_match_record()
    path = tmp_path / "game.json"
    records.save(record, path)

    def no_drawing(*args, **kwargs):
        raise AssertionError("a frame was drawn")
    monkeypatch.setattr(replay, "draw_picture", no_drawing)
    cases = [(["--out", str(tmp_path / "missing" / "x.gif")], "does not exist"),
             (["--out", str(tmp_path / "folder.gif")], "is a folder"),
             (["--out", ""], "--out is empty"),
             (["--out", str(tmp_path / "frames"), "--round", "99"], "the record has rounds 0..")]
    (tmp_path / "folder.gif").mkdir()
    for args, words in cases:
        assert main([str(path), *args]) == 2
        assert words in capsys.readouterr().err
    assert not (tmp_path / "frames").exists() and not (tmp_path / "missing").exists()
    monkeypatch.undo()
    gif = tmp_path / "whole.gif"
    assert main([str(path), "--out", str(gif), "--round", "0", "--scale", "0.2"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.gif", "game.json",
                                                          "whole.gif"]  # no partial file left
    umask = os.umask(0)
    os.umask(umask)
    assert gif.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() makes it, not mkstemp's 0600
    assert main([str(path), "--out", "a" * 300 + ".gif"]) == 2  # an OSError: one line
    assert "File name too long" in capsys.readouterr().err


def test_png_frames_are_numbered_from_zero(tmp_path):
    record = short_match_record()
    path = tmp_path / "game.json"
    records.save(record, path)
    folder = tmp_path / "frames"
    assert main([str(path), "--out", str(folder) + "/", "--round", "0", "--scale", "0.2"]) == 0
    names = sorted(p.name for p in folder.glob("*.png"))
    moves = len(record["rounds"][0]["moves"])
    assert names == [f"frame_{i:04d}.png" for i in range(moves)]


def test_a_replay_into_a_used_folder_leaves_only_its_own_frames(tmp_path):
    """A shorter replay into the folder of a longer one left the older replay's last frames,
    which read as the end of this game."""
    record = short_match_record()
    path = tmp_path / "game.json"
    records.save(record, path)
    folder = tmp_path / "frames"
    assert main([str(path), "--out", str(folder), "--scale", "0.2"]) == 0
    keep = [folder / "frame_12.png", folder / "notes.txt", folder / "frame_0001.png.bak"]
    for other in keep:
        other.write_text("the user's")
    before = sorted(folder.iterdir())
    assert main([str(path), "--out", str(folder), "--round", "0", "--scale", "0.2"]) == 2
    assert sorted(folder.iterdir()) == before  # refused: frames are replaced only when asked
    assert main([str(path), "--out", str(folder), "--round", "0", "--scale", "0.2",
                 "--force"]) == 0
    moves = len(record["rounds"][0]["moves"])
    assert len(record["rounds"]) > 1
    assert sorted(folder.glob("frame_????.png")) == [folder / f"frame_{i:04d}.png"
                                                      for i in range(moves)]
    assert all(other.read_text() == "the user's" for other in keep)


@pytest.mark.parametrize("out", ["/proc/sevenrocks_frames", "/proc/sevenrocks.gif", "FILE/x.gif",
                                 "FILE/frames"])
def test_an_output_that_cannot_be_written_is_refused_before_drawing(tmp_path, capsys, out):
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    (tmp_path / "FILE").write_text("x")
    out = out.replace("FILE", str(tmp_path / "FILE"))
    assert main([str(path), "--out", out]) == 2
    err = capsys.readouterr().err
    assert "cannot write in /proc" in err or "is not a folder" in err, err


def test_an_output_through_a_link_loop_or_with_a_name_too_long_is_one_error_line(tmp_path,
                                                                                capsys):
    """``--out loop/x.gif`` (a link to itself) was a RuntimeError traceback from
    ``Path.resolve``; a GIF name of 246 characters passed every check, then its temporary file's
    name (15 longer) was too long to write."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    os.symlink("loop", tmp_path / "loop")
    assert main([str(path), "--out", str(tmp_path / "loop" / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and err.count("\n") == 1 and "loop" in err, err
    long = tmp_path / ("g" * 246 + ".gif")
    assert main([str(path), "--out", str(long), "--scale", "0.1", "--round", "0"]) == 0
    assert long.is_file() and capsys.readouterr().out.startswith("wrote ")


def test_replay_never_writes_over_its_own_record(tmp_path, capsys):
    path = tmp_path / "game.gif"  # a record may have any name
    records.save(short_match_record(), path)
    before = path.read_bytes()
    assert main([str(path), "--out", str(path)]) == 2
    assert "is the input" in capsys.readouterr().err and path.read_bytes() == before
    # nor as PNG frames: a record in the frames' folder under a frame's name would be replaced
    frames = tmp_path / "frames"
    frames.mkdir()
    inside = frames / "frame_0003.png"
    records.save(short_match_record(), inside)
    before = inside.read_bytes()
    assert main([str(inside), "--out", str(frames), "--round", "0", "--scale", "0.2"]) == 2
    assert "under a frame's name" in capsys.readouterr().err and inside.read_bytes() == before
    # reached through a link of another name: the file itself is what counts
    link = tmp_path / "game.json"
    link.symlink_to(inside)
    assert main([str(link), "--out", str(frames), "--round", "0", "--scale", "0.2"]) == 2
    assert "under a frame's name" in capsys.readouterr().err and inside.read_bytes() == before


def test_a_frame_name_that_is_a_symbolic_link_is_replaced_not_written_through(tmp_path):
    """A folder someone sent could hold frame_0000.png -> ../anything: the frame replaced the
    file the link pointed at (docs/security.md: no other file is touched)."""
    record = tmp_path / "game.json"
    records.save(short_match_record(), record)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    frames = tmp_path / "frames"
    frames.mkdir()
    (frames / "frame_0000.png").symlink_to(victim)
    assert main([str(record), "--out", str(frames), "--round", "0", "--scale", "0.2",
                 "--force"]) == 0
    assert victim.read_text() == "mine"
    assert not (frames / "frame_0000.png").is_symlink()
    assert (frames / "frame_0000.png").read_bytes()[:4] == b"\x89PNG"


def test_a_name_that_is_only_dot_gif_is_a_gif(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records.save(short_match_record(), tmp_path / "game.json")
    assert main(["game.json", "--out", ".gif", "--round", "0", "--scale", "0.2"]) == 0
    assert (tmp_path / ".gif").is_file()  # was: a hidden folder of PNG frames


def test_frame_names_sort_in_order_past_ten_thousand_frames(tmp_path):
    from PIL import Image
    from sevenrocks_env.render.replay import write_pngs
    image = Image.new("RGB", (2, 2))
    (tmp_path / "frame_0003.png").write_text("older")
    assert write_pngs(((image, None, 0) for _ in range(3)), tmp_path, total=10_001) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "frame_00000.png", "frame_00001.png", "frame_00002.png"]


def test_an_interrupted_gif_save_leaves_the_old_file_and_no_partial_one(tmp_path):
    """write_gif writes beside the target and renames: an interrupted save leaves no partial GIF."""
    record = short_match_record()

    def frames():
        for index, frame in enumerate(record_frames(record, round_index=0, scale=0.2)):
            if index == 3:
                raise KeyboardInterrupt
            yield frame

    path = tmp_path / "g.gif"
    path.write_bytes(b"the old gif")
    with pytest.raises(KeyboardInterrupt):
        write_gif(frames(), path, fps=2)
    assert path.read_bytes() == b"the old gif"
    assert sorted(tmp_path.iterdir()) == [path]


def test_an_existing_gif_is_replaced_only_with_force(tmp_path, capsys):
    """An existing GIF was replaced without a word (and the frames of a folder: the test
    above), where `sevenrocks play` never replaces a file."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    gif = tmp_path / "game.gif"
    gif.write_text("the user's")
    args = [str(path), "--out", str(gif), "--round", "0", "--scale", "0.2"]
    assert main(args) == 2
    assert "exists; --force replaces it" in capsys.readouterr().err
    assert gif.read_text() == "the user's"
    assert main([*args, "--force"]) == 0 and gif.read_bytes()[:3] == b"GIF"


def test_a_name_ending_in_dot_gif_and_a_slash_is_a_folder_of_frames(tmp_path):
    """``--out fr.gif/`` wrote one GIF file named fr.gif (the slash was ignored)."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    folder = tmp_path / "fr.gif"
    assert main([str(path), "--out", f"{folder}/", "--round", "0", "--scale", "0.2"]) == 0
    assert folder.is_dir() and (folder / "frame_0000.png").is_file()


def test_a_dangling_link_as_out_names_the_folder_it_points_into(tmp_path, capsys):
    """The message named the link's own folder (which exists), not the missing one."""
    path = tmp_path / "game.json"
    records.save(short_match_record(), path)
    link = tmp_path / "link.gif"
    link.symlink_to(tmp_path / "gone" / "x.gif")
    assert main([str(path), "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert f"is a link to {tmp_path / 'gone' / 'x.gif'}, whose folder {tmp_path / 'gone'} " \
           "does not exist" in err, err


def test_a_round_without_moves_is_named_and_the_output_line_quotes_odd_names(tmp_path, capsys):
    record = short_match_record()
    deal_only = dict(record, rounds=[dict(record["rounds"][0], moves=[], result=None,
                                          deductions=[0, 0, 0, 0], scores=[0, 0])],
                     winner=None, scores=[0, 0])
    path = tmp_path / "deal.json"
    path.write_text(__import__("json").dumps(deal_only))
    assert main([str(path), "--out", str(tmp_path / "f"), "--round", "0"]) == 2
    assert "no moves to show: round 0 has none yet" in capsys.readouterr().err
    records.save(record, tmp_path / "game.json")
    odd = tmp_path / "\x1b[31mo.gif"
    assert main([str(tmp_path / "game.json"), "--out", str(odd), "--scale", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "wrote " in out
