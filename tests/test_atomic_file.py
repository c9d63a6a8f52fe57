"""``sevenrocks_env.atomic_file``: an output never replaces something that is not a file."""

import os
import stat

import pytest

from sevenrocks_env.atomic_file import atomic_path, check_output_file


def test_a_device_or_a_folder_is_never_replaced(tmp_path):
    """As root, ``--out /dev/null`` replaced the system's null device with a plain file."""
    device = tmp_path / "null.gif"
    os.mknod(device, stat.S_IFCHR | 0o644, os.makedev(1, 3))  # another /dev/null (needs root)
    for target in (device, tmp_path):
        with pytest.raises(ValueError, match="not a regular file"):
            with atomic_path(target) as partial:
                partial.write_bytes(b"x")
        with pytest.raises(ValueError, match="not a regular file"):
            check_output_file(target)
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null.gif"]  # no temporary file left


def test_an_output_is_not_an_input_and_its_folder_is_not_a_file(tmp_path):
    source = tmp_path / "in.pt"
    source.write_bytes(b"weights")
    with pytest.raises(ValueError, match="is the input"):
        check_output_file(tmp_path / "." / "in.pt", [tmp_path / "other.pt", source])
    with pytest.raises(ValueError, match="is not a folder"):
        check_output_file(source / "out.pt")
    assert check_output_file(tmp_path / "new" / "out.pt") == tmp_path / "new" / "out.pt"


def test_a_folder_that_takes_no_files_is_refused_before_any_work(tmp_path):
    """``--out /proc/x.pt`` passed (its folder exists) and failed only when written."""
    from sevenrocks_env.atomic_file import OutputError, check_output_folder
    with pytest.raises(OutputError, match="cannot write in /proc") as error:
        check_output_file("/proc/sevenrocks.pt")
    assert str(error.value).startswith("output /proc/sevenrocks.pt: ")
    with pytest.raises(OutputError, match="cannot write in /proc"):
        check_output_folder("/proc/sevenrocks/run")
    assert check_output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []  # checked without making anything


def test_a_symbolic_link_is_written_through_and_a_file_keeps_its_mode(tmp_path):
    """Saving through a link replaced the link with a file (the target was left as it was), and
    a replaced file got the umask's mode instead of its own."""
    target = tmp_path / "real.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with atomic_path(link) as partial:
        partial.write_text("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_a_name_the_file_system_refuses_is_an_output_error_and_a_long_legal_one_is_written(
        tmp_path):
    """A 300-character name made ``exists()`` raise OSError past every caller (a traceback out
    of argparse); a 250-character one, legal, passed the checks and then failed to write: the
    temporary name beside it was 15 characters longer."""
    import argparse

    from sevenrocks_env import arguments
    from sevenrocks_env.atomic_file import OutputError, check_output_folder
    too_long = tmp_path / ("a" * 300 + ".png")
    with pytest.raises(OutputError, match="File name too long"):
        check_output_file(too_long)
    with pytest.raises(OutputError, match="File name too long"):
        check_output_folder(tmp_path / ("b" * 300) / "sub")
    for kind in (arguments.output_file, arguments.output_folder):
        with pytest.raises(argparse.ArgumentTypeError, match="File name too long"):
            kind(str(too_long))
    longest = tmp_path / ("r" * 250 + ".json")  # 255 characters: the most a name may have
    with atomic_path(longest) as partial:
        partial.write_text("kept")
    assert longest.read_text() == "kept" and sorted(tmp_path.iterdir()) == [longest]


def test_a_link_is_replaced_itself_when_links_are_not_followed(tmp_path):
    """``follow_links=False``: the link becomes a new regular file, with the mode ``open()`` gives
    a new file, and what it pointed to is left as it was (a name a program chooses in a folder
    someone else may have filled)."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("theirs")
    os.chmod(target, 0o600)
    link = tmp_path / "frame.png"
    link.symlink_to(target)
    with atomic_path(link, follow_links=False) as partial:
        partial.write_text("ours")
    assert not link.is_symlink() and link.read_text() == "ours"
    assert target.read_text() == "theirs"
    umask = os.umask(0)
    os.umask(umask)
    # a new file: the mode open() gives one, not that of the file the link pointed to
    assert stat.S_IMODE(os.stat(link).st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_a_path_without_a_file_name_is_refused_as_such(tmp_path):
    """``FOLDER/..`` names a folder, not a file to write."""
    with pytest.raises(ValueError, match="give a file name"):
        check_output_file(os.path.join(str(tmp_path), ".."))
