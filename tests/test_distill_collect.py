"""``training.distill``'s collection (``training/distill_collect.py``): every label is the
teacher's answer for that very decision, from that decision's own generator; the teacher's
values bounded and the label the best of them; saves at the documented intervals and on Ctrl-C;
the collection's seed and settings passed to its workers; whole matches held out; a teacher
that loads a network recorded with its digest.  Training on labels: ``test_distill.py``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import CheckpointError, PolicyNet  # noqa: E402
from distill_stand_ins import Highest, tiny_student  # noqa: E402

from training import distill, distill_collect, distill_labels  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402


def test_every_label_comes_from_the_teacher_for_that_very_decision():
    class Recording(Highest):
        """The highest legal action; remembers what it was shown."""
        shown = []

        def action_values_many(self, observations, masks, rngs):
            assert len(observations) == len(masks) == len(rngs)
            self.shown.extend(zip(observations.copy(), masks.copy()))
            return super().action_values_many(observations, masks, rngs)

    teacher, saved = Recording(), []
    labels = distill.collect(tiny_student(), teacher, 40, num_envs=4, seed=5,
                             log=lambda *_: None, save=saved.append)
    assert len(teacher.shown) == 40
    assert saved == [], "saved before the first thousand labels"
    for i, (obs, mask) in enumerate(teacher.shown):
        np.testing.assert_array_equal(labels["observation"][i], obs)
        np.testing.assert_array_equal(labels["action_mask"][i], mask)
        assert labels["action"][i] == np.flatnonzero(mask).max()
        legal = np.flatnonzero(mask)
        np.testing.assert_array_equal(labels["values"][i][legal], legal)
        assert not labels["values"][i][~mask].any(), "an illegal action got a value"


def test_a_long_collection_saves_its_labels_every_thousand():
    class First:
        def action_values_many(self, observations, masks, rngs):
            return [[1.0] + [0.0] * (int(m.sum()) - 1) for m in masks]

    saved = []
    labels = distill.collect(tiny_student(), First(), 2100, num_envs=64, seed=1,
                             log=lambda *_: None, save=saved.append)
    assert [len(s["action"]) // 1000 for s in saved] == [1, 2]
    for partial in saved:
        n = len(partial["action"])
        np.testing.assert_array_equal(partial["observation"], labels["observation"][:n])


def test_collected_labels_name_their_match_and_whole_matches_are_held_out():
    class First:
        def action_values_many(self, observations, masks, rngs):
            return [[1.0] + [0.0] * (int(m.sum()) - 1) for m in masks]

    labels = distill.collect(tiny_student(), First(), 1500, num_envs=4, seed=2,
                             log=lambda *_: None)
    match = labels["match"]
    env, finished = match >> 32, match & 0xFFFFFFFF
    assert set(env.tolist()) == {0, 1, 2, 3}
    for e in range(4):  # an env's decisions come in order: its match counter never goes back
        assert (np.diff(finished[env == e]) >= 0).all()
    assert finished.max() >= 1, "no env finished a match in 1,500 decisions"
    test, train = distill.holdout_split(match, len(match), torch.Generator().manual_seed(0))
    assert sorted(test.tolist() + train.tolist()) == list(range(len(match)))
    assert not set(match[test.numpy()]) & set(match[train.numpy()]), "a match on both sides"
    assert 0 < len(test) <= len(match) // 5


def test_holdout_split_without_match_ids_small_sets_and_a_single_match():
    generator = torch.Generator().manual_seed(0)
    test, train = distill.holdout_split(None, 50, generator)
    assert len(test) == 5 and sorted(test.tolist() + train.tolist()) == list(range(50))
    test, train = distill.holdout_split(np.zeros(9, np.int64), 9, generator)
    assert len(test) == 0 and train.tolist() == list(range(9))
    test, train = distill.holdout_split(np.full(30, 7, np.int64), 30, generator)
    assert len(test) == 0 and len(train) == 30, "one match: nothing to hold out without all"
    # the tenth is reached with as few whole matches as the shuffled order needs
    match = np.repeat(np.arange(10), 10)
    test, _ = distill.holdout_split(match, 100, generator)
    assert len(test) == 10 and len(set(match[test.numpy()])) == 1
    # never past a fifth: a large match is passed over, whatever the order
    match = np.repeat([0, 1], [90, 10])
    for seed in range(8):
        test, _ = distill.holdout_split(match, 100, torch.Generator().manual_seed(seed))
        assert sorted(test.tolist()) == list(range(90, 100))
    test, _ = distill.holdout_split(np.repeat([0, 1], 50), 100, generator)
    assert len(test) == 0, "no match small enough: nothing held out"


def test_a_collection_saves_at_its_save_interval(monkeypatch):
    monkeypatch.setattr(distill_collect, "save_interval", lambda decisions: 500)
    saved = []
    labels = distill.collect(tiny_student(), Highest(), 1600, num_envs=64, seed=1,
                             log=lambda *_: None, save=saved.append)
    assert [len(s["action"]) // 500 for s in saved] == [1, 2, 3]
    np.testing.assert_array_equal(saved[-1]["match"], labels["match"][:len(saved[-1]["match"])])


def test_a_large_collection_saves_every_twentieth_not_every_thousand():
    """Each save rewrites the whole file: at 300,000 labels a save every thousand would write
    ~45 GB."""
    assert [distill_collect.save_interval(n) for n in (1, 2100, 39_999, 40_000, 300_000, 310_000)] == [
        1000, 1000, 1000, 2000, 15_000, 15_000]


def test_each_decision_of_a_step_samples_from_its_own_generator():
    """Decision (step, env) gets a generator seeded by (seed, step, env): two decisions of one
    step never search the same worlds."""
    class Recorder:
        def __init__(self):
            self.draws = []

        def action_values_many(self, observations, masks, rngs):
            self.draws.append([int(rng.integers(2 ** 62)) for rng in rngs])
            return [[0.0] * int(m.sum()) for m in masks]

    teacher = Recorder()
    distill.collect(tiny_student(), teacher, 40, num_envs=8, seed=3, log=lambda *_: None)
    assert any(len(step) > 1 for step in teacher.draws)
    flat = [draw for step in teacher.draws for draw in step]
    assert len(set(flat)) == len(flat), "two decisions sampled from the same generator"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e7, -1e7])
def test_a_teacher_value_out_of_range_stops_the_collection_with_a_clear_error(value):
    """Not finite, or past +-1e6 points (a labels file holding it would be refused)."""
    class Broken:
        def action_values_many(self, observations, masks, rngs):
            return [[value] * int(m.sum()) for m in masks]

    with pytest.raises(ValueError, match="teacher value out of range"):
        distill.collect(tiny_student(), Broken(), 10, num_envs=4, seed=1, log=lambda *_: None)


def test_a_teacher_value_at_the_bound_is_collected_and_its_file_loads(tmp_path):
    """+-1e6 itself is in range: a labels file holds it, so a collection keeps it."""
    class AtTheBound:
        def action_values_many(self, observations, masks, rngs):
            return [[distill_labels.MAX_VALUE * (-1) ** i for i in range(int(m.sum()))]
                    for m in masks]

    labels = distill.collect(tiny_student(), AtTheBound(), 10, num_envs=4, seed=1,
                             log=lambda *_: None)
    loaded, _ = distill_labels.load_labels(distill.save_labels(tmp_path / "l.npz", labels, "t"))
    assert np.abs(loaded["values"]).max() == distill_labels.MAX_VALUE


def test_the_label_is_the_best_of_the_values_as_stored():
    """Values float32 cannot tell apart are a tie in the file: the label is its lower action
    (the argmax of what is stored), not the higher one the teacher's float64 put first."""
    class Finer:
        def action_values_many(self, observations, masks, rngs):
            return [[1.0 + 1e-12 * i for i in range(int(m.sum()))] for m in masks]

    labels = distill.collect(tiny_student(), Finer(), 20, num_envs=4, seed=1,
                             log=lambda *_: None)
    np.testing.assert_array_equal(labels["action"], labels["action_mask"].argmax(1))


def test_a_collection_saves_every_save_every_labels_and_not_its_last():
    """``save_every`` (a worker's span) sets the interval; the whole collection is returned,
    not saved again at its end (the caller saves it, with its seed)."""
    saved = []
    distill.collect(tiny_student(), Highest(), 40, num_envs=1, seed=1, log=lambda *_: None,
                    save=saved.append, save_every=8)
    assert [len(s["action"]) for s in saved] == [8, 16, 24, 32]


def test_a_run_s_collection_saves_with_its_seed_and_passes_its_settings_to_the_workers(
        tmp_path, monkeypatch):
    """Every save of a run's labels, those made while collecting too, records the run's seed
    (a file without one cannot be played again); with workers, the run's settings reach the
    pool; a collection stopped before its first label is an interruption, nothing saved."""
    seeds = []
    monkeypatch.setattr(distill_collect, "make_teacher", lambda spec: Highest())
    monkeypatch.setattr(distill_collect, "save_interval", lambda decisions: 8)
    monkeypatch.setattr(distill_collect, "save_labels",
                        lambda path, labels, teacher, seed=None: seeds.append(seed) or path)
    args = distill.Args(teacher="search:samples=2", decisions=40, num_envs=4, seed=7)
    labels, _ = distill_collect.collect_labels(args, tiny_student(), tmp_path / "l.npz",
                                               log=lambda *_: None)
    assert len(labels["action"]) == 40 and len(seeds) >= 3 and set(seeds) == {7}, seeds
    pooled = []

    def pool(*given, **options):
        pooled.append(given)
        return distill_collect._no_labels()

    monkeypatch.setattr(distill_collect, "collect_in_pool", pool)
    args = distill.Args(teacher="search:samples=2", decisions=40, num_envs=4, seed=7,
                        workers=2, threads=3, init="a.pt")
    seeds.clear()
    with pytest.raises(KeyboardInterrupt):
        distill_collect.collect_labels(args, tiny_student(), tmp_path / "l.npz",
                                       log=lambda *_: None)
    assert not seeds, "the labels of a collection with none were saved"
    assert pooled == [("a.pt", "search:samples=2", 40, 4, 7, 2, tmp_path / "l.npz", 3)]


@pytest.mark.parametrize("bonus", ["nan", "1e9", "-1"])
def test_search_refuses_a_win_bonus_out_of_range(bonus):
    from sevenrocks_env.agents import make_agent
    with pytest.raises(ValueError, match="win_bonus must be in"):
        make_agent(f"search:win_bonus={bonus}")


def test_a_teacher_that_loads_a_network_is_recorded_with_that_networks_digest(tmp_path):
    """``policy=shipped`` names other weights once a new policy ships: the labels pin the file."""
    import hashlib
    torch.manual_seed(5)
    net = save_checkpoint(tmp_path / "teacher.pt", policy_entries(PolicyNet((32, 32)), 1))
    spec = f"search:policy={net},samples=2"
    digest = hashlib.sha256(net.read_bytes() + b"\0").hexdigest()[:16]
    assert distill.pinned_teacher(spec) == f"{spec} (network sha256 {digest})"
    assert distill.pinned_teacher("search:samples=4") == "search:samples=4", "no file, no digest"
    out = tmp_path / "student.pt"
    args = distill.Args(init=str(net), teacher=spec, decisions=8, num_envs=4, epochs=1,
                        out=str(out), log_dir=str(tmp_path / "runs"))
    info = distill.run(args, log=lambda *_: None)
    assert info["teacher"] == f"{spec} (network sha256 {digest})"
    _, recorded = distill_labels.load_labels(tmp_path / "student.labels.npz")
    assert recorded == info["teacher"]
    # another network at the same path gives another digest
    save_checkpoint(net, policy_entries(PolicyNet((32, 32)), 2))
    assert distill.pinned_teacher(spec) != info["teacher"]


def test_epochs_0_collects_labels_and_writes_no_policy(tmp_path):
    """--epochs 0 ("only collect") wrote the init, unchanged, as a policy whose record said it
    was distilled toward the teacher; the model card would have said so too."""
    torch.manual_seed(5)
    net = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 1))
    out = tmp_path / "student.pt"
    args = distill.Args(init=str(net), teacher="search:samples=2", decisions=8, num_envs=4,
                        epochs=0, out=str(out), log_dir=str(tmp_path / "runs"), seed=12)
    info = distill.run(args, log=lambda *_: None)
    assert info["epochs"] == 0 and info["labels"] >= 8 and not out.exists()
    labels, _ = distill_labels.load_labels(tmp_path / "student.labels.npz")
    assert len(labels["action"]) == info["labels"] and labels["seed"] == 12, "seed not recorded"
    with pytest.raises(ValueError, match="nothing to do"):  # refused before any file is read
        distill.Args(init=str(tmp_path / "missing.pt"), labels=str(tmp_path / "no.npz"),
                     epochs=0, out=str(out), log_dir=str(tmp_path / "runs"))


def test_ctrl_c_stops_a_collection_with_every_fully_labelled_step(monkeypatch):
    """An interrupt in the middle of a step (some of its rows labelled) keeps the earlier steps
    whole and drops that step; an interrupt before any label is passed on."""
    full = distill.collect(tiny_student(), Highest(), 300, num_envs=16, seed=6,
                           log=lambda *_: None)
    calls, choose = [], distill_collect.best_action

    def interrupted_at(n):
        def best_action(legal, values):
            calls.append(1)
            if len(calls) == n:
                raise KeyboardInterrupt
            return choose(legal, values)
        return best_action

    monkeypatch.setattr(distill_collect, "best_action", interrupted_at(200))
    seen = []
    part = distill.collect(tiny_student(), Highest(), 300, num_envs=16, seed=6, log=seen.append)
    n = len(part["action"])
    assert 150 < n < 200 and "interrupted at" in seen[-1], (n, seen[-1:])
    for key in ("observation", "action_mask", "action", "values", "match"):
        assert len(part[key]) == n
        np.testing.assert_array_equal(part[key], full[key][:n])
    calls.clear()
    monkeypatch.setattr(distill_collect, "best_action", interrupted_at(3))
    with pytest.raises(KeyboardInterrupt):
        distill.collect(tiny_student(), Highest(), 300, num_envs=16, seed=6, log=lambda *_: None)


def test_an_init_distilled_63_times_has_no_round_left_for_its_student():
    """A student records its init's rounds and its own: 64 at most, as a checkpoint may hold
    (``earlier``: at most 63), so a student of 64 rounds is refused, not written unreadable."""
    from training.distill_record import MAX_ROUNDS, distill_facts, rounds_before

    one = {"teacher": "search:samples=2", "labels": 10, "holdout_agreement": 0.5}
    at_most = {"distill": {**one, "earlier": [one] * (MAX_ROUNDS - 2)}}
    assert len(rounds_before(at_most, "init.pt")) == MAX_ROUNDS - 1
    full = {"distill": {**one, "earlier": [one] * (MAX_ROUNDS - 1)}}
    assert len(distill_facts(full, "init.pt")["earlier"]) == MAX_ROUNDS - 1
    with pytest.raises(CheckpointError, match="distilled 64 times already"):
        rounds_before(full, "init.pt")


@pytest.mark.parametrize("held", [15, 20])
@pytest.mark.parametrize("seed", range(4))
def test_a_match_between_a_tenth_and_a_fifth_of_the_labels_is_held_out_whole(seed, held):
    """A fifth is the cap, not a tenth, and it is inclusive: a match of 15 or of exactly 20 of
    100 labels (the other match the rest) is held out."""
    match = np.repeat([3, 8], [held, 100 - held])
    test, train = distill.holdout_split(match, 100, torch.Generator().manual_seed(seed))
    assert sorted(test.tolist()) == list(range(held)) and len(train) == 100 - held


def test_the_share_of_no_decisions_is_not_a_number():
    """No held-out decisions: NaN (the card's "not measured"), never a measured 0."""
    assert np.isnan(distill.share(torch.zeros(0, dtype=torch.bool)))
    assert distill.share(torch.tensor([True, False, False, True])) == 0.5
