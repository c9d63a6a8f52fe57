"""``training.distill.train_student``'s reports and memory: the training agreement it reports
is the epoch's (every minibatch, weighted by its labels), not the last minibatch's, and soft
targets are made a minibatch at a time (those of 2 M labels at once held ~2.7 GB)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from distill_stand_ins import Highest, tiny_student  # noqa: E402

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training import distill  # noqa: E402


@pytest.fixture(scope="module")
def rule_labels():
    """300 labels, each the highest legal action."""
    return distill.collect(tiny_student(), Highest(), 300, num_envs=16, seed=4,
                           log=lambda *_: None)


def test_the_training_agreement_reported_is_the_epochs(rule_labels):
    """With a step too small to change the weights, the epoch's agreement is the student's on
    every training label; the last minibatch (one label here) is 0 or 1, and neither is the
    unweighted mean of the two minibatches' agreements."""
    torch.manual_seed(1)
    student = PolicyNet((32, 32), action_features=0)
    n = len(rule_labels["action"])
    _, train = distill.holdout_split(rule_labels["match"], n, torch.Generator().manual_seed(0))
    args = distill.Args(epochs=1, batch_size=len(train) - 1, learning_rate=1e-12, seed=0)
    expected = distill.agreement_on(
        student, *(torch.from_numpy(rule_labels[key])[train]
                   for key in ("observation", "action_mask", "action")))
    assert 0 < expected < 1
    lines = []
    result = distill.train_student(student, rule_labels, args, log=lines.append)
    assert result["epoch_train_agreement"] == pytest.approx(expected)
    assert f"agreement {expected:.3f} on the epoch's training labels" in lines[-2]
    # and the loss is the epoch's mean too, not the last (one-label) minibatch's
    obs, mask, action = (torch.from_numpy(rule_labels[key])[train]
                         for key in ("observation", "action_mask", "action"))
    with torch.no_grad():
        logits, _ = student(obs, mask)
        mean_loss = float(-distill.MaskedCategorical(logits, mask).log_prob(action).mean())
        last = float(-distill.MaskedCategorical(logits[-1:], mask[-1:]).log_prob(action[-1:]))
    assert f"mean loss {mean_loss:.3f}," in lines[-2] and f"{last:.3f}" != f"{mean_loss:.3f}"
    assert result["train_agreement_where_init_differed"] == 0  # nothing learned at 1e-12
    assert lines[-1].startswith("after training: 0.000 of the ")


def test_every_step_of_the_fit_is_handed_a_gradient_clipped_to_norm_one_half(rule_labels):
    """Observations a hundredfold make every minibatch's gradient huge (global norm ~40): each
    step of the optimizer is handed it scaled to norm 0.5, before it steps.  (Seen in the
    gradient handed over, not in the weights: Adam's first step is nearly blind to its scale.)"""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    handed = []

    def record(optimizer, args, kwargs):
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        handed.append(float(torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(grad) for grad in grads]))))

    labels = dict(rule_labels, observation=rule_labels["observation"] * 100)
    torch.manual_seed(1)
    student = PolicyNet((32, 32), action_features=0)
    hook = register_optimizer_step_pre_hook(record)
    try:
        distill.train_student(student, labels, distill.Args(epochs=1, batch_size=64, seed=0),
                              log=lambda *_: None)
    finally:
        hook.remove()
    assert len(handed) >= 3
    assert all(norm == pytest.approx(0.5, rel=1e-4) for norm in handed), handed


def test_a_gradient_that_is_not_finite_stops_the_fit_in_words_before_any_weight_changes(
        rule_labels, monkeypatch, capsys):
    """A non-finite gradient was clipped (to NaN) and stepped: every weight NaN, and a policy
    file written that no loader would take, after the whole fit.  It stops the fit, one line."""
    torch.manual_seed(1)
    student = PolicyNet((32, 32), action_features=0)
    before = {name: value.clone() for name, value in student.state_dict().items()}
    next(student.parameters()).register_hook(lambda grad: grad * float("inf"))
    with pytest.raises(FloatingPointError, match=r"epoch 1 \(after 0 samples\).*not finite; "
                       "lower --learning-rate"):
        distill.train_student(student, rule_labels, distill.Args(epochs=1, batch_size=64, seed=0),
                              log=lambda *_: None)
    assert all(torch.equal(value, before[name]) for name, value in student.state_dict().items())

    def diverges(args, log=print):
        raise FloatingPointError("the fit diverged")
    monkeypatch.setattr(distill, "run", diverges)
    assert distill.main(["--labels", "l.npz", "--out", "s.pt"]) == 1
    assert capsys.readouterr().err == "error: the fit diverged\n"


def test_soft_targets_are_made_a_minibatch_at_a_time(rule_labels, monkeypatch):
    made, soft_targets = [], distill.soft_targets

    def recorded(values, mask, temperature):
        made.append(len(values))
        return soft_targets(values, mask, temperature)

    monkeypatch.setattr(distill, "soft_targets", recorded)
    labels = dict(rule_labels)
    labels["values"] = np.where(labels["action_mask"], np.arange(113) * 20.0, 0.0
                                ).astype(np.float32)
    args = distill.Args(epochs=2, batch_size=64, temperature=5.0, seed=0)
    distill.train_student(PolicyNet((32, 32), action_features=0), labels, args,
                          log=lambda *_: None)
    assert made and max(made) <= 64, "soft targets of more than a minibatch at once"


def test_soft_targets_leave_the_values_as_they_were_and_match_softmax():
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(50, 113, generator=generator) * 30
    mask = torch.rand(50, 113, generator=generator) < 0.2
    mask[:, 0] = True
    kept = values.clone()
    targets = distill.soft_targets(values, mask, temperature=3.0)
    assert torch.equal(values, kept), "the labels' values were changed in place"
    reference = torch.softmax(torch.where(mask, values, -torch.inf) / 3.0, dim=-1)
    assert torch.allclose(targets, reference, atol=1e-6)


def test_soft_targets_of_many_labels_allocate_one_copy_of_the_values():
    """Bytes allocated while making the soft targets of 20,000 labels, in copies of the values
    (as torch's profiler counts them; a bound on the peak too): the targets themselves, not
    five tensors of that size (three at once), as before."""
    from torch.profiler import ProfilerActivity, profile
    mask = torch.zeros(20_000, 113, dtype=torch.bool)
    mask[:, ::7] = True
    values = torch.randn(20_000, 113)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiled:
        distill.soft_targets(values, mask, 1.0)
    allocated = sum(event.self_cpu_memory_usage for event in profiled.events()
                    if event.self_cpu_memory_usage > 0)
    assert allocated < 1.5 * values.nbytes, f"{allocated / values.nbytes:.2f} copies"
