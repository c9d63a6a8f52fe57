"""Tests from a mutation audit of the labels files (``training/distill_labels.py``,
``training/labels_zip.py``): each pins a check that a mutant weakened without a test failing,
mostly the header-level refusals (before ``np.load`` allocates what a header declares), whose
messages name the array and what it declares, and the checks between files."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

pytest.importorskip("torch")

from training import distill_labels  # noqa: E402
from training.distill_labels import NUM_ACTIONS, LabelsError  # noqa: E402
from test_distill_labels_join import random_labels  # noqa: E402


def arrays(n: int = 4, seed: int = 0) -> dict:
    """``n`` labels the checks accept (:func:`random_labels`), two matches."""
    return {**random_labels(n, seed)[0], "match": np.arange(n) % 2, "teacher": np.array("t")}


def npy(array: np.ndarray, shape=None, data: bytes | None = None) -> bytes:
    """``array`` as a version 1.0 ``.npy``, its header declaring ``shape`` (default: its own)
    and its data ``data`` (default: its own bytes)."""
    header = repr({"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
                   "shape": array.shape if shape is None else shape})
    header = header.ljust(63 - 10) + "\n"
    return (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
            + (array.tobytes() if data is None else data))


def write(path, members: dict) -> str:
    """A zip of ``{name.npy: bytes or array}`` (arrays as their own ``.npy``), deflated."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, member in members.items():
            archive.writestr(f"{key}.npy", member if isinstance(member, bytes) else npy(member))
    return str(path)


def test_the_arrays_here_load(tmp_path):
    labels, teacher = distill_labels.load_labels(write(tmp_path / "ok.npz", arrays()))
    assert teacher == "t" and labels["action"].tolist() == arrays()["action"].tolist()


@pytest.mark.parametrize("key", ["observation", "action_mask", "action", "teacher"])
def test_each_array_a_labels_file_needs_is_named_when_absent(tmp_path, key):
    members = arrays()
    del members[key]
    with pytest.raises(LabelsError, match=f"not a labels file \\(it has no '{key}'\\)"):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))


@pytest.mark.parametrize("teacher, words", [
    (np.array("x" * 4097), "'teacher' declares <U4097 \\(\\): not a text of at most 4096"),
    (np.array(["t"]), "'teacher' declares <U1 \\(1,\\): not a text"),
])
def test_a_teacher_not_one_text_of_4096_characters_is_refused_from_its_header(
        tmp_path, teacher, words):
    """One character past the bound, or one text in an array: refused by the header, before
    the text is read."""
    with pytest.raises(LabelsError, match=words):
        distill_labels.load_labels(write(tmp_path / "l.npz", arrays() | {"teacher": teacher}))
    distill_labels.load_labels(write(tmp_path / "ok.npz", arrays() | {
        "teacher": np.array("x" * 4096)}))


def test_a_file_of_no_labels_is_refused_from_its_headers(tmp_path):
    empty = {key: value[:0] if value.ndim else value for key, value in arrays().items()}
    with pytest.raises(LabelsError, match=r"'observation' declares float32 \(0, 238\): not "
                                          r"float32 of shape \(N, 238\) with N in 1..2000000"):
        distill_labels.load_labels(write(tmp_path / "l.npz", empty))


def test_one_label_past_the_bound_is_refused_from_its_header(tmp_path):
    """A header declaring 2,000,001 labels (its data one label: np.load would allocate the
    declared array first) is refused for its count, not only for its stored size."""
    members = arrays(1) | {"action": npy(np.zeros(1, np.int64), shape=(2_000_001,))}
    with pytest.raises(LabelsError, match=r"'action' declares int64 \(2000001,\): not integers "
                                          r"of shape \(N\) with N in 1..2000000"):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))


@pytest.mark.parametrize("cut", [1, 8])
def test_a_member_shorter_than_its_header_s_array_is_refused_before_np_load(tmp_path, cut):
    action = arrays()["action"].astype(np.int64)
    members = arrays() | {"action": npy(action, data=action.tobytes()[:-cut])}
    with pytest.raises(LabelsError, match=r"'action' stores .* bytes, not the \(4,\) int64 "
                                          "array its header declares"):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))


@pytest.mark.parametrize("key, dtype", [
    ("action_mask", np.uint8), ("action_mask", np.int8), ("values", np.int32),
    ("values", np.int64), ("match", np.float64), ("action", np.float64),
    ("observation", np.float64),
    # float64 values were read whole (2 GB for 1 M labels) before load_labels refused them
    ("values", np.float64), ("values", np.float16)])
def test_each_array_s_dtype_is_refused_from_its_header_in_words(tmp_path, key, dtype):
    members = arrays()
    members[key] = members[key].astype(dtype)
    with pytest.raises(LabelsError, match=f"'{key}' declares {np.dtype(dtype)} "):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))


def test_observations_of_a_match_to_1_point_or_to_the_largest_target_are_the_game_s(tmp_path):
    """The observation bounds are the union over every target: a match to 1 point has the
    widest score columns (a deduction of every round, 35 points past the target), a match to
    the largest target the largest target column."""
    from sevenrocks_env.env import observation_bounds
    from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET
    members = arrays()
    corners = [bound for target in (1, MAX_TARGET)
               for bound in observation_bounds(target, MAX_ROUNDS)]
    members["observation"] = np.stack(corners).astype(np.float32)
    labels, _ = distill_labels.load_labels(write(tmp_path / "l.npz", members))
    assert np.array_equal(labels["observation"], members["observation"])
    members["observation"][2, 0] = 1.5  # (a flag of the hand: 0 or 1)
    with pytest.raises(LabelsError, match="observation 2 is not one the game gives"):
        distill_labels.load_labels(write(tmp_path / "odd.npz", members))


def test_the_first_label_not_the_best_is_named_by_its_row_in_the_file_not_in_its_block():
    """Checked a block of rows at a time: the row named is the file's (row 9 in the third
    block of 4), as the observations' check names it."""
    labels = arrays(12)
    values, mask, action = labels["values"], labels["action_mask"], labels["action"]
    assert distill_labels._first_label_not_the_best(values, mask, action, rows=4) is None
    values[9, action[9]] = -20  # below every other legal value
    mask[9, (action[9] + 1) % NUM_ACTIONS] = True
    values[9, (action[9] + 1) % NUM_ACTIONS] = 0
    assert distill_labels._first_label_not_the_best(values, mask, action, rows=4) == 9


@pytest.mark.parametrize("key, words", [
    ("observation", r"'observation' must be float32 of shape \(4, 238\)"),
    ("action_mask", r"'action_mask' must be bool of shape \(4, 113\)"),
    ("values", r"'values' must be float32 of shape \(4, 113\)"),
    ("match", "'match' must be 4 integers")])
def test_an_array_of_another_label_count_than_action_s_is_refused(tmp_path, key, words):
    """Each header may declare any count within bounds: once read, each array must hold as
    many labels as 'action' (one more row here)."""
    members = arrays()
    members[key] = np.concatenate([members[key], members[key][:1]])
    if key != "values":  # (the values' own check would name a changed row first)
        members.pop("values")
    with pytest.raises(LabelsError, match=words):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))


@pytest.mark.parametrize("value", [-1e6 - 100, 1e6 + 100])
def test_a_value_past_a_million_points_either_way_is_refused(tmp_path, value):
    members = arrays()
    legal = np.flatnonzero(members["action_mask"][1])
    other = legal[legal != members["action"][1]]
    if value > 0:  # (the label stays the best value)
        members["values"][1, members["action"][1]] = value
    else:
        members["values"][1, other[0] if len(other) else members["action"][1]] = value
    with pytest.raises(LabelsError, match=r"'values' must be float32 .* within \+-1e\+06"):
        distill_labels.load_labels(write(tmp_path / "l.npz", members))
    members["values"][1] = np.clip(members["values"][1], -1e6, 1e6)
    distill_labels.load_labels(write(tmp_path / "ok.npz", members))


def test_65_labels_files_are_refused_however_they_are_given(tmp_path):
    names = []
    for index in range(65):
        names.append(str(tmp_path / f"f{index}.npz"))
        (tmp_path / f"f{index}.npz").write_bytes(b"")
    assert distill_labels.labels_file_names(names[:64]) == names[:64]
    with pytest.raises(LabelsError, match="give 1 to 64 labels files, got 65"):
        distill_labels.labels_file_names(names)
    # the older comma list is bounded before its parts are looked up
    with pytest.raises(LabelsError, match="give 1 to 64 labels files, got more"):
        distill_labels.labels_file_names(names[:63] + [",".join(names[63:])])


def test_the_labels_files_together_hold_at_most_max_labels(tmp_path, monkeypatch):
    """Counted from the headers before any file is read: the largest count a file's arrays
    declare (here an observation array with more rows than its labels)."""
    monkeypatch.setattr(distill_labels, "MAX_LABELS", 10)
    five = write(tmp_path / "a.npz", arrays(5, 1) | {"match": np.arange(5)})
    other = arrays(5, 2) | {"match": np.arange(5)}
    distill_labels.join_labels_files([five, write(tmp_path / "b.npz", other)])
    more = arrays(6, 3) | {"match": np.arange(6)}
    with pytest.raises(LabelsError, match="2 files hold 11 labels, more than 10"):
        distill_labels.join_labels_files([five, write(tmp_path / "c.npz", more)])
    rows = other | {"observation": np.concatenate([other["observation"]] * 2)[:6]}
    with pytest.raises(LabelsError, match="2 files hold 11 labels, more than 10"):
        distill_labels.join_labels_files([five, write(tmp_path / "d.npz", rows)])


@pytest.mark.parametrize("change", ["values lost", "values gained", "one label less"])
def test_a_file_read_otherwise_than_its_headers_declared_is_refused(tmp_path, monkeypatch,
                                                                    change):
    """Between the header pass and the read the file changed: refused, not trained on."""
    read = distill_labels.load_labels

    def changed(path):
        labels, teacher = read(path)
        if change == "values lost":
            labels["values"] = None
        elif change == "values gained":
            labels["values"] = np.zeros(labels["action_mask"].shape, np.float32)
        else:
            labels = {key: value[:-1] if isinstance(value, np.ndarray) else value
                      for key, value in labels.items()}
        return labels, teacher

    members = arrays()
    if change == "values gained":
        members.pop("values")
    path = write(tmp_path / "l.npz", members)
    monkeypatch.setattr(distill_labels, "load_labels", changed)
    with pytest.raises(LabelsError, match="l.npz: the file changed while it was read"):
        distill_labels.join_labels_files([path])


def test_arrays_inflating_to_exactly_100_times_the_file_are_read(tmp_path):
    from training import labels_zip

    path = tmp_path / "ten.bin"
    path.write_bytes(b"0123456789")
    with open(path, "rb") as file:
        labels_zip.check_inflation(path, file, {"a": ((), None, (0, 600)),
                                                "b": ((), None, (0, 400))})
        with pytest.raises(LabelsError, match="inflate to 1,001 bytes, more than 100 times "
                                              "its 10 bytes"):
            labels_zip.check_inflation(path, file, {"a": ((), None, (0, 1001))})


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_npy_version_numpy_writes_is_read(tmp_path, version):
    members = arrays()
    data = io.BytesIO()
    np.lib.format.write_array(data, members["action"], version=version)
    members["action"] = data.getvalue()
    labels, _ = distill_labels.load_labels(write(tmp_path / "l.npz", members))
    assert labels["action"].tolist() == arrays()["action"].tolist()


def test_a_npy_header_of_exactly_10_000_bytes_is_read(tmp_path):
    members = arrays()
    header = repr({"descr": "<i8", "fortran_order": False, "shape": (4,)}).ljust(9_999) + "\n"
    members["action"] = (b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little")
                         + header.encode() + members["action"].astype("<i8").tobytes())
    labels, _ = distill_labels.load_labels(write(tmp_path / "l.npz", members))
    assert labels["action"].tolist() == arrays()["action"].tolist()


def test_a_file_refused_at_the_zip_level_is_named_as_refused_not_as_damaged(tmp_path):
    path = tmp_path / "l.npz"
    path.write_bytes(b"\x93NUMPY" + b"\0" * 100)
    with pytest.raises(LabelsError, match="does not start with a zip entry") as refused:
        distill_labels.load_labels(path)
    assert "damaged" not in str(refused.value)


def test_a_damaged_file_s_error_is_one_line():
    from training import labels_zip

    error = labels_zip.not_labels("l.npz", ValueError("first line\nsecond line"))
    assert str(error) == "l.npz: not a labels file, or a damaged one (ValueError: first line)"
