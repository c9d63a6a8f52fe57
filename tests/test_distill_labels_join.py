"""Reading labels files (``training/distill_labels.py``) without needless copies: one file's
arrays are returned as read, and several files are copied once, into one array each (at 2 M
labels an extra copy of the observations alone is 1.9 GB); and a small file never unpacks to
gigabytes (``training/labels_zip.py``)."""

from __future__ import annotations

import functools
import io
import tracemalloc
import zipfile

import numpy as np
import pytest

pytest.importorskip("torch")

from training import distill_labels  # noqa: E402
from training.distill_labels import NUM_ACTIONS, OBS_SIZE  # noqa: E402


def random_labels(n: int, seed: int) -> tuple[dict, np.random.Generator]:
    """``n`` random labels the checks accept (observations within the game's bounds, each
    action legal under its mask and the best of its values), and the generator that drew
    them (for more fields)."""
    rng = np.random.default_rng(seed)
    low, high = distill_labels._OBS_LOW, distill_labels._OBS_HIGH
    obs = np.clip(low + rng.random((n, OBS_SIZE), np.float32) * (high - low), low, high)
    action = rng.integers(0, NUM_ACTIONS, n)
    mask = rng.random((n, NUM_ACTIONS)) < 0.2
    mask[np.arange(n), action] = True
    scores = np.where(mask, rng.standard_normal((n, NUM_ACTIONS), np.float32), 0)
    scores[np.arange(n), action] = 10   # the label is the best legal value, as collected
    return {"observation": obs.astype(np.float32), "action_mask": mask, "action": action,
            "values": scores.astype(np.float32)}, rng


def write_labels(path, n: int, seed: int, values: bool = True) -> str:
    """:func:`random_labels` saved uncompressed (with match ids and a teacher)."""
    labels, rng = random_labels(n, seed)
    if not values:
        del labels["values"]
    np.savez(path, **labels, match=rng.integers(0, 50, n) << 32 | rng.integers(0, 4, n),
             teacher=np.array(f"search:samples={seed}"))
    return str(path)


def peak_bytes(read) -> tuple[object, int]:
    """``read()`` and the most memory it held at once beyond what was held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = read()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.fixture
def small_blocks(monkeypatch):
    """The checks' and keys' blocks of 1,024 rows: their temporaries (bounded at 2 M labels by
    the 65,536-row blocks) stay out of the measure of these 20,000-label files."""
    for name in ("_first_outside_the_game", "_first_label_not_the_best", "_row_keys"):
        monkeypatch.setattr(distill_labels, name,
                            functools.partial(getattr(distill_labels, name), rows=1024))


@pytest.mark.parametrize("files", [1, 3])
def test_labels_files_are_read_with_one_copy_of_their_arrays(tmp_path, small_blocks, files):
    """One file: its arrays as read (the join copied every one, about 1.9 GB at 2 M labels).
    Several: each file is copied into the joined arrays and dropped before the next is read
    (all the files' arrays and their join were held at once)."""
    paths = [write_labels(tmp_path / f"{index}.npz", 20_000, index) for index in range(files)]
    (labels, _), peak = peak_bytes(lambda: distill_labels.load_labels_files(paths))
    joined = sum(array.nbytes for array in labels.values())
    one_file = joined // files if files > 1 else 0
    assert peak < 1.2 * joined + one_file, f"{peak / joined:.2f} times the labels read"


def test_several_files_join_as_their_arrays_end_to_end(tmp_path):
    """The joined arrays are each file's, in order; match ids renumbered per file (0.. for the
    first, on from the last id of the one before); values kept only when every file has them."""
    paths = [write_labels(tmp_path / f"{index}.npz", 300 + index, index) for index in range(3)]
    parts = [distill_labels.load_labels(path)[0] for path in paths]
    labels, teacher = distill_labels.load_labels_files(paths)
    assert teacher == "search:samples=0 + search:samples=1 + search:samples=2"
    for key in ("observation", "action_mask", "action", "values"):
        np.testing.assert_array_equal(labels[key], np.concatenate([part[key] for part in parts]))
        assert labels[key].dtype == parts[0][key].dtype
    offset, expected = 0, []
    for part in parts:
        local = np.unique(part["match"], return_inverse=True)[1]
        expected.append(offset + local)
        offset += local.max() + 1
    np.testing.assert_array_equal(labels["match"], np.concatenate(expected))
    assert labels["match"].dtype == np.int64 and labels["action"].dtype == np.int64
    no_values = write_labels(tmp_path / "old.npz", 200, 9, values=False)
    assert distill_labels.load_labels_files([*paths, no_values])[0]["values"] is None
    one, _ = distill_labels.load_labels_files(paths[:1])
    for key in ("observation", "action_mask", "action", "values"):
        np.testing.assert_array_equal(one[key], parts[0][key])
    np.testing.assert_array_equal(one["match"], expected[0])


def test_a_file_without_a_label_array_is_named(tmp_path):
    path = tmp_path / "no_action.npz"
    np.savez(path, observation=np.zeros((3, OBS_SIZE), np.float32),
             action_mask=np.ones((3, NUM_ACTIONS), bool), teacher=np.array("t"))
    with pytest.raises(distill_labels.LabelsError, match="no_action.npz: not a labels file "
                                                         r"\(it has no 'action'\)"):
        distill_labels.load_labels_files([str(path)])


@pytest.mark.parametrize("shared, refused", [(700, True), (300, False)])
def test_a_file_sharing_most_of_another_s_decisions_is_refused(tmp_path, shared, refused):
    """70% of one file's decisions in another (a part of it, saved anew beside other labels)
    would be held out and trained on: refused; 30% (more than two collections share) joins."""
    first = write_labels(tmp_path / "first.npz", 1000, 1)
    other = write_labels(tmp_path / "other.npz", 1000, 2)
    with np.load(first) as a, np.load(other) as b:
        mixed = {key: np.concatenate([a[key][:shared], b[key][shared:]])
                 for key in ("observation", "action_mask", "action", "values", "match")}
        teacher = b["teacher"]
    np.savez(tmp_path / "mixed.npz", teacher=teacher, **mixed)
    files = [first, str(tmp_path / "mixed.npz")]
    if refused:
        with pytest.raises(distill_labels.LabelsError, match="mixed.npz: most of its decisions "
                                                             "are those of .*first.npz"):
            distill_labels.join_labels_files(files)
    else:
        assert len(distill_labels.join_labels_files(files)[0]["action"]) == 2000


def test_a_labels_file_inflating_past_100_times_its_size_is_refused_before_unpacking(
        tmp_path, monkeypatch):
    """One valid decision 5,000 times, deflated: 7.6 MB of arrays in a file of a few kB (2 MB
    of zeros declaring 2 M labels made np.load take 2 GB and 11 s before any check of their
    data).  The same arrays stored (np.savez) load: a collection's file inflates ~22 times."""
    one = dict(np.load(write_labels(tmp_path / "one.npz", 1, 0)))
    repeated = {key: np.repeat(array, 5000, axis=0) if array.ndim else array
                for key, array in one.items()}
    np.savez_compressed(tmp_path / "bomb.npz", **repeated)
    np.savez(tmp_path / "stored.npz", **repeated)
    assert len(distill_labels.load_labels(tmp_path / "stored.npz")[0]["action"]) == 5000

    def loaded(*args, **kwargs):
        raise AssertionError("np.load was reached")
    monkeypatch.setattr(distill_labels.np, "load", loaded)
    with pytest.raises(distill_labels.LabelsError, match=r"bomb.npz: its arrays inflate to "
                       r"7,6\d\d,\d\d\d bytes, more than 100 times its [\d,]+ bytes"):
        distill_labels.load_labels_files([str(tmp_path / "bomb.npz")])


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_member_compressed_as_numpy_never_does_is_refused_unread(tmp_path, monkeypatch, method):
    """zipfile unpacks a bzip2 or LZMA chunk whole: reading the .npy header of a 2.5 kB member
    took 7 s and 3.7 GB.  np.savez stores and np.savez_compressed deflates; nothing else is
    opened."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(write_labels(tmp_path / "plain.npz", 10, 0)) as plain, \
            zipfile.ZipFile(buffer, "w", compression=method) as other:
        for name in plain.namelist():
            other.writestr(name, plain.read(name))
    (tmp_path / "other.npz").write_bytes(buffer.getvalue())

    def opened(*args, **kwargs):
        raise AssertionError("a member was opened")
    monkeypatch.setattr(zipfile.ZipFile, "open", opened)
    with pytest.raises(distill_labels.LabelsError, match=f"other.npz: '[a-z_]+.npy' is "
                       f"compressed with method {method}, not stored or deflated as NumPy"):
        distill_labels.load_labels(tmp_path / "other.npz")


def resaved(source, target, **change) -> str:
    """The arrays of the labels file ``source`` saved (stored) to ``target``, with ``change``
    (a key set to ``None`` is left out)."""
    with np.load(source) as data:
        arrays = {key: data[key] for key in data.files} | change
    np.savez(target, **{key: array for key, array in arrays.items() if array is not None})
    return str(target)


@pytest.mark.parametrize("label", [-1, NUM_ACTIONS])
def test_an_action_outside_0_to_112_is_refused_not_wrapped_around_the_mask(tmp_path, label):
    """A label of -1 would index the mask's last action (legal here) and train toward -1; one
    of 113 would index past the mask: both are the one range error."""
    base = write_labels(tmp_path / "base.npz", 5, 0, values=False)
    with np.load(base) as data:
        action, mask = data["action"].copy(), data["action_mask"].copy()
    action[2] = label
    mask[:, NUM_ACTIONS - 1] = True
    path = resaved(base, tmp_path / "odd.npz", action=action, action_mask=mask)
    with pytest.raises(distill_labels.LabelsError, match=r"'action' must be integers in 0\.\.112"):
        distill_labels.load_labels(path)


def test_a_label_best_among_negative_legal_values_is_accepted(tmp_path):
    """An illegal action's value is 0, above every legal one here: the label is compared with
    the legal actions' values only."""
    base = write_labels(tmp_path / "base.npz", 6, 0)
    with np.load(base) as data:
        values, mask = data["values"], data["action_mask"]
    values = np.where(mask, values - 100, 0).astype(np.float32)
    path = resaved(base, tmp_path / "negative.npz", values=values)
    labels, _ = distill_labels.load_labels(path)
    np.testing.assert_array_equal(labels["values"], values)


def test_actions_and_match_ids_load_as_int64_whatever_the_file_stores(tmp_path):
    """Cross-entropy's targets are int64: a file of int32 or uint8 labels loads as int64."""
    base = write_labels(tmp_path / "base.npz", 5, 0)
    with np.load(base) as data:
        action, match = data["action"], data["match"]
    path = resaved(base, tmp_path / "narrow.npz", action=action.astype(np.uint8),
                   match=(match & 0xFFFF).astype(np.int32))
    labels, _ = distill_labels.load_labels(path)
    assert labels["action"].dtype == np.int64 and labels["match"].dtype == np.int64
    np.testing.assert_array_equal(labels["action"], action)


def test_files_of_one_teacher_join_under_its_name_once(tmp_path):
    files = [resaved(write_labels(tmp_path / f"w{seed}.npz", 5, seed), tmp_path / f"{seed}.npz",
                     teacher=np.array("search:samples=9")) for seed in (1, 2)]
    assert distill_labels.join_labels_files(files)[1] == "search:samples=9"
    third = write_labels(tmp_path / "3.npz", 5, 3)
    assert distill_labels.join_labels_files([*files, third])[1] == \
        "search:samples=9 + search:samples=3"


def test_row_keys_depend_on_every_column_of_the_observation():
    """Decisions differing only in their last feature are different decisions (not a copy)."""
    low, high = distill_labels._OBS_LOW, distill_labels._OBS_HIGH
    obs = np.repeat(((low + high) / 2).astype(np.float32)[None], OBS_SIZE, axis=0)
    for column in range(OBS_SIZE):
        obs[column, column] = high[column] if obs[column, column] != high[column] else low[column]
    keys = distill_labels._row_keys({"observation": obs, "action": np.zeros(OBS_SIZE)})
    assert len(np.unique(keys)) == OBS_SIZE


def test_two_files_of_one_seed_and_teacher_sharing_an_env_are_refused_either_way(tmp_path):
    """Match ids are ``env << 32 | match``: two files of one seed and teacher with the same env
    (other match numbers) were dealt the same matches; a file without ids shares every env,
    whichever of the two is named first."""
    teacher = np.array("search:samples=5")
    first = resaved(write_labels(tmp_path / "w1.npz", 20, 1), tmp_path / "a.npz",
                    teacher=teacher, seed=np.array(7), match=np.full(20, 3 << 32 | 0))
    second = resaved(write_labels(tmp_path / "w2.npz", 20, 2), tmp_path / "b.npz",
                     teacher=teacher, seed=np.array(7), match=np.full(20, 3 << 32 | 1))
    with pytest.raises(distill_labels.LabelsError, match="b.npz: collected with the seed"):
        distill_labels.join_labels_files([first, second])
    no_ids = resaved(second, tmp_path / "c.npz", match=None)
    for files in ([first, no_ids], [no_ids, first]):
        with pytest.raises(distill_labels.LabelsError, match="collected with the seed"):
            distill_labels.join_labels_files(files)
    apart = resaved(second, tmp_path / "d.npz", match=np.full(20, 4 << 32 | 1))
    assert len(distill_labels.join_labels_files([first, apart])[0]["action"]) == 40


def npy_with_header(array: np.ndarray, header_length: int) -> bytes:
    """``array`` as a version 2.0 ``.npy`` whose header is padded to ``header_length`` bytes."""
    header = repr({"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
                   "shape": array.shape})
    header = header.ljust(header_length - 1) + "\n"
    return (b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header.encode()
            + array.tobytes())


@pytest.mark.parametrize("length, refused", [(10_001, True), (9_000, False)])
def test_a_npy_header_longer_than_10_000_bytes_is_refused_by_its_declared_length(
        tmp_path, length, refused):
    base = write_labels(tmp_path / "base.npz", 4, 0)
    with zipfile.ZipFile(base) as plain, zipfile.ZipFile(tmp_path / "long.npz", "w") as long:
        for name in plain.namelist():
            data = plain.read(name)
            if name == "action.npy":
                data = npy_with_header(np.load(io.BytesIO(data)), length)
            long.writestr(name, data)
    if refused:
        with pytest.raises(distill_labels.LabelsError, match="'action' declares a .npy header "
                                                             "of 10,001 bytes"):
            distill_labels.load_labels(tmp_path / "long.npz")
    else:
        assert len(distill_labels.load_labels(tmp_path / "long.npz")[0]["action"]) == 4


def test_values_wider_than_8_bytes_are_refused_from_the_header(tmp_path):
    """Float128 values would be read whole (twice a float64's bytes) before their dtype check."""
    if np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("no float wider than 8 bytes here")
    base = write_labels(tmp_path / "base.npz", 4, 0)
    with np.load(base) as data:
        wide = data["values"].astype(np.longdouble)
    path = resaved(base, tmp_path / "wide.npz", values=wide)
    with pytest.raises(distill_labels.LabelsError, match="'values' declares float128"):
        distill_labels.load_labels(path)


def test_a_seed_past_2_63_is_not_saved(tmp_path):
    with np.load(write_labels(tmp_path / "base.npz", 3, 0)) as data:
        labels = {key: data[key] for key in ("observation", "action_mask", "action")}
    with pytest.raises(ValueError, match="seed is in 0..2"):
        distill_labels.save_labels(tmp_path / "never.npz", labels, "t", seed=2 ** 63)
    assert not (tmp_path / "never.npz").exists()
