"""The labels file of ``training.distill`` (``training/distill_labels.py``): what a collection
saves reads back exactly (match ids and seed too), a save that fails half way leaves the previous
one whole, and a file from elsewhere is checked before it sizes any work -- shapes and dtypes
from the headers, stored sizes, finite bounded values, legal labels, match ids, seed, teacher --
with a :class:`LabelsError` naming what is wrong.  Several files together:
``test_distill_labels_several.py``."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from training import distill, distill_labels  # noqa: E402


def test_labels_file_round_trip_and_its_checks(tmp_path, collected):
    path = distill.save_labels(tmp_path / "l.npz", collected, "search:samples=4")
    labels, teacher = distill_labels.load_labels(path)
    assert teacher == "search:samples=4"
    for key in ("observation", "action_mask", "action", "values"):
        np.testing.assert_array_equal(labels[key], collected[key])

    def broken(name, **change):
        data = {**collected, **change}
        target = tmp_path / name
        np.savez(target, observation=data["observation"], action_mask=data["action_mask"],
                 action=data["action"], teacher=np.array("t"))
        return target

    illegal = collected["action"].copy()
    illegal[5] = int(np.flatnonzero(~collected["action_mask"][5])[0])
    with pytest.raises(distill.LabelsError, match="label 5 .* not legal"):
        distill_labels.load_labels(broken("illegal.npz", action=illegal))
    with pytest.raises(distill.LabelsError, match="observation"):
        distill_labels.load_labels(broken("shape.npz", observation=collected["observation"][:, :10]))
    for row, column, value in ((0, 0, np.nan), (7, 3, -1e6), (9, 237, 3e38), (2, 100, 1.5)):
        odd = collected["observation"].copy()
        odd[row, column] = value  # not finite, or outside every observation space of the game
        with pytest.raises(distill.LabelsError, match=f"observation {row} is not one the game"):
            distill_labels.load_labels(broken("odd.npz", observation=odd))
    with pytest.raises(distill.LabelsError, match="0..112"):
        distill_labels.load_labels(broken("range.npz", action=collected["action"] + 200))
    for name, values in (("values_nan", np.where(collected["action_mask"], np.nan, 0)),
                         ("values_huge", collected["values"] + 1e9),
                         ("values_shape", collected["values"][:, :5])):
        target = tmp_path / f"{name}.npz"
        np.savez(target, observation=collected["observation"],
                 action_mask=collected["action_mask"], action=collected["action"],
                 values=values.astype(np.float32), teacher=np.array("t"))
        with pytest.raises(distill.LabelsError, match="'values' (must be float32|declares "
                                                     r"float32 \(60, 5\): not float32)"):
            distill_labels.load_labels(target)
    # the label must be the best of its row's values (ties allowed), and an illegal action's
    # value 0: labels of one teacher beside the values of another are refused
    rows = np.flatnonzero(collected["action_mask"].sum(axis=1) > 1)
    assert len(rows) > 1
    for name, row, change in (("worse", rows[0], "lower"), ("tie", rows[1], "tie"),
                              ("illegal_value", rows[1], "illegal")):
        values = collected["values"].copy()
        legal = np.flatnonzero(collected["action_mask"][row])
        chosen = collected["action"][row]
        other = legal[legal != chosen][0]
        if change == "lower":
            values[row, chosen] = values[row, legal].min() - 1
        elif change == "tie":
            values[row, other] = values[row, chosen]
        else:
            values[row, np.flatnonzero(~collected["action_mask"][row])[0]] = 1.0
        target = tmp_path / f"{name}.npz"
        np.savez(target, observation=collected["observation"],
                 action_mask=collected["action_mask"], action=collected["action"],
                 values=values, teacher=np.array("t"))
        if change == "tie":
            distill_labels.load_labels(target)   # a tie is what a collection may write
        else:
            with pytest.raises(distill.LabelsError, match=f"label {row} .* not the teacher's best"):
                distill_labels.load_labels(target)
    objects = tmp_path / "pickle.npz"
    np.savez(objects, observation=np.array([object()], dtype=object), action_mask=np.zeros(1),
             action=np.zeros(1), teacher=np.array("t"))
    with pytest.raises(distill.LabelsError, match="'observation' declares object"):
        distill_labels.load_labels(objects)
    # the exact dtype from the header (a float64 observation would be read whole first), and a
    # 0-d action array (its len() is a TypeError) are refused in words
    for name, changes, words in (
            ("f64", {"observation": collected["observation"].astype(np.float64)},
             "'observation' declares float64 .* not float32 of shape \\(N, 238\\)"),
            ("action0d", {"action": np.array(3)}, "'action' declares int64 \\(\\)")):
        target = tmp_path / f"{name}.npz"
        np.savez(target, **{**{k: collected[k] for k in ("observation", "action_mask",
                                                          "action")},
                            "teacher": np.array("t"), **changes})
        with pytest.raises(distill.LabelsError, match=words):
            distill_labels.load_labels(target)
    # a header may declare any shape: np.load would allocate it (866 TiB here) before checks
    huge = tmp_path / "huge.npz"
    np.savez(huge, observation=np.zeros((1, 238), np.float32), action=np.zeros(1, np.int64),
             action_mask=np.ones((1, 113), bool), teacher=np.array("t"))
    with zipfile.ZipFile(huge) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = members["observation.npy"]
    bigger = b"(1000000000000, 238)"  # the same header length: taken from its space padding
    grown = header.replace(b"(1, 238)", bigger, 1).replace(b" " * (len(bigger) - 8) + b"\n", b"\n", 1)
    assert len(grown) == len(header) and grown != header
    members["observation.npy"] = grown
    with zipfile.ZipFile(huge, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(distill.LabelsError,
                       match="'observation' declares .* with N in 1..2000000"):
        distill_labels.load_labels(huge)
    # np.load reads a member named "observation" before "observation.npy": the checked
    # header would not be the array loaded; a member whose size is not its header's array
    # (a deflated member inflates to what its zip entry declares) is refused too
    plain = tmp_path / "plain.npz"
    distill.save_labels(plain, collected, "t")
    with zipfile.ZipFile(plain) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    for name, extra, words in (
            ("shadow", {"observation": b"junk"}, "it holds 'observation'"),
            ("grown", {"action.npy": members["action.npy"] + b"\0" * 10**6},
             "'action' stores 1,000,"),
            ("twice", {"action.npy": members["action.npy"]}, "a name given twice")):
        target = tmp_path / f"{name}.npz"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for member, data in {**members, **extra}.items():
                archive.writestr(member, data)
            if name == "twice":
                with pytest.warns(UserWarning, match="Duplicate name"):
                    archive.writestr("action.npy", extra["action.npy"])
        with pytest.raises(distill.LabelsError, match=words):
            distill_labels.load_labels(target)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(distill.LabelsError, match="not a labels file"):
        distill_labels.load_labels(tmp_path / "junk.npz")
    # a header declared 50 MB long (spaces: a few kB compressed) is refused before it is read
    # (NumPy reads the whole declared header, up to 4 GB, before its own limit)
    bomb = tmp_path / "bomb.npz"
    length = 50_000_000
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("action.npy", b"\x93NUMPY\x02\x00" + length.to_bytes(4, "little")
                         + b" " * length)
    with pytest.raises(distill.LabelsError,
                       match="'action' declares a .npy header of 50,000,000 bytes"):
        distill_labels.load_labels(bomb)


def test_a_damaged_labels_file_is_a_labels_error(tmp_path, collected):
    """Any byte of a saved file flipped: it loads (checked) or is a LabelsError -- never a
    zlib, CRC or header-parsing error from inside numpy."""
    good = distill.save_labels(tmp_path / "good.npz", collected, "search:samples=4").read_bytes()
    refused = 0
    for offset in range(0, len(good), max(1, len(good) // 150)):
        damaged = bytearray(good)
        damaged[offset] ^= 0xFF
        (tmp_path / "damaged.npz").write_bytes(bytes(damaged))
        try:
            distill_labels.load_labels(tmp_path / "damaged.npz")
        except distill.LabelsError:
            refused += 1
    assert refused > 100


@pytest.mark.parametrize("teacher", ["search:samples=4\n\x1b[31mred", "a | b", "", "x" * 4097])
def test_a_teacher_that_cannot_be_printed_or_carded_is_refused(tmp_path, collected, teacher):
    path = distill.save_labels(tmp_path / "t.npz", collected, teacher)
    with pytest.raises(distill.LabelsError, match="'teacher' (must be a spec: one line|declares)"):
        distill_labels.load_labels(path)


def test_cli_reports_a_bad_labels_file_in_one_line(tmp_path, capsys):
    (tmp_path / "bad.npz").write_bytes(b"junk")
    with pytest.raises(SystemExit) as exit_info:
        distill.main(["--labels", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "o.pt")])
    assert exit_info.value.code == 2
    assert "not a labels file" in capsys.readouterr().err


def test_match_ids_round_trip_and_bad_ones_are_refused(tmp_path, collected):
    path = distill.save_labels(tmp_path / "m.npz", collected, "t")
    np.testing.assert_array_equal(distill_labels.load_labels(path)[0]["match"], collected["match"])
    n = len(collected["action"])
    for name, bad in (("negative", np.full(n, -1)), ("short", np.zeros(n - 1, np.int64)),
                      ("float", np.zeros(n)), ("huge", np.full(n, 1 << 62))):
        target = tmp_path / f"{name}.npz"
        np.savez(target, **{k: collected[k] for k in ("observation", "action_mask", "action")},
                 match=bad, teacher=np.array("t"))
        with pytest.raises(distill.LabelsError, match="'match'"):
            distill_labels.load_labels(target)


def test_a_save_that_fails_half_way_leaves_the_previous_save_whole(tmp_path, monkeypatch,
                                                                   collected):
    first = {key: value[:40] for key, value in collected.items()}
    path = distill.save_labels(tmp_path / "run.labels.npz", first, "search:samples=4")
    before = path.read_bytes()

    def half_written(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", half_written)
    with pytest.raises(KeyboardInterrupt):
        distill.save_labels(path, collected, "search:samples=4")
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]
    monkeypatch.undo()
    assert len(distill_labels.load_labels(path)[0]["action"]) == 40


def test_observations_are_checked_block_by_block_and_the_first_bad_row_is_named(collected):
    obs = collected["observation"].copy()
    assert distill_labels._first_outside_the_game(obs, rows=7) is None
    obs[[15, 40], 5] = -1.0
    assert distill_labels._first_outside_the_game(obs, rows=7) == 15
    assert distill_labels._first_outside_the_game(obs[16:], rows=7) == 40 - 16


def test_a_device_or_a_folder_is_not_read_as_labels(tmp_path):
    """/dev/zero was read by zipfile to the end of memory (the process was killed)."""
    for path in ("/dev/zero", str(tmp_path)):
        with pytest.raises(distill.LabelsError, match="not a regular file"):
            distill.load_labels_files(path)
    with pytest.raises(distill.LabelsError, match="cannot read"):
        distill.load_labels_files(str(tmp_path / "missing.npz"))


def test_a_collection_s_seed_is_recorded_checked_and_optional(tmp_path, collected):
    path = distill.save_labels(tmp_path / "s.npz", collected, "t", seed=2 ** 63 - 1)
    assert distill_labels.load_labels(path)[0]["seed"] == 2 ** 63 - 1
    older = distill.save_labels(tmp_path / "older.npz", collected, "t")  # from before seeds
    assert distill_labels.load_labels(older)[0]["seed"] is None
    with pytest.raises(ValueError, match="seed is in 0..2"):
        distill.save_labels(tmp_path / "never.npz", collected, "t", seed=-1)
    arrays = {key: collected[key] for key in ("observation", "action_mask", "action", "match")}
    for name, seed, words in (
            ("negative", np.array(-1), "'seed' must be one integer"),
            ("huge", np.array(2 ** 64 - 1, np.uint64), "'seed' must be one integer"),
            ("float", np.array(1.5), "'seed' declares float64 \\(\\): not one integer"),
            ("vector", np.arange(3), "'seed' declares int64 \\(3,\\): not one integer"),
            ("text", np.array("7"), "'seed' declares <U1")):
        target = tmp_path / f"{name}.npz"
        np.savez(target, **arrays, seed=seed, teacher=np.array("t"))
        with pytest.raises(distill.LabelsError, match=words):
            distill_labels.load_labels(target)


def test_a_teacher_text_declared_megabytes_long_is_refused_before_the_file_is_read(
        tmp_path, collected, monkeypatch):
    """A ``teacher.npy`` of 4 M characters is 16 MB, a few kB compressed: its header is refused
    before np.load allocates it (the spec check after loading would come too late)."""
    path = tmp_path / "long_teacher.npz"
    np.savez_compressed(path, **{k: collected[k] for k in ("observation", "action_mask",
                                                           "action")},
                        teacher=np.array("t", dtype=f"<U{4_000_000}"))
    assert path.stat().st_size < 1_000_000

    def loaded(*args, **kwargs):
        raise AssertionError("np.load was reached")
    monkeypatch.setattr(distill_labels.np, "load", loaded)
    with pytest.raises(distill.LabelsError,
                       match=r"'teacher' declares <U4000000 \(\): not a text of at most 4096"):
        distill_labels.load_labels(path)


def test_an_npy_before_a_labels_zip_is_refused_before_np_load(tmp_path, collected, monkeypatch):
    """zipfile finds an archive from the file's end (bytes before it skipped); np.load picks
    its reader from the first bytes: an ``.npy`` declaring 10**12 floats put before a good
    labels zip passed every header check, and np.load read the ``.npy`` (a 7 TiB MemoryError
    traceback in the CLI, or any array whose header was never checked)."""
    good = distill.save_labels(tmp_path / "good.npz", collected, "t").read_bytes()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10 ** 12,)})
    path = tmp_path / "prefixed.npz"
    path.write_bytes(header.getvalue() + good)

    def loaded(*args, **kwargs):
        raise AssertionError("np.load was reached")
    monkeypatch.setattr(distill_labels.np, "load", loaded)
    with pytest.raises(distill.LabelsError, match="does not start with a zip entry"):
        distill_labels.load_labels(path)
