"""Several labels files of ``training.distill`` (``training/distill_labels.py``) train together
without sharing a match: a copy (even saved anew, reordered, or labelled by another teacher), a
part named first, or a collection dealt the same matches (same seed and teacher) is refused; a
path with a comma is one file, and the older comma list still reads.  One file's checks:
``test_distill_labels_checks.py``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from distill_stand_ins import Highest, tiny_student  # noqa: E402

from training import distill, distill_labels  # noqa: E402


@pytest.fixture(scope="module")
def other_collection():
    """Another collection (another seed): a few positions may repeat, not half."""
    return distill.collect(tiny_student(), Highest(), 60, num_envs=8, seed=4, log=lambda *_: None)


def test_several_labels_files_train_together_without_sharing_a_match(tmp_path, collected,
                                                                     other_collection):
    first = distill.save_labels(tmp_path / "a.npz", collected, "search:samples=4")
    old = {key: value for key, value in other_collection.items()
           if key != "match"}  # another collection, without match ids
    second = distill.save_labels(tmp_path / "b.npz", old, "search:samples=8")
    no_values = {key: value for key, value in old.items() if key != "values"}
    distill.save_labels(tmp_path / "c.npz", no_values, "search:samples=8")
    labels, teacher = distill_labels.load_labels_files(f"{first}, {second}")
    n = len(collected["action"])
    assert teacher == "search:samples=4 + search:samples=8"
    np.testing.assert_array_equal(labels["action"], np.concatenate(
        [collected["action"], other_collection["action"]]))
    ids_a, ids_b = labels["match"][:n], labels["match"][n:]
    assert len(set(ids_a)) == len(set(collected["match"])), "a file's matches kept apart"
    assert len(set(ids_b)) == len(ids_b), "without ids, every decision is its own match"
    assert not set(ids_a) & set(ids_b)
    with pytest.raises(distill.LabelsError, match="give 1 to 64 labels files, got 0"):
        distill_labels.load_labels_files(" , ")
    with pytest.raises(distill.LabelsError, match="named twice"):
        distill_labels.load_labels_files(f"{first},{tmp_path}/../{tmp_path.name}/a.npz")
    copy = tmp_path / "copy_of_a.npz"  # held-out agreement was 1.0 with a copy beside it
    copy.write_bytes(first.read_bytes())
    resaved = tmp_path / "resaved_a.npz"  # the same arrays, other bytes
    np.savez(resaved, **dict(np.load(first)))
    assert resaved.read_bytes() != first.read_bytes()
    reordered = distill.save_labels(  # the same decisions in another order
        tmp_path / "reordered_a.npz", {k: v[::-1] for k, v in collected.items()}, "t")
    for again in (copy, resaved, reordered):
        with pytest.raises(distill.LabelsError,
                           match=f"{again.name}: most of its decisions are those of .*a.npz"):
            distill_labels.load_labels_files(f"{first},{again}")
    # the same collection labelled by another teacher: the same decisions, other actions (the
    # copy check keyed the teacher's action too, and the seed check the teacher's spec)
    lowest = np.array([np.flatnonzero(m)[0] for m in collected["action_mask"]])
    lowest_best = np.zeros_like(collected["values"])   # that teacher values its action most
    lowest_best[np.arange(len(lowest)), lowest] = 1
    relabelled = distill.save_labels(tmp_path / "relabelled_a.npz", dict(
        collected, action=lowest, values=lowest_best), "another teacher")
    assert (np.load(relabelled)["action"] != collected["action"]).any()
    with pytest.raises(distill.LabelsError, match="relabelled_a.npz: most of its decisions"):
        distill_labels.load_labels_files(f"{first},{relabelled}")
    part = distill.save_labels(  # a part of it, named first (a .part file beside its file)
        tmp_path / "part_of_a.npz", {k: v[:20] for k, v in collected.items()}, "t")
    with pytest.raises(distill.LabelsError, match="a.npz: most of its decisions are those of"
                       r".*\(collect again with another --seed\)$"):  # what to do about it
        distill_labels.load_labels_files(f"{part},{first}")
    with pytest.raises(distill.LabelsError, match="c.npz.* has no teacher's values"):
        distill_labels.load_labels_files(f"{first},{second.with_name('c.npz')}", need_values=True)
    with pytest.raises(distill.LabelsError, match="hold 120 labels, more than 100"):
        with pytest.MonkeyPatch.context() as patch:  # counted from the headers, nothing read
            patch.setattr(distill_labels, "MAX_LABELS", 100)
            patch.setattr(distill_labels, "load_labels", lambda path: pytest.fail("read"))
            distill_labels.load_labels_files(f"{first},{second}")


def test_two_collections_dealt_the_same_matches_are_refused(tmp_path, collected,
                                                            other_collection):
    """Two collections with one seed and one teacher hold the same decisions (each is dealt
    from ``(seed, env)``), however few of them the copy check finds: the files record their
    seed, and such a pair is refused.  Part files of one collection (other envs) still join."""
    first = distill.save_labels(tmp_path / "a.npz", collected, "search:samples=4", seed=7)
    # another collection's labels (too different for the copy check) recorded as seed 7 too
    twin = distill.save_labels(tmp_path / "b.npz", other_collection, "search:samples=4", seed=7)
    with pytest.raises(distill.LabelsError, match=r"b.npz: collected with the seed \(7\) and "
                                                  "teacher of .*a.npz in the same matches.*"
                                                  r"\(every match's first ones; all of them "
                                                  r"with the same student\)"):
        distill_labels.load_labels_files([str(first), str(twin)])
    no_ids = distill.save_labels(tmp_path / "c.npz", {k: v for k, v in other_collection.items()
                                                      if k != "match"}, "search:samples=4", 7)
    with pytest.raises(distill.LabelsError, match="c.npz: collected with the seed"):
        distill_labels.load_labels_files([str(first), str(no_ids)])
    for name, teacher, seed in (("d", "search:samples=8", 7), ("e", "search:samples=4", 8),
                                ("f", "search:samples=4", None)):
        other = distill.save_labels(tmp_path / f"{name}.npz", other_collection, teacher, seed)
        labels, _ = distill_labels.load_labels_files([str(first), str(other)])
        assert len(labels["action"]) == 120
    envs = collected["match"] >> 32
    parts = [distill.save_labels(tmp_path / f"part{i}.npz",
                                 {k: v[side] for k, v in collected.items()}, "search:samples=4", 7)
             for i, side in enumerate((envs < 4, envs >= 4))]
    labels, _ = distill_labels.load_labels_files([str(part) for part in parts])
    assert len(labels["action"]) == 60


def test_a_labels_path_with_a_comma_is_one_file_and_the_older_comma_list_still_reads(
        tmp_path, collected, other_collection):
    comma = distill.save_labels(tmp_path / "seed 3, 60 labels.npz", collected, "t")
    other = distill.save_labels(tmp_path / "b.npz", other_collection, "t")
    assert distill_labels.labels_file_names([str(comma)]) == [str(comma)]
    labels, _ = distill_labels.load_labels_files([str(comma), str(other)])
    assert len(labels["action"]) == 120
    # the older form, "a.npz,b.npz" (documented and in scripts): a value naming no file
    first = distill.save_labels(tmp_path / "a.npz", collected, "t")
    assert distill_labels.labels_file_names([f"{first}, {other}"]) == [str(first), str(other)]
    assert distill_labels.labels_file_names(f"{first},{other}") == [str(first), str(other)]
    with pytest.raises(distill.LabelsError, match=r"'.*a.npz,.*missing.npz': no such file, nor, "
                                                  r"read as files separated by commas, is '"):
        distill_labels.labels_file_names([f"{first},{tmp_path / 'missing.npz'}"])
    with pytest.raises(distill.LabelsError, match="give 1 to 64 labels files, got more"):
        distill_labels.labels_file_names([",".join(["x"] * 65)])
