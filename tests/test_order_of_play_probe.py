"""``benchmarks/order_of_play_probe.py``: the round's order of play as inputs, from a
collection's matches played again, and three students trained on the same labels."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import order_of_play_probe as probe  # noqa: E402
from distill_stand_ins import Highest  # noqa: E402

from sevenrocks_env.tiles import KNOCK  # noqa: E402
from training import distill_collect  # noqa: E402
from training.distill_labels import save_labels  # noqa: E402


def test_the_order_of_play_inputs():
    # actions are 4 * tile + slot; a knock between the placements
    played = [4 * 5 + 0, KNOCK, 4 * 9 + 1, 4 * 2 + 3]
    inputs = probe.order_of_play(played)
    recency, last = inputs[:28], inputs[28:].reshape(probe.LAST, 113)
    assert recency[2] == 1 and recency[9] == pytest.approx(27 / 28)
    assert recency[5] == pytest.approx(26 / 28) and np.count_nonzero(recency) == 3
    assert [int(row.argmax()) for row in last[:4]] == [4 * 2 + 3, 4 * 9 + 1, KNOCK, 4 * 5 + 0]
    assert last[:4].sum() == 4 and not last[4:].any()
    assert not probe.order_of_play([]).any()


def test_the_history_is_the_round_so_far(tmp_path):
    """Each labelled decision's inputs are those of its round's actions before it: the
    placements of the round are the tiles ``played_by`` shows, and none at a round's start."""
    from sevenrocks_env.observation import OFFSETS
    from sevenrocks_env.policy import load_policy
    labels = distill_collect.collect(load_policy("shipped").model, Highest(), 150, num_envs=4,
                                     seed=5, log=lambda *_: None)
    inputs = probe.history_inputs(dict(labels, seed=5), load_policy("shipped").model.eval())
    played = labels["observation"][:, OFFSETS["played_by"]].reshape(-1, 4, 28).sum(1) > 0
    np.testing.assert_array_equal(inputs[:, :28] > 0, played)
    opening = labels["observation"][:, OFFSETS["opening"]][:, 0] == 1
    assert opening.any() and not inputs[opening, :28].any()
    assert (inputs[~opening, 28:28 + 113].sum(1) == 1).all()  # a last action, once one was made


def test_a_smoke_run_trains_three_students_from_the_init(tmp_path, capsys):
    from sevenrocks_env.policy import load_policy
    labels = distill_collect.collect(load_policy("shipped").model, Highest(), 200, num_envs=8,
                                     seed=3, log=lambda *_: None)
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1", seed=3)
    assert probe.main(["--labels", str(path), "--init", "shipped", "--epochs", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "200 labels of teacher search:samples=1"
    rows = [line.split("|")[1:-1] for line in lines[3:]]
    assert [row[0].strip() for row in rows] == ["none", "recency", "recency + last 8"]
    assert [int(row[1]) for row in rows] == [0, 28, 28 + 8 * 113]


def test_a_file_from_another_student_is_one_line_of_error(tmp_path, capsys):
    from distill_stand_ins import tiny_student
    labels = distill_collect.collect(tiny_student(), Highest(), 100, num_envs=4, seed=3,
                                     log=lambda *_: None)
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1", seed=3)
    assert probe.main(["--labels", str(path), "--init", "shipped", "--epochs", "1"]) == 2
    assert "the student must be the collection's" in capsys.readouterr().err


def test_a_file_naming_more_envs_than_a_collection_has_is_refused(tmp_path, capsys):
    """A file's env ids (up to 2**30) size no work: past 65,536 envs it is an error."""
    from sevenrocks_env.policy import load_policy
    labels = distill_collect.collect(load_policy("shipped").model, Highest(), 40, num_envs=2,
                                     seed=3, log=lambda *_: None)
    labels["match"] = labels["match"] | ((1 << 20) << 32)  # envs 2**20 and 2**20 + 1
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1", seed=3)
    assert probe.main(["--labels", str(path), "--init", "shipped", "--epochs", "1"]) == 2
    assert "envs are 0 to 65,535, not 1,048,576 to 1,048,577" in capsys.readouterr().err


def test_the_wider_first_layer_starts_as_the_init():
    """Its extra weights start at 0: whatever the extra inputs, the init's logits."""
    from sevenrocks_env.observation import OBS_SIZE
    from sevenrocks_env.policy import load_policy
    init, wider = load_policy("shipped").model.eval(), load_policy("shipped").model.eval()
    wider.trunk = probe.WiderFirstLayer(wider.trunk, 932)
    obs = torch.rand(16, OBS_SIZE)
    extra = torch.rand(16, 932)
    with torch.no_grad():
        torch.testing.assert_close(wider(torch.cat([obs, extra], 1))[0], init(obs)[0])
        wider.trunk.extra.weight.fill_(0.01)
        assert not torch.allclose(wider(torch.cat([obs, extra], 1))[0], init(obs)[0])


def test_settings_distill_refuses_are_one_line(tmp_path, capsys):
    from sevenrocks_env.policy import load_policy
    labels = distill_collect.collect(load_policy("shipped").model, Highest(), 40, num_envs=2,
                                     seed=3, log=lambda *_: None)
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1", seed=3)
    assert probe.main(["--labels", str(path), "--init", "shipped", "--temperature", "1e-4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --temperature: ") and len(err.splitlines()) == 1, err
