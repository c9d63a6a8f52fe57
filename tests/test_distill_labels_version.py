"""A labels file records the observation layout it was collected with
(``training/distill_labels.py``: ``obs_version``): a file of another layout is refused with a
message saying so, rather than its observations misread by a student of this layout; files
from before the version was kept (all of version 1) still load."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from sevenrocks_env.observation import OBS_VERSION  # noqa: E402
from training import distill_labels  # noqa: E402
from training.distill_labels import LabelsError  # noqa: E402

from test_distill_labels_join import random_labels  # noqa: E402


@pytest.fixture(scope="module")
def labels():
    return random_labels(40, seed=5)[0]


def test_a_saved_file_records_this_observation_version(tmp_path, labels):
    path = distill_labels.save_labels(tmp_path / "l.npz", labels, "t", seed=3)
    with np.load(path) as data:
        assert data["obs_version"].shape == () and int(data["obs_version"]) == OBS_VERSION
    loaded, teacher = distill_labels.load_labels(path)
    assert teacher == "t" and np.array_equal(loaded["observation"], labels["observation"])


def test_a_file_without_a_version_is_read_as_before(tmp_path, labels):
    older = tmp_path / "older.npz"
    np.savez(older, **labels, teacher=np.array("t"))
    loaded, _ = distill_labels.load_labels(older)
    assert np.array_equal(loaded["action"], labels["action"])


@pytest.mark.parametrize("version", [OBS_VERSION + 1, 0, -1])
def test_another_observation_version_is_refused_naming_both(tmp_path, labels, version):
    other = tmp_path / "other.npz"
    np.savez(other, **labels, teacher=np.array("t"), obs_version=np.array(version))
    with pytest.raises(LabelsError, match=rf"other.npz: labels of observation version "
                                          rf"{version}; this sevenrocks uses v{OBS_VERSION} "
                                          r"\(238 features\).*Collect them again"):
        distill_labels.load_labels(other)
    with pytest.raises(LabelsError, match="observation version"):
        distill_labels.load_labels_files([str(other)])


def test_another_version_with_other_shapes_is_named_by_its_version(tmp_path, labels):
    """Another layout's observations may be of another width: the shape check, run first,
    said only 'not float32 of shape (N, 238)', not the version the docs promise."""
    other = tmp_path / "wide.npz"
    wide = {**labels, "observation": np.zeros((len(labels["action"]), 242), np.float32)}
    np.savez(other, **wide, teacher=np.array("t"), obs_version=np.array(OBS_VERSION + 1))
    with pytest.raises(LabelsError, match=rf"wide.npz: labels of observation version "
                                          rf"{OBS_VERSION + 1}; this sevenrocks uses "
                                          rf"v{OBS_VERSION}"):
        distill_labels.load_labels(other)


@pytest.mark.parametrize("version, words", [
    (np.array([1, 1]), r"'obs_version' declares int64 \(2,\): not one integer"),
    (np.array(1.0), r"'obs_version' declares float64 \(\): not one integer"),
    (np.array("1"), r"'obs_version' declares <U1 \(\): not one integer")])
def test_a_version_that_is_not_one_integer_is_refused_from_its_header(tmp_path, labels,
                                                                        version, words):
    bad = tmp_path / "bad.npz"
    np.savez(bad, **labels, teacher=np.array("t"), obs_version=version)
    with pytest.raises(LabelsError, match=words):
        distill_labels.load_labels(bad)
