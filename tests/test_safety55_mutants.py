"""Mutation audit (safety55) of the loaders of untrusted files: tests for the gaps found in the
pickle scan, the checkpoint's agent fingerprints (``training.agent_files``), the config field
types, the policy settings, the layout rules (R3-R5) and the record writer."""

import importlib
import pickle
import pickletools

import pytest

from sevenrocks_env.pickle_scan import PickleExpansionError, expanded_size


# --- pickle_scan ------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [0, 1, 2])
def test_memo_references_count_in_every_protocol(protocol):
    """Protocol 0 writes its memo with the text opcodes PUT/GET, protocol 1 with BINPUT/BINGET:
    a safe loader reads both, so a bomb in either is counted (and refused)."""
    shared: list = [1, 2]
    data = pickle.dumps([shared] * 10, protocol=protocol)
    assert expanded_size(data, 10**6)[1] == 1 + 10 * 3
    dag: list = []
    for _ in range(40):
        dag = [dag, dag]
    with pytest.raises(PickleExpansionError, match="expand to more than"):
        expanded_size(pickle.dumps(dag, protocol=protocol), 10**6)


def test_the_opcode_count_is_the_number_of_opcodes():
    for value in (None, [1, 2, (3, "x")], {"a": [1.5]}):
        data = pickle.dumps(value, protocol=2)
        assert expanded_size(data, 10**6)[0] == len(list(pickletools.genops(data)))


def test_the_nesting_bound_is_two_hundred():
    """docs: a checkpoint nests about 10 deep; the scan allows 200 levels and no more."""
    value: object = ()
    for _ in range(199):
        value = (value,)
    expanded_size(pickle.dumps(value, protocol=2), 10**6)
    with pytest.raises(PickleExpansionError, match="nested more than 200 deep"):
        expanded_size(pickle.dumps((value,), protocol=2), 10**6)


# --- training.agent_files: the checkpoint's fingerprints piece and the resume check ------------

from sevenrocks_env.driver import AgentError  # noqa: E402
from sevenrocks_env.policy import CheckpointError  # noqa: E402
from training import agent_files  # noqa: E402
from training.config_yaml import ConfigError  # noqa: E402

DIGEST = "0123456789abcdef" * 4


def test_fingerprints_piece_absent_or_a_bounded_dict():
    agent_files.check_fingerprints(None, 4, "ck.pt")   # written before the piece was kept
    full = {f"ckpt:f{i}.pt": DIGEST for i in range(4 + agent_files.EXTRA_SPECS)}
    agent_files.check_fingerprints(full, 4, "ck.pt")
    with pytest.raises(CheckpointError, match="a dict of at most 100 agent specs"):
        agent_files.check_fingerprints(dict(full, extra=DIGEST), 4, "ck.pt")
    assert agent_files.EXTRA_SPECS == 96  # two lists of 32 specs and room for more
    with pytest.raises(CheckpointError, match="must be a dict"):
        agent_files.check_fingerprints([("ckpt:a.pt", DIGEST)], 4, "ck.pt")


@pytest.mark.parametrize("spec, digest", [
    ("ckpt:a.pt", DIGEST.upper()), ("ckpt:a.pt", DIGEST[:32]), ("ckpt:a.pt", DIGEST + "\n"),
    ("ckpt:a.pt", DIGEST + "00"), ("ckpt:a.pt", DIGEST.encode()), ("ckpt:a.pt", 7),
    (7, DIGEST), (b"ckpt:a.pt", DIGEST), ("c" * 4097, DIGEST)])
def test_fingerprints_map_short_specs_to_lower_case_sha256(spec, digest):
    with pytest.raises(CheckpointError, match="must map agent specs to SHA-256 digests"):
        agent_files.check_fingerprints({spec: digest}, 4, "ck.pt")
    agent_files.check_fingerprints({"c" * 4096: DIGEST}, 4, "ck.pt")


@pytest.fixture
def weights(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.pt").write_bytes(b"weights")
    return tmp_path / "x.pt"


def test_a_resume_whose_agents_load_other_files_is_refused(weights):
    now = agent_files.fingerprint("ckpt:x.pt", "opponents")
    assert now is not None
    same = {"ckpt:x.pt": now}
    agent_files.check_unchanged(same, same, same, {"ckpt:x.pt"}, "ck.pt")   # unchanged
    agent_files.check_unchanged(None, same, same, set(), "ck.pt")         # not checked
    other = {"ckpt:x.pt": now[:16] + DIGEST[16:]}   # the same first 16 digits shown
    with pytest.raises(ConfigError, match="'ckpt:x.pt' loads other weights") as error:
        agent_files.check_unchanged(other, same, {}, set(), "ck.pt")
    assert error.value.key == "opponents" and "--set opponents=[...] without it" in str(error.value)
    with pytest.raises(ConfigError, match="a match in progress plays it") as error:
        agent_files.check_unchanged(other, same, {}, {"ckpt:x.pt"}, "ck.pt")
    assert "put that file back, or start a new run" in str(error.value)
    with pytest.raises(ConfigError, match="eval_agents 'ckpt:x.pt'") as error:
        agent_files.check_unchanged(other, {}, same, set(), "ck.pt")
    assert error.value.key == "eval_agents"


def test_saved_digests_are_found_under_another_spelling_only(weights):
    # the same agent spelt otherwise (its files unreadable now: found by the spec's text)
    saved = {"sample:policy=/nonexistent/a.pt,temperature=1": DIGEST}
    assert agent_files.saved_digest(saved, "sample:policy=/nonexistent/a.pt") == DIGEST
    # two specs whose files cannot be read are not the same agent
    assert agent_files.saved_digest({"ckpt:/nonexistent/a.pt": DIGEST},
                                    "ckpt:/nonexistent/b.pt") is None
    # the same file by another path; the exact spelling first
    other = "1" * 64
    assert agent_files.saved_digest({"ckpt:./x.pt": DIGEST}, "ckpt:x.pt") == DIGEST
    assert agent_files.saved_digest({"ckpt:./x.pt": DIGEST, "ckpt:x.pt": other},
                                    "ckpt:x.pt") == other


def test_eval_agents_whose_files_change_during_a_session_are_refused(weights):
    loaded = agent_files.fingerprints(["greedy", "ckpt:x.pt", "ckpt:x.pt"], "eval_agents")
    assert list(loaded) == ["ckpt:x.pt"]   # rule-based agents load no files
    agent_files.check_session_files(loaded, ["greedy", "ckpt:x.pt"], "eval_agents")
    agent_files.check_session_files({}, ["ckpt:x.pt"], "eval_agents")  # none kept: unchecked
    weights.write_bytes(b"other weights")
    with pytest.raises(AgentError, match="eval_agents 'ckpt:x.pt' loads other weights"):
        agent_files.check_session_files(loaded, ["ckpt:x.pt"], "eval_agents")


def test_an_unreadable_file_is_a_config_error_naming_the_field():
    with pytest.raises(ConfigError, match=r"^eval_agents: cannot read checkpoint") as error:
        agent_files.fingerprint("ckpt:/nonexistent/a.pt", "eval_agents")
    assert error.value.key == "eval_agents"


def test_opponents_gone_names_only_missing_files(weights):
    missing = [f"ckpt:/nonexistent/{i}.pt" for i in range(4)]
    keys = ["greedy"] * 20 + ["past#1", "ckpt:x.pt", "sample:bogus=1", "",
                              "ckpt:/nonexistent/" + "a" * 4090] + missing
    gone = agent_files.unreadable_opponents({"opponents": keys})
    assert [item.split(" ")[0] for item in gone] == [repr(spec) for spec in missing]
    error = agent_files.opponents_gone({"opponents": keys})
    assert isinstance(error, ConfigError) and error.key == "opponents"
    assert all(repr(spec) in str(error) for spec in missing[:3]) and missing[3] not in str(error)
    assert agent_files.opponents_gone({"opponents": ["greedy", "ckpt:x.pt"]}) is None
    for engine in (None, missing, {"opponents": "ckpt:/nonexistent/0.pt"}):
        assert agent_files.unreadable_opponents(engine) == []


# --- policy_settings ---------------------------------------------------------------------------

from sevenrocks_env import policy_settings  # noqa: E402


def test_negative_seeds_wrap_and_stay_distinct():
    """Seeds outside [0, 2**64) wrap modulo 2**64: -1 and 1 are different generators."""
    assert policy_settings.generator_seed(-1) == 2 ** 64 - 1
    assert policy_settings.generator_seed(-5) != policy_settings.generator_seed(5)
    assert policy_settings.generator_seed(2 ** 64 + 3) == 3


# --- training.config_types: each field type on its own ----------------------------------------

from pydantic import TypeAdapter, ValidationError  # noqa: E402

from training import config_types as ct  # noqa: E402


def _ok(kind, value):
    return TypeAdapter(kind).validate_python(value)


def _refused(kind, value, match=None):
    with pytest.raises(ValidationError, match=match):
        TypeAdapter(kind).validate_python(value)


def test_run_names_are_plain_folder_names_of_at_most_100_characters():
    assert _ok(ct.RunName, "a" * 100) == "a" * 100
    assert _ok(ct.RunName, "") == ""   # no name: the run's default
    for bad in ("a" * 101, ".x", "..", "a..b", "a/b", "a\\b", "x y", "a\x00", b"run", 7):
        _refused(ct.RunName, bad)
    _refused(ct.RunName, "../x", "must be a plain folder name")


def test_devices_are_cpu_cuda_or_cuda_with_an_index_below_100():
    for good in ("cpu", "cuda", "cuda:0", "cuda:99"):
        assert _ok(ct.Device, good) == good
    for bad in ("cuda:100", "mps", "cpu ", "cuda:1;x", "CPU"):
        _refused(ct.Device, bad, "must be 'cpu', 'cuda' or 'cuda:N'")


def test_ints_are_whole_numbers_in_their_bounds():
    kind = ct.Int(1, 10)
    assert [_ok(kind, v) for v in (1, 10, 5.0, "5e0", "1E1")] == [1, 10, 5, 5, 10]
    for bad in (0, 11, True, 5.5, "5", "5.0", float("inf"), float("nan"), None):
        _refused(kind, bad)
    big = ct.Int(0, 2 ** 64)
    assert _ok(big, float(2 ** 53)) == 2 ** 53
    _refused(big, float(2 ** 53 + 2))   # past 2**53 a float is no longer every whole number


def test_reals_are_finite_numbers_in_their_bounds():
    kind = ct.Real(0, 1)
    assert [_ok(kind, v) for v in (0, 1, 0.5, "1e-4", "5E-1")] == [0, 1, 0.5, 1e-4, 0.5]
    for bad in (-0.01, 1.01, True, "x"):
        _refused(kind, bad)
    for bad in ("nan", "inf", float("inf"), float("-inf"), float("nan")):
        _refused(kind, bad, "must be a finite number")
    positive = ct.Positive(2)
    assert _ok(positive, 2) == 2 and _ok(positive, 1e-9) == 1e-9
    for bad in (0, 0.0, -1, 2.01):
        _refused(positive, bad)
    _refused(positive, "inf", "must be a finite number")


def test_flags_and_folders():
    assert _ok(ct.Flag, True) is True
    for bad in ("yes", "true", 1, 0):
        _refused(ct.Flag, bad)
    assert _ok(ct.Folder, "runs") == "runs"
    for bad in ("", "runs\x00x", "a" * 1025):
        _refused(ct.Folder, bad)


def test_spec_lists_are_ordered_bounded_and_stripped():
    assert _ok(ct.Specs, None) == []
    assert _ok(ct.Specs, " greedy ") == ["greedy"]
    assert _ok(ct.Specs, ["random", " greedy"]) == ["random", "greedy"]
    assert len(_ok(ct.Specs, ["greedy"] * 32)) == 32
    _refused(ct.Specs, ["greedy"] * 33)
    _refused(ct.Specs, ["x" * 1025])
    for unordered in ({"greedy"}, frozenset({"greedy"}), {"greedy": None}):
        _refused(ct.Specs, unordered, "must be a list \\(in order\\)")
    assert _ok(ct.NonEmptySpecs, "greedy") == ["greedy"]
    for empty in (None, []):
        _refused(ct.NonEmptySpecs, empty)


def test_widths_lists_are_bounded():
    assert _ok(ct.Widths, 64) == [64]
    assert _ok(ct.Widths, [4096] * 8) == [4096] * 8
    for bad in ([], None, [4097], [0], [1] * 9, [True], {64}):
        _refused(ct.Widths, bad)
    assert _ok(ct.ScorerWidths, [1024] * 4) == [1024] * 4
    for bad in ([], [1025], [0], [1] * 5):
        _refused(ct.ScorerWidths, bad)


def test_a_negative_device_index_is_a_type_error_naming_device():
    """Only a non-negative int is torch's shorthand for a CUDA device; -1 is no device (torch
    would raise its own RuntimeError)."""
    with pytest.raises(TypeError, match="device must be a str or torch.device"):
        policy_settings.policy_device(-1)


# --- extras.needs_torch ------------------------------------------------------------------------

from sevenrocks_env.extras import needs_torch  # noqa: E402


def test_only_a_missing_torch_is_reported_as_needing_pytorch():
    with pytest.raises(ImportError, match=r"^the plot needs PyTorch \(torch is missing\): pip "
                                          r"install -e \"\.\[train\]\"$"):
        with needs_torch("the plot"):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
    with pytest.raises(ModuleNotFoundError) as missing:   # another package: raised as it is
        with needs_torch("the plot"):
            importlib.import_module("sevenrocks_no_such_module")
    assert missing.value.name == "sevenrocks_no_such_module"
    with pytest.raises(ImportError) as error:   # torch is there, a name in it is not
        with needs_torch("the plot"):
            exec("from torch import sevenrocks_no_such_name", {})
    assert error.value.name == "torch" and "needs PyTorch" not in str(error.value)
