"""Function-preserving edits of a policy network (``training.networks``): ``widen``, a student
with wider layers that starts as the policy it was widened from, and ``training.distill
--hidden-sizes``, which trains one; ``sharpen``, the same policy at a lower temperature, and the
trainer's ``init_temperature``, which starts a fine-tune from it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import MissingValueHead, PolicyNet, load_policy, probe_positions, \
    read_checkpoint  # noqa: E402
from training import distill  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402
from training.config import ConfigError, load_config  # noqa: E402
from training.networks import build_networks, sharpen, warm_start, widen  # noqa: E402
from policy_files import trained_looking  # noqa: E402


NETWORKS = {
    "bilinear": lambda: PolicyNet((32, 24), action_features=2),
    "mlp scorer": lambda: PolicyNet((32, 24), action_features=2, action_scorer="mlp",
                                    scorer_sizes=(16,)),
    "no action features": lambda: PolicyNet((32, 24), action_features=0),
    "three layers": lambda: PolicyNet((16, 16, 8), action_features=2),
}


@pytest.mark.parametrize("kind,more", [*((kind, 20) for kind in NETWORKS),
                                       ("bilinear", (0, 16)), ("bilinear", (16, 0)),
                                       ("three layers", (0, 8, 0))])
def test_the_wider_network_plays_the_same_policy_and_its_new_units_can_learn(kind, more):
    """Every layer wider, or some (a layer as wide as before below or above a wider one)."""
    torch.manual_seed(3)
    narrow = trained_looking(NETWORKS[kind]())
    more = [more] * len(narrow.hidden_sizes) if isinstance(more, int) else more
    sizes = [size + extra for size, extra in zip(narrow.hidden_sizes, more)]
    wide = widen(narrow, sizes)
    assert wide.hidden_sizes == sizes
    assert wide.model_config() == narrow.model_config() | {"hidden_sizes": sizes}
    obs, mask = probe_positions()
    with torch.no_grad():
        (logits, values), (wide_logits, wide_values) = narrow(obs, mask), wide(obs, mask)
    assert torch.allclose(wide_logits, logits, atol=1e-5)
    assert torch.allclose(wide_values, values, atol=1e-5)
    # the new units are live: fresh incoming weights, and the zero weights out of them get a
    # gradient (all zeros both ways would keep them dead for good)
    wide.train()
    logits, _ = wide(obs, mask)
    torch.where(mask, logits, 0).square().sum().backward()
    layers = [*wide.trunk[::2], wide.policy_head]
    for index, (old, new) in enumerate(zip(narrow.hidden_sizes, sizes)):
        if new > old:
            assert layers[index].weight[old:].abs().sum() > 0, "new units read nothing"
            out_of_new = layers[index + 1].weight.grad[:, old:]
            assert out_of_new.abs().sum() > 0, "no gradient out of the new units"


def test_a_network_without_value_head_stays_without_one():
    narrow = trained_looking(PolicyNet((32, 24)))
    narrow.value_head = MissingValueHead()
    wide = widen(narrow, (40, 40))
    assert isinstance(wide.value_head, MissingValueHead)
    assert wide.model_config()["value_head"] is False


@pytest.mark.parametrize("sizes", [(16, 24), (32,), (32, 24, 24)])
def test_narrower_layers_or_another_depth_are_refused(sizes):
    with pytest.raises(ValueError, match=r"as many layers, none narrower"):
        widen(PolicyNet((32, 24)), sizes)


def test_distill_trains_a_wider_student_that_starts_as_the_init(tmp_path):
    torch.manual_seed(2)
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 0))
    labels = distill.collect(load_policy(str(init)).model, distill.make_teacher("search:samples=4"),
                             60, num_envs=8, seed=3, log=lambda *_: None)
    path = distill.save_labels(tmp_path / "l.npz", labels, "search:samples=4")
    init_agreement = distill.agreement_on(
        load_policy(str(init)).model,
        *(torch.from_numpy(labels[key]) for key in ("observation", "action_mask", "action")))
    out = tmp_path / "wide.pt"
    info = distill.run(distill.Args(init=str(init), labels=str(path), hidden_sizes=[48, 40],
                                    epochs=1, out=str(out), log_dir=str(tmp_path / "runs")),
                       log=lambda *_: None)
    assert info["agreement_before"] == pytest.approx(init_agreement)
    assert read_checkpoint(out)["model_config"]["hidden_sizes"] == [48, 40]
    assert load_policy(str(out)).model.hidden_sizes == [48, 40]
    assert info["args"]["hidden_sizes"] == [48, 40]


def test_a_narrower_student_is_refused_before_any_file_is_written(tmp_path):
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 0))
    out = tmp_path / "never.pt"
    args = distill.Args(init=str(init), hidden_sizes=[16, 32], out=str(out),
                        log_dir=str(tmp_path / "runs"), decisions=10)
    with pytest.raises(ValueError, match=r"^--hidden-sizes 16 32: .*init.pt holds layers "
                                         r"\[32, 32\]; give 2 widths, none narrower"):
        distill.run(args, log=lambda *_: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["init.pt"]


@pytest.mark.parametrize("argv,line", [
    (["--hidden-sizes", "0"], "error: argument --hidden-sizes: must be an int in [1, "),
    (["--hidden-sizes", "64", "x"], "error: argument --hidden-sizes: must be an int, got 'x'"),
])
def test_the_command_line_refuses_bad_widths_in_one_line(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        distill.main(argv + ["--out", "/nonexistent/never-written.pt"])
    assert exit_.value.code == 2
    assert line in capsys.readouterr().err


def test_hidden_sizes_with_epochs_0_is_refused_when_made():
    with pytest.raises(ValueError, match="--epochs 0 trains no student"):
        distill.Args(hidden_sizes=[512, 512], epochs=0)


# -- sharpen and init_temperature -----------------------------------------------------------------

@pytest.mark.parametrize("kind", NETWORKS)
def test_sharpen_divides_the_logits_and_keeps_the_argmax(kind):
    torch.manual_seed(5)
    network = trained_looking(NETWORKS[kind]())
    obs, mask = probe_positions()
    with torch.no_grad():
        before, values = network(obs, mask)
        sharpen(network, 0.25)
        after, values_after = network(obs, mask)
    legal = mask.bool()
    assert torch.allclose(after[legal], before[legal] * 4, rtol=1e-5, atol=1e-4)
    assert torch.equal(torch.where(legal, after, -torch.inf).argmax(1),
                       torch.where(legal, before, -torch.inf).argmax(1))
    assert torch.equal(values, values_after)


@pytest.mark.parametrize("temperature", [0, -1.0, float("nan"), True])
def test_sharpen_refuses_a_temperature_it_cannot_divide_by(temperature):
    network = PolicyNet((8,), action_features=2)
    before = [parameter.clone() for parameter in network.parameters()]
    with pytest.raises(ValueError, match="temperature must be a number"):
        sharpen(network, temperature)
    assert all(torch.equal(a, b) for a, b in zip(before, network.parameters()))


@pytest.mark.parametrize("temperature, atol", [(0.5, 1e-4), (2.0, 1e-5)])
def test_init_temperature_starts_the_fine_tune_from_the_sharpened_policy(tmp_path, temperature,
                                                                          atol):
    """``init_temperature: T`` divides the warm-started logits by ``T``, any T in the range:
    0.5 doubles them (sharper), 2 halves them (a flatter start), not only T below 1."""
    torch.manual_seed(6)
    source = trained_looking(PolicyNet([16], action_features=2))
    path = save_checkpoint(tmp_path / "flat.pt", policy_entries(source, 0))
    obs, mask = probe_positions()
    started = {}
    for t in (1.0, temperature):
        cfg = load_config(None, [f"init_from={path}", "hidden_sizes=[16]",
                                 f"init_temperature={t}"])
        model, _, _, _ = build_networks(cfg)
        warm_start(model, cfg)
        with torch.no_grad():
            started[t] = model(obs, mask)[0][mask.bool()]
    assert torch.allclose(started[temperature], started[1.0] / temperature, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("overrides,words", [
    (["init_temperature=0.5"], "init_temperature sharpens the policy of init_from: give "
                               "init_from too"),
    (["init_from=shipped", "init_temperature=0"], r"init_temperature: .*greater than or equal "
                                                   "to 0.01"),
    (["init_from=shipped", "init_temperature=nan"], "init_temperature: must be a finite number"),
])
def test_a_bad_init_temperature_is_a_config_error_naming_it(overrides, words):
    with pytest.raises(ConfigError, match=words):
        load_config(None, overrides)
