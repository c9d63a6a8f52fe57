"""Hostile checkpoints (issue 15): policy files and resume files are untrusted.  Every bad one
is a :class:`CheckpointError` naming the bad piece, in a short message, before anything sized
by the file is allocated; ``ckpt:shipped`` is the packaged policy, without an untrained value
head (issue 14).  (Shipping a policy file: ``test_ship_refusals.py``, ``test_ship_card.py``;
hash bombs, archives behind archives, a second data.pkl and objects larger than the file:
``test_hostile_checkpoints_pickles.py``.)"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.policy import (  # noqa: E402
    MAX_HIDDEN_WIDTH, CheckpointError, MissingValueHead, PolicyNet, build_model,
    expected_shapes, load_policy, read_checkpoint, shipped_path)
from training.checkpoint import policy_entries, policy_only  # noqa: E402
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402


def refused(path, words=None) -> str:
    with pytest.raises(CheckpointError) as info:
        load_policy(path)
    message = str(info.value)
    assert len(message) < MESSAGE_LIMIT and "\n" not in message, message[:300]
    if words:
        assert words in message, message
    return message


# -- the shipped policy ---------------------------------------------------------------------------

def test_shipped_resolves_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    agent = load_policy("shipped")
    assert isinstance(make_agent("ckpt:shipped"), type(agent))
    assert shipped_path().is_file()


def test_a_package_without_the_shipped_policy_says_so(tmp_path, monkeypatch):
    """A wheel built from a checkout without symbolic links (Windows git's default) leaves the
    policy out; the error named a checkpoints/ path inside site-packages, as if mistyped."""
    from sevenrocks_env import policy_file

    monkeypatch.setattr(policy_file, "shipped_path", lambda: tmp_path / "sevenrocks_ppo.pt")
    with pytest.raises(CheckpointError, match=r"^the shipped policy is not installed with this "
                                              r"package \(no file .*sevenrocks_ppo\.pt.*\): a "
                                              r"wheel built from a checkout without symbolic"):
        load_policy("shipped")
    with pytest.raises(ValueError, match="the shipped policy is not installed"):
        make_agent("ckpt:shipped")


def test_shipped_policy_has_no_untrained_value_head():
    data = read_checkpoint("shipped")
    assert data["config"]["critic"] == "oracle"
    assert data["model_config"]["value_head"] is False
    assert not any(key.startswith("value_head.") for key in data["model"])
    model = load_policy("shipped").model
    assert isinstance(model.value_head, MissingValueHead)
    with pytest.raises(RuntimeError, match="no value head"):
        model.value(torch.zeros(1, 238))
    logits, values = model(torch.zeros(2, 238))
    assert logits.shape == (2, 113) and torch.isnan(values).all()


def test_policy_only_strips_the_value_head_and_keeps_the_rest_bit_for_bit():
    net = PolicyNet([16], action_features=2)
    data = dict(policy_entries(net, 5), config={"critic": "oracle"})
    small = policy_only(data)
    assert set(data["model"]) - set(small["model"]) == {"value_head.weight", "value_head.bias"}
    assert all(torch.equal(small["model"][k], v) for k, v in data["model"].items()
               if not k.startswith("value_head."))
    rebuilt = build_model(small)
    assert rebuilt.model_config()["value_head"] is False
    assert policy_only(dict(data, config={"critic": "shared"}))["model"].keys() == \
        data["model"].keys()


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", sorted(str(path.relative_to(ROOT)) for path in [
    *(ROOT / "checkpoints" / "shipped").glob("*.pt"),
    *(ROOT / "checkpoints" / "previous").glob("**/*.pt")]))
def test_every_shipped_and_previous_policy_still_loads(path):
    """Their model_config keys (hidden_sizes, action_features, value_head) are all known."""
    data = read_checkpoint(ROOT / path)
    assert set(data["model_config"]) <= {"hidden_sizes", "action_features", "value_head"}
    assert load_policy(ROOT / path).model.model_config()["hidden_sizes"] == \
        list(data["model_config"]["hidden_sizes"])


def test_missing_files_say_relative_to_what(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = refused("nope.pt")
    assert message == f"no such file: nope.pt (relative to {tmp_path})"
    for typo in ("shiped", "Shipped", "shipped.pt"):  # one that may mean the installed policy
        assert refused(typo) == (f"no such file: {typo} (relative to {tmp_path}); did you mean "
                                 "'shipped' (the installed policy)?")
    assert "did you mean" not in refused("x/shiped")  # a path in a folder is meant as one
    from sevenrocks_env.policy_file import existing_file
    with pytest.raises(ValueError) as error:  # what sb3: reads (there is no shipped sb3 model)
        existing_file(Path("shiped"))
    assert "did you mean" not in str(error.value)
    with pytest.raises(ValueError, match="no such file"):
        make_agent("ckpt:nope.pt")
    with pytest.raises(ValueError, match="cannot read checkpoint path"):  # not an OSError
        make_agent("ckpt:" + "x" * 5000)


@pytest.mark.parametrize("hidden,features,value_head", [
    ([16], 0, True), ([32, 8], 1, True), ([8, 8, 8], 2, False)])
def test_expected_shapes_match_the_real_network(hidden, features, value_head):
    net = PolicyNet(hidden, action_features=features)
    shapes = {k: tuple(v.shape) for k, v in net.state_dict().items()
              if value_head or not k.startswith("value_head.")}
    assert expected_shapes(hidden, features, value_head) == shapes


# -- bounds before allocation -------------------------------------------------------------------

@pytest.mark.parametrize("config,words", [
    ({"hidden_sizes": [100_000_000], "action_features": 0}, "hidden_sizes"),
    ({"hidden_sizes": [MAX_HIDDEN_WIDTH + 1], "action_features": 0}, "hidden_sizes"),
    ({"hidden_sizes": [16] * 9, "action_features": 0}, "hidden_sizes"),
    ({"hidden_sizes": [0], "action_features": 0}, "hidden_sizes"),  # a constant policy
    ({"hidden_sizes": [10 ** 5000], "action_features": 0}, None),  # refused by torch.load itself
    ({"hidden_sizes": [16], "action_features": 99}, "action_features"),
    ({"hidden_sizes": [16], "action_features": 0, "value_head": "no"}, "value_head"),
    ({"hidden_sizes": [4096] * 8, "action_features": 0}, "missing or unexpected"),
    ({"hidden_sizes": [4096], "action_features": 2}, "trunk.0.weight"),  # declared big, tiny weights
    ({"hidden_sizes": [16], "action_features": 2, "action_scorer": "mlp", "scorer_sizes": []},
     "scorer_sizes"),  # an mlp scorer has 1-4 layers
    # a typo was ignored, then copied into exported policies and model cards; a tensor too
    ({"hidden_sizes": [16], "action_features": 0, "activation": "gelu"},
     "model_config has unknown keys 'activation' (known: action_features, action_scorer"),
    ({"hidden_sizes": [16], "action_features": 0, "extra": torch.zeros(3)}, "unknown keys 'extra'"),
    ({"hidden_sizes": [16], "action_features": 0, 7: 1}, "unknown keys 7"),
])
def test_absurd_declared_networks_are_refused_before_building(tmp_path, monkeypatch, config, words):
    path = save_policy(tmp_path / "odd.pt", model_config=config)
    built = []
    monkeypatch.setattr(PolicyNet, "__init__", lambda self, *a, **k: built.append(a))
    refused(path, words)
    assert built == []  # nothing allocated


@pytest.mark.parametrize("edit,words", [
    (lambda w: w.update({"trunk.0.weight": torch.zeros(16, 3)}), "trunk.0.weight"),
    (lambda w: w.update({"trunk.0.weight": torch.zeros(16, 238, dtype=torch.float64)}),
     "float32"),
    (lambda w: w.pop("policy_head.bias"), "missing or unexpected"),
    (lambda w: w.update({"extra": torch.zeros(1)}), "missing or unexpected"),
    (lambda w: w.update({"trunk.0.bias": torch.full((16,), float("inf"))}), "non-finite"),
    (lambda w: w.update({"trunk.0.bias": [0.0] * 16}), "must map parameter names to tensors"),
])
def test_weights_must_fit_the_declared_network(tmp_path, edit, words):
    weights = PolicyNet([16]).state_dict()
    edit(weights)
    refused(save_policy(tmp_path / "odd.pt", model=weights), words)


def test_file_size_is_bounded(tmp_path, monkeypatch):
    import sevenrocks_env.policy_file as policy_file
    path = save_policy(tmp_path / "p.pt")
    monkeypatch.setattr(policy_file, "MAX_CHECKPOINT_BYTES", path.stat().st_size)
    assert load_policy(path)  # exactly the bound
    monkeypatch.setattr(policy_file, "MAX_CHECKPOINT_BYTES", path.stat().st_size - 1)
    refused(path, "larger than")


def damage_archive(path: Path, how: str) -> Path:
    """Rewrite the zip archive ``torch.save`` wrote at ``path`` with a few bytes of its headers
    changed, as a fuzzer found them (each made zipfile raise past the loader)."""
    data = bytearray(path.read_bytes())
    central = data.find(b"PK\x01\x02")          # the first entry's central header (data.pkl)
    if how == "encrypted":                       # every entry flagged encrypted: testzip's
        for signature, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # RuntimeError
            at = data.find(signature)
            while at >= 0:
                data[at + flags] |= 1
                at = data.find(signature, at + 4)
    elif how == "encrypted_index_only":          # only the index says so
        data[central + 8] |= 1
    elif how == "name_not_utf8":                 # flagged UTF-8: UnicodeDecodeError
        data[central + 9] |= 0x08
        data[central + 46 + 1] = 0x82
    elif how == "future_zip_version":            # "version needed" 20.5: NotImplementedError
        data[central + 6] = 0xCD
    elif how == "many_disks":                    # zip64 locator: BadZipFile outside the try
        data[data.find(b"PK\x06\x07") + 19] = 0x52
    elif how == "offset_past_any_file":          # zip64 index offset > 2**63: ValueError
        data[data.find(b"PK\x06\x06") + 55] = 0xD2
    elif how == "entry_longer_than_file":        # sizes ~4 GB: EOFError() without a message
        data[central + 20:central + 28] = struct.pack("<II", 0xFFFFFFF0, 0xFFFFFFF0)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["encrypted", "encrypted_index_only", "name_not_utf8",
                                 "future_zip_version", "many_disks", "offset_past_any_file",
                                 "entry_longer_than_file"])
def test_a_damaged_archive_is_one_checkpoint_error_with_a_reason(tmp_path, how):
    """Whatever zipfile raises on a damaged archive (RuntimeError, UnicodeDecodeError,
    NotImplementedError, BadZipFile, ValueError, an EOFError with no text) is one
    CheckpointError: "PATH is not a readable checkpoint (REASON)", the reason never empty."""
    path = damage_archive(save_policy(tmp_path / "p.pt"), how)
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    message = str(info.value)
    prefix = f"{path} is not a readable checkpoint ("
    assert message.startswith(prefix) and message.endswith(")"), message
    reason = message[len(prefix):-1]
    assert reason.strip() and not reason.rstrip().endswith(":"), message
    assert len(message) < MESSAGE_LIMIT and "\n" not in message, message[:300]
    refused(path, "is not a readable checkpoint (")  # load_policy, ckpt: say the same


def test_an_exported_policy_keeps_its_training_time(tmp_path):
    """The model card's training minutes come from ``wall_time``: shipping a shipped file keeps it."""
    from training.checkpoint import export_policy
    source = save_policy(tmp_path / "run.pt", wall_time=120.0)
    exported = export_policy(source, tmp_path / "small.pt")
    assert read_checkpoint(exported)["wall_time"] == 120.0
    assert read_checkpoint(export_policy(exported, tmp_path / "again.pt"))["wall_time"] == 120.0


def _with_a_copy_of_data_pkl(path, name_of_copy):
    """``path`` rewritten (stored) with a second copy of its ``.../data.pkl`` entry, named
    ``name_of_copy(its name)``."""
    import zipfile
    with zipfile.ZipFile(path) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
            if name.endswith("/data.pkl"):
                archive.writestr(name_of_copy(name), data)
    return path


hostile = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(),
                                                         max_size=2),
    st.sampled_from([100, 5000]).map(lambda d: 10 ** d))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["format", "obs_version", "obs_size", "num_actions", "model_config",
                        "model"]), hostile)
def test_any_value_in_any_policy_key_is_a_short_checkpoint_error(tmp_path, key, value):
    valid = policy_entries(PolicyNet([16]), 0)[key]  # obs_version=1 from st.integers() is fine
    assume(not (type(value) is type(valid) and value == valid))
    path = save_policy(tmp_path / "h.pt", **{key: value})
    refused(path)


def test_nothing_is_written_when_loading(tmp_path, monkeypatch):
    path = save_policy(tmp_path / "p.pt")
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    load_policy(path)
    refused(Path("missing.pt"))
    assert sorted(os.listdir(tmp_path)) == before
