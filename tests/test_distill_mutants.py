"""Tests from a mutation audit of the distillation's training (``training/distill.py``) and
settings (``training/distill_args.py``): each pins what a mutant changed without a test
failing.  Labels here are made up (no collection): a small student, seconds in all."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import MaskedCategorical, PolicyNet  # noqa: E402
from training import distill  # noqa: E402
from training.distill_labels import NUM_ACTIONS, OBS_SIZE, LabelsError  # noqa: E402


def made_up(n: int = 60, seed: int = 0, values: bool = True, matches: int = 12) -> dict:
    """``n`` labels of random legal choices (two to six legal actions each), the label the best
    of random values, ``matches`` matches of equal size."""
    rng = np.random.default_rng(seed)
    mask = np.zeros((n, NUM_ACTIONS), bool)
    for row in range(n):
        mask[row, rng.choice(NUM_ACTIONS, rng.integers(2, 7), replace=False)] = True
    value = np.where(mask, rng.standard_normal((n, NUM_ACTIONS)) * 4, 0).astype(np.float32)
    action = np.where(mask, value, -np.inf).argmax(1)
    return {"observation": rng.random((n, OBS_SIZE), np.float32),
            "action_mask": mask, "action": action.astype(np.int64),
            "values": value if values else None,
            "match": np.repeat(np.arange(matches), n // matches).astype(np.int64)}


def student() -> PolicyNet:
    torch.manual_seed(3)
    return PolicyNet((16, 16), action_features=0)


class Writer:
    """A stand-in TensorBoard writer: every scalar, in order."""

    def __init__(self):
        self.scalars = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def of(self, tag) -> list:
        return [(value, step) for name, value, step in self.scalars if name == tag]


@pytest.mark.parametrize("temperature", [0.5, 1.0, 5.0])
def test_any_temperature_above_0_needs_the_teacher_s_values(temperature):
    """Soft targets at a temperature under 1 point need the values as much as at 5."""
    args = distill.Args(epochs=1, temperature=temperature)
    with pytest.raises(LabelsError, match="temperature > 0 needs the teacher's values"):
        distill.train_student(student(), made_up(values=False), args, log=lambda *_: None)


@pytest.mark.parametrize("temperature", [0.0, 2.0])
def test_the_loss_is_the_cross_entropy_toward_the_labels_or_the_soft_targets(temperature):
    """One minibatch of every training label: the loss logged is the mean over its labels of
    the cross entropy toward the teacher's action (hard), or toward ``softmax(values / T)``
    summed over the actions (soft), measured before the step."""
    labels, net = made_up(), student()
    _, train = distill.holdout_split(labels["match"], 60, torch.Generator().manual_seed(0))
    obs, mask = (torch.from_numpy(labels[key])[train] for key in ("observation", "action_mask"))
    with torch.no_grad():
        dist = MaskedCategorical(net(obs, mask)[0], mask)
        if temperature:
            targets = distill.soft_targets(torch.from_numpy(labels["values"])[train], mask,
                                           temperature)
            want = -(targets * dist.log_probs).sum(-1).mean()
        else:
            want = -dist.log_prob(torch.from_numpy(labels["action"])[train]).mean()
    writer = Writer()
    args = distill.Args(epochs=1, batch_size=len(train), learning_rate=1e-3, seed=0,
                        temperature=temperature)
    distill.train_student(net, labels, args, writer, log=lambda *_: None)
    [(loss, step)] = writer.of("losses/distill_loss")
    assert step == len(train) and loss == pytest.approx(float(want), rel=1e-5)


def test_what_is_reported_when_nothing_is_learned():
    """At a step too small to change a choice, the student's choices are the init's: it agrees
    with the teacher on none of the decisions where the init chose otherwise (held out or in
    training) and on all of those where the init agreed; ``holdout`` counts the held-out labels."""
    labels, net = made_up(seed=1), student()
    obs, mask, action = (torch.from_numpy(labels[key])
                         for key in ("observation", "action_mask", "action"))
    agrees = distill.modes_on(net, obs, mask) == action
    test, _ = distill.holdout_split(labels["match"], 60, torch.Generator().manual_seed(0))
    assert 0 < agrees.float().mean() < 1 and 0 < agrees[test].float().mean() < 1
    args = distill.Args(epochs=2, batch_size=16, learning_rate=1e-12, seed=0)
    writer = Writer()
    result = distill.train_student(net, labels, args, writer, log=lambda *_: None)
    for tag, key in (("charts/holdout_agreement", "holdout_agreement"),
                     ("charts/epoch_train_agreement", "epoch_train_agreement"),
                     ("charts/holdout_agreement_where_init_differed",
                      "holdout_agreement_where_init_differed")):
        assert [value for value, _ in writer.of(tag)] == [result[key]] * 2, tag
    assert result["agreement_before"] == float(agrees.float().mean())
    assert result["holdout"] == len(test)
    assert result["holdout_agreement"] == pytest.approx(float(agrees[test].float().mean()))
    assert result["holdout_agreement_where_init_differed"] == 0.0
    assert result["holdout_agreement_where_init_agreed"] == 1.0
    assert result["train_agreement_where_init_differed"] == 0.0


def minibatch_agreements(seed: int, epochs: int = 2) -> list[list[float]]:
    """Each epoch's sequence of one-label minibatch agreements, nothing learned."""
    labels, writer = made_up(20, matches=4), Writer()
    args = distill.Args(epochs=epochs, batch_size=1, learning_rate=1e-12, seed=seed)
    distill.train_student(student(), labels, args, writer, log=lambda *_: None)
    flags = [value for value, _ in writer.of("charts/teacher_agreement")]
    size = len(flags) // epochs
    return [flags[start:start + size] for start in range(0, len(flags), size)]


def test_each_epoch_shuffles_the_training_labels_anew_from_the_seed():
    """One-label minibatches, nothing learned: each is the init's agreement on one training
    label, the same labels every epoch, in an order that changes from epoch to epoch and with
    the seed (and is the same again with the same seed)."""
    first, second = minibatch_agreements(0)
    assert sorted(first) == sorted(second) and first != second
    assert minibatch_agreements(7)[0] != first
    assert minibatch_agreements(0)[0] == first


def test_adam_s_first_step_moves_each_weight_by_at_most_the_learning_rate():
    """Adam's first step moves a weight by about ``learning_rate`` (its gradient over its own
    size): one step at 1e-3 moves the weights by 1e-3 at most, and some by nearly that."""
    net = student()
    before = [p.detach().clone() for p in net.parameters()]
    labels = made_up()
    args = distill.Args(epochs=1, batch_size=1000, learning_rate=1e-3, seed=0)
    distill.train_student(net, labels, args, log=lambda *_: None)
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(net.parameters(), before))
    assert 0.9e-3 < moved <= 1.001e-3


def test_each_step_is_handed_its_own_minibatch_s_gradient_not_the_sum_of_the_earlier_ones():
    """Minibatches of every training label, three epochs: each step is handed (clipped) the
    gradient of the loss at the weights of that step, as computed afresh here: the gradients
    of the steps before are zeroed, not added to it."""
    import copy

    from torch.optim.optimizer import register_optimizer_step_pre_hook

    labels, net = made_up(), student()
    _, train = distill.holdout_split(labels["match"], 60, torch.Generator().manual_seed(0))
    obs, mask, action = (torch.from_numpy(labels[key])[train]
                         for key in ("observation", "action_mask", "action"))
    cosines = []

    def compare(optimizer, args, kwargs):
        fresh = copy.deepcopy(net)
        fresh.zero_grad()
        logits, _ = fresh(obs, mask)
        (-MaskedCategorical(logits, mask).log_prob(action).mean()).backward()
        want = torch.cat([p.grad.flatten() for p in fresh.parameters() if p.grad is not None])
        got = torch.cat([p.grad.flatten() for p in net.parameters() if p.grad is not None])
        cosines.append(float(torch.nn.functional.cosine_similarity(want, got, dim=0)))

    hook = register_optimizer_step_pre_hook(compare)
    try:
        distill.train_student(net, labels, distill.Args(epochs=3, batch_size=len(train),
                                                        learning_rate=1e-2, seed=0),
                              log=lambda *_: None)
    finally:
        hook.remove()
    assert len(cosines) == 3 and all(cosine > 0.9999 for cosine in cosines), cosines


def test_the_held_out_matches_together_stay_within_a_fifth_whatever_their_order():
    """Matches of 9, 12 and 79 labels: the 9 taken first leaves a tenth unreached, and the 12
    would take the held-out labels to 21, past a fifth: it is passed over."""
    match = np.repeat([0, 1, 2], [9, 12, 79])
    held = {len(distill.holdout_split(match, 100, torch.Generator().manual_seed(seed))[0])
            for seed in range(12)}
    assert held == {9, 12}


def test_a_widened_student_is_the_same_again_with_the_same_seed(tmp_path):
    """The widened layers' new units are drawn from torch's generator, seeded by ``--seed``: a
    run from a labels file is repeated exactly, and another seed draws other units."""
    from training.checkpoint import policy_entries, save_checkpoint
    from training.distill_labels import _OBS_HIGH, _OBS_LOW

    labels = made_up(20, matches=4)
    labels["observation"] = (_OBS_LOW + labels["observation"] * (_OBS_HIGH - _OBS_LOW)
                             ).astype(np.float32)
    path = distill.save_labels(tmp_path / "l.npz", labels, "search:samples=4")
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(student(), 0))
    weights = []
    for run, seed in enumerate((3, 3, 4)):
        out = tmp_path / f"student{run}.pt"
        distill.run(distill.Args(init=str(init), labels=str(path), epochs=1, seed=seed,
                                 hidden_sizes=[24, 24], out=str(out),
                                 log_dir=str(tmp_path / "runs")), log=lambda *_: None)
        weights.append(torch.load(out, weights_only=True)["model"])
    assert weights[0]["trunk.0.weight"].shape[0] == 24, "the student saved is the widened one"
    same = [torch.equal(weights[0][key], weights[1][key]) for key in weights[0]]
    other = [torch.equal(weights[0][key], weights[2][key]) for key in weights[0]]
    assert all(same) and not all(other)


@pytest.mark.parametrize("rows", [1, 4097])
def test_the_modes_cover_every_decision_past_each_batch_of_4096(rows):
    net = student()
    mask = torch.zeros(rows, NUM_ACTIONS, dtype=torch.bool)
    mask[:, 5] = True
    modes = distill.modes_on(net, torch.zeros(rows, OBS_SIZE), mask)
    assert modes.tolist() == [5] * rows


def test_a_collecting_run_records_its_collection_s_settings(tmp_path, monkeypatch):
    """A run that collects records the collection's options (with --labels they are left out,
    ``test_distill.py``); the collection itself is a stand-in here."""
    from training.checkpoint import policy_entries, save_checkpoint

    def collect_labels(args, student, labels_path, log):
        return made_up(20, matches=4), "search:samples=2"

    monkeypatch.setattr(distill, "collect_labels", collect_labels)
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(student(), 0))
    record = distill.run(distill.Args(init=str(init), teacher="search:samples=2", epochs=1,
                                      decisions=20, num_envs=4, out=str(tmp_path / "s.pt"),
                                      log_dir=str(tmp_path / "runs")), log=lambda *_: None)
    assert {key: record["args"][key] for key in ("teacher", "decisions", "num_envs", "workers")
            } == {"teacher": "search:samples=2", "decisions": 20, "num_envs": 4, "workers": 1}


def test_a_collection_never_replaces_the_labels_beside_its_output(tmp_path, monkeypatch):
    from training.checkpoint import policy_entries, save_checkpoint

    called = []
    monkeypatch.setattr(distill, "collect_labels", lambda *args: called.append(args))
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(student(), 0))
    (tmp_path / "s.labels.npz").write_bytes(b"hours of search")
    with pytest.raises(ValueError, match="s.labels.npz is there already"):
        distill.run(distill.Args(init=str(init), teacher="search:samples=2", epochs=1,
                                 out=str(tmp_path / "s.pt"), log_dir=str(tmp_path / "runs")),
                    log=lambda *_: None)
    assert not called and (tmp_path / "s.labels.npz").read_bytes() == b"hours of search"


def test_soft_targets_refuse_labels_without_values_naming_the_file_before_reading_on(tmp_path):
    from training.checkpoint import policy_entries, save_checkpoint

    labels = made_up(20, values=False, matches=4)
    labels["observation"] *= 0  # (within the game's bounds)
    path = distill.save_labels(tmp_path / "old.labels.npz", labels, "search:samples=4")
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(student(), 0))
    with pytest.raises(LabelsError, match="labels.npz' has no teacher's values"):
        distill.run(distill.Args(init=str(init), labels=str(path), epochs=1, temperature=2.0,
                                 out=str(tmp_path / "s.pt"), log_dir=str(tmp_path / "runs")),
                    log=lambda *_: None)


def test_the_matches_held_out_are_drawn_with_the_seed():
    match = np.repeat(np.arange(10), 10)
    held = {tuple(np.unique(match[distill.holdout_split(
        match, 100, torch.Generator().manual_seed(seed))[0].numpy()])) for seed in range(8)}
    assert len(held) > 2 and all(len(matches) == 1 for matches in held)


@pytest.mark.parametrize("temperature", [0, 0.0, distill.MIN_TEMPERATURE])
def test_hard_labels_and_the_smallest_temperature_are_settings(temperature):
    assert distill.Args(temperature=temperature).temperature == temperature


@pytest.mark.parametrize("field, good, bad", [
    ("epochs", 10_000, 10_001), ("seed", 2 ** 63 - 1, 2 ** 63), ("workers", 64, 65),
    ("init", "x", ""), ("labels", [f"f{i}.npz" for i in range(64)],
                        [f"f{i}.npz" for i in range(65)])])
def test_each_setting_s_bound_is_its_last_value(field, good, bad):
    more = {"num_envs": 128} if field == "workers" else {}
    assert getattr(distill.Args(**{field: good}, **more), field) == good
    with pytest.raises(ValueError, match=field):
        distill.Args(**{field: bad}, **more)


def test_several_collection_options_with_labels_are_named_together():
    with pytest.raises(ValueError, match="--decisions, --workers only set how labels are "
                                         "collected, .*: drop them, or drop --labels"):
        distill.Args(labels=["a.npz"], decisions=5, workers=2)
