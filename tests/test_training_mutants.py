"""Edges of the trainer's config, checkpoint and resume checks that a mutation audit found
untested (each test fails with one small change to the code it names, and passes on it)."""

from pathlib import Path

import pytest

from training.config import MAX_BATCH, ConfigError, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


def refused(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(*args, **kwargs)
    return str(info.value)


# -- training.config ------------------------------------------------------------------------

def test_a_batch_one_past_the_bound_is_refused():
    """``num_matches * num_steps`` may be exactly ``MAX_BATCH``, not one more (17 * 61681 =
    2**20 + 1: both factors within their own bounds)."""
    assert 17 * 61681 == MAX_BATCH + 1
    with pytest.raises(ConfigError, match=r"must be at most 1048576"):
        config_from_dict({"num_matches": 17, "num_steps": 61681, "num_minibatches": 1,
                          "total_steps": 10 ** 8})
    cfg = config_from_dict({"num_matches": 16, "num_steps": 65536, "num_minibatches": 1,
                            "total_steps": 10 ** 8})
    assert cfg.batch_size == MAX_BATCH


def test_a_bad_spec_after_one_with_parameters_is_not_called_a_split_parameter():
    """The "split off at a comma" hint is for ``NAME=VALUE`` after a ``kind:k=v`` spec only: a
    plain unknown spec after ``sample:policy=shipped`` gets the plain error."""
    message = refused(SMOKE, ["opponents=[sample:policy=shipped, nosuchagent]"])
    assert "unknown agent spec 'nosuchagent'" in message
    assert "looks like a parameter" not in message, message


@pytest.mark.parametrize("text", ["=5", " =5", "seed"])
def test_a_set_without_a_key_or_an_equals_sign_says_key_value(text):
    """``--set =5`` is a malformed option (no key), not an unknown key named ''."""
    message = refused(SMOKE, [text])
    assert message.startswith("--set expects key=value"), message


@pytest.mark.parametrize("key, accepted, refused_", [
    ("torch_threads", 1, 0),
    ("torch_threads", 256, 257),
    ("seed", 0, -1),
    ("hand_coef", 100.0, 100.5),
    ("clip_coef", 100.0, 100.5),
    ("num_minibatches", 1, 0),
])
def test_more_bounds_hold_at_their_edges(key, accepted, refused_):
    assert getattr(load_config(SMOKE, [f"{key}={accepted}"]), key) == accepted
    assert refused(SMOKE, [f"{key}={refused_}"]).startswith(f"--set: {key}: ")


def test_a_config_file_overrides_the_base_and_set_overrides_both(tmp_path):
    """``load_config(path, overrides, base)``: base, then the file on top, then ``--set``."""
    path = tmp_path / "c.yaml"
    path.write_text("seed: 5\nnum_steps: 16\nnum_matches: 16\ntotal_steps: 512\n")
    base = {"seed": 9, "eval_seed": 7}
    cfg = load_config(path, [], base=base)
    assert (cfg.seed, cfg.eval_seed) == (5, 7)
    assert load_config(path, ["seed=3"], base=base).seed == 3



def test_a_device_index_has_at_most_two_digits():
    assert load_config(SMOKE, ["device=cuda:12"]).device == "cuda:12"
    assert refused(SMOKE, ["device=cuda:123"]).startswith("--set: device: must be")


def test_a_null_opponents_list_is_none(tmp_path):
    """``opponents: null`` (or an empty ``opponents:``) in a file is self-play, as ``[]``."""
    path = tmp_path / "c.yaml"
    path.write_text("opponents:\nseed: 2\n")
    assert load_config(path).opponents == []
    assert load_config(SMOKE, ["opponents=null", "opponent_fraction=0"]).opponents == []



def test_a_layer_of_width_zero_is_refused():
    assert load_config(SMOKE, ["hidden_sizes=[1]"]).hidden_sizes == [1]
    assert refused(SMOKE, ["hidden_sizes=[8, 0]"]).startswith("--set: hidden_sizes[1]: ")



def test_the_scorer_has_at_most_its_maximum_of_layers():
    from sevenrocks_env.policy_scorer import MAX_LAYERS
    most = ",".join(["4"] * MAX_LAYERS)
    assert len(load_config(SMOKE, [f"scorer_sizes=[{most}]"]).scorer_sizes) == MAX_LAYERS
    assert refused(SMOKE, [f"scorer_sizes=[{most},4]"]).startswith("--set: scorer_sizes: ")



def test_a_signed_whole_number_in_e_notation_is_read():
    """YAML 1.1 leaves ``+5e6`` as text too; it is the number it shows."""
    assert load_config(SMOKE, ["total_steps=+5e6"]).total_steps == 5_000_000
    assert load_config(SMOKE, ["total_steps=+1_000e1"]).total_steps == 10_000
    # the whole text is the number: float() would read "1e1_0" as 1e10
    assert "valid integer" in refused(SMOKE, ["total_steps=1e1_0"])


def test_at_most_32_opponents():
    assert len(load_config(SMOKE, ["opponents=[" + ",".join(["greedy"] * 32) + "]"])
               .opponents) == 32
    assert refused(SMOKE, ["opponents=[" + ",".join(["greedy"] * 33) + "]"]).startswith(
        "--set: opponents: ")



@pytest.mark.parametrize("line", ["opponents: [!!binary Z3JlZWR5]", "run_name: !!binary YWI="])
def test_bytes_are_not_text(tmp_path, line):
    """YAML's ``!!binary`` is bytes: not a spec or a name (text fields are strict)."""
    path = tmp_path / "c.yaml"
    path.write_text(line + "\n")
    assert "Input should be a valid string" in refused(path)



# -- training.config_yaml -------------------------------------------------------------------

@pytest.mark.parametrize("override, kind", [
    ("seed=+010", "an octal number"),         # a sign before the 0
    ("seed=0_10", "an octal number"),         # YAML 1.1 drops the underscores first
    ("max_minutes=1:30.5", "a base-60 number"),  # a float in base 60
])
def test_numbers_yaml_1_1_reads_as_other_numbers_are_refused(override, kind):
    message = refused(SMOKE, [override])
    assert message.startswith(f"--set {override.partition('=')[0]} is not valid YAML: ")
    assert kind in message, message


def test_a_yaml_syntax_error_names_its_line_and_column(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\nhidden_sizes: [8\n")
    assert refused(path).endswith("(line 3, column 1)")


# -- training.resume ------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def _resume_error(check, *args) -> str:
    from sevenrocks_env.policy import CheckpointError
    with pytest.raises(CheckpointError) as info:
        check(*args)
    return str(info.value)


@pytest.fixture
def rng():
    from training.checkpoint import rng_state
    return rng_state()


@pytest.mark.parametrize("damage", [
    lambda s: s["python"][1].__setitem__(0, 2 ** 32),         # Python takes it, masked
    lambda s: s["numpy"].__setitem__(2, 625),                   # numpy takes it
    lambda s: s["numpy"].__setitem__(3, 2),                     # numpy takes it as "has gauss"
    lambda s: s["numpy"][1].__setitem__(0, 2 ** 32),            # would wrap in astype(uint32)
    lambda s: s["numpy"][1].__setitem__(0, -1),
    lambda s: s["numpy"].__setitem__(0, "PCG64"),               # set_state would refuse it
    lambda s: s.update(torch=s["torch"].view(1, -1)),           # torch takes a [1, n] state
    # keys with all 19,937 bits zero: taken, then every draw is 0 for ever
    lambda s: s["python"].__setitem__(1, [0x7FFFFFFF] + [0] * 623 + [624]),
    lambda s: s["numpy"].__setitem__(1, torch.zeros(624, dtype=torch.int64)),
])
def test_generator_states_the_generators_would_take_are_still_refused(rng, damage):
    """Values a generator accepts but no generator state holds (words past 32 bits, a position
    past 624, a has_gauss flag other than 0 or 1) are refused, not set in silence."""
    from training.resume import check_rng
    check_rng(rng, "f.pt")
    damage(rng)
    assert "resume piece 'rng'" in _resume_error(check_rng, rng, "f.pt")


def _cfg(**values):
    base = {"hidden_sizes": [8], "num_matches": 2, "num_steps": 16, "total_steps": 64,
            "num_minibatches": 2, "max_snapshots": 2, "critic": "shared"}
    return config_from_dict(dict(base, **values))


def _policy(cfg):
    from sevenrocks_env.policy import PolicyNet
    return PolicyNet(cfg.hidden_sizes, action_features=cfg.action_features)


def test_a_checkpoint_without_wall_time_resumes_but_a_negative_one_does_not():
    """Older checkpoints have no ``wall_time`` (0 then); a negative one is refused."""
    from training.resume import check_counters
    cfg = _cfg()
    check_counters({"update": 1, "global_step": cfg.batch_size}, cfg, "f.pt")
    message = _resume_error(check_counters, {"update": 1, "global_step": cfg.batch_size,
                                             "wall_time": -1.0}, cfg, "f.pt")
    assert "'wall_time'" in message
    check_counters({"update": 1, "global_step": cfg.batch_size, "wall_time": 1e9}, cfg, "f.pt")
    message = _resume_error(check_counters, {"update": 1, "global_step": cfg.batch_size,
                                             "wall_time": 1e9 + 1}, cfg, "f.pt")
    assert "'wall_time' must be a number of seconds in [0, 1e9], got 1000000001.0" in message


def test_weights_must_be_float32_and_have_exactly_the_network_s_names():
    from training.resume import check_weights
    weights = {"a": torch.zeros(2, 3)}
    shapes = {"a": (2, 3)}
    check_weights(weights, shapes, "f.pt", "model")
    for bad in ({"a": torch.zeros(2, 3, dtype=torch.float64)},
                {"a": torch.zeros(2, 3), "b": torch.zeros(1)}):
        assert "resume piece 'model'" in _resume_error(check_weights, bad, shapes, "f.pt",
                                                       "model")


def _pool(cfg, snapshots: int = 1) -> dict:
    weights = _policy(cfg).state_dict()
    generator = torch.Generator().get_state()
    return {"snapshots": [dict(weights) for _ in range(snapshots)],
            "generators": [generator.clone() for _ in range(snapshots)],
            "retired": [], "fixed": {}}


@pytest.mark.parametrize("damage", [
    lambda p, g, w: p.update(retired=[{"weights": w, "generator": g}] * 3),   # > num_matches
    lambda p, g, w: p.update(fixed={f"o{i}": {"torch": g} for i in range(2 + 65)}),
    lambda p, g, w: p.update(fixed={"x" * 4097: {"torch": g}}),
    lambda p, g, w: p.update(fixed={"random": {"torch": g, "other": g}}),
    lambda p, g, w: p.update(retired=[{"weights": {}, "generator": g}]),
    lambda p, g, w: p["generators"].__setitem__(0, torch.zeros(3, dtype=torch.uint8)),
    lambda p, g, w: p["generators"].__setitem__(0, g.view(1, -1)),
])
def test_pool_pieces_past_their_bounds_are_refused(damage):
    """At most ``num_matches`` retired snapshots (each a whole network), ``num_matches + 64``
    fixed opponents, names of at most 4096 characters, only 'torch'/'numpy' states."""
    from training.resume import check_pool
    cfg = _cfg()
    pool = _pool(cfg)
    check_pool(pool, cfg, "f.pt")
    damage(pool, torch.Generator().get_state(), _policy(cfg).state_dict())
    assert "resume piece 'pool'" in _resume_error(check_pool, pool, cfg, "f.pt")


def _adam(cfg):
    model = _policy(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for parameter in model.parameters():
        parameter.grad = torch.full_like(parameter, 0.01)
    optimizer.step()
    return list(model.parameters()), optimizer.state_dict()


@pytest.mark.parametrize("damage", [
    lambda s, n: s["state"].__setitem__(n, s["state"][0]),                 # one past the last
    lambda s, n: s["state"][0].update(extra=torch.zeros(1)),
    lambda s, n: s["state"][0].update(step=torch.tensor(0.0)),
    lambda s, n: s["state"][0].update(step=torch.tensor(1.0, dtype=torch.float64)),
    lambda s, n: s["param_groups"][0].pop("eps"),
    lambda s, n: s["param_groups"][0].update(weight_decay=-1.0),
    lambda s, n: (s["state"][0]["exp_avg"].fill_(1e-4), s["state"][0]["exp_avg_sq"].zero_()),
    lambda s, n: s["param_groups"].append(dict(s["param_groups"][0])),
    lambda s, n: s["param_groups"][0].update(params=list(range(n + 1))),
])
def test_adam_states_no_adam_run_writes_are_refused(damage):
    from training.resume import check_optimizer
    cfg = _cfg()
    parameters, state = _adam(cfg)
    check_optimizer(state, parameters, "f.pt")
    damage(state, len(parameters))
    assert "resume piece 'optimizer'" in _resume_error(check_optimizer, state, parameters, "f.pt")


# -- training.engine_state ------------------------------------------------------------------

@pytest.mark.parametrize("piece, corrupt, words", [
    ("counters", lambda s: s["counters"] + [[0] * 4], "counters"),              # 4 lists
    ("counters", lambda s: [c + [0] for c in s["counters"]], "counters"),        # 5 counts
    ("counters", lambda s: [[True] * 4] * 3, "counters"),                        # bools
    ("counters", lambda s: [[-1] * 4] * 3, "counters"),
    ("env_steps", lambda s: True, "env_steps"),
    ("matches", lambda s: dict(s["matches"], extra=[0] * 4), "matches must be a dict"),
    ("matches", lambda s: {**s["matches"], "turn": [2 ** 62] * 4}, "matches.turn"),
])
def test_engine_state_counts_and_fields_are_exactly_what_an_engine_writes(piece, corrupt, words):
    import copy

    from training.batched_rollout import BatchedSelfPlayEngine
    state = copy.deepcopy(BatchedSelfPlayEngine(4, seed=1).state_dict())
    state[piece] = corrupt(state)
    with pytest.raises(ValueError, match=words):
        BatchedSelfPlayEngine(4, seed=2).load_state_dict(state)


# -- training.checkpoint --------------------------------------------------------------------

@pytest.mark.parametrize("facts, words", [
    ({"global_step": 10 ** 12 + 1}, "'global_step'"),
    ({"global_step": True}, "'global_step'"),
    ({"global_step": 5, "wall_time": 10.0 ** 9 + 1}, "'wall_time'"),
    ({"global_step": 5, "wall_time": -1.0}, "'wall_time'"),
    ({"global_step": 5, "config": {"x": "y" * 70_000}}, "'config'"),
    ({"global_step": 5, "config": {"x": float("nan")}}, "'config'"),
    ({"global_step": 5, "config": [1, 2]}, "'config'"),
])
def test_run_facts_are_bounded_before_they_are_copied(facts, words):
    from sevenrocks_env.policy import CheckpointError
    from training.checkpoint import run_facts
    assert run_facts({"global_step": 10 ** 12, "wall_time": 10.0 ** 9, "config": {"a": 1}},
                     "f.pt")["global_step"] == 10 ** 12
    with pytest.raises(CheckpointError, match=words):
        run_facts(facts, "f.pt")


@pytest.mark.parametrize("text", ["not json", '{"global_step": 512, "pad": "' + "x" * 300 + '"}'])
def test_an_unreadable_or_over_long_evaluated_mark_is_no_mark(tmp_path, text):
    """The mark is read up to 200 characters and parsed; anything else is "not evaluated"."""
    from training.checkpoint import EVALUATED, check_not_complete
    (tmp_path / EVALUATED).write_text(text)
    check_not_complete(tmp_path, {"update": 2, "global_step": 512}, 2)


def test_a_checkpoint_without_the_engine_state_is_not_resumable(tmp_path):
    from sevenrocks_env.policy import CheckpointError, PolicyNet
    from training.checkpoint import load_training_checkpoint, policy_entries, save_checkpoint
    model = PolicyNet([8])
    data = dict(policy_entries(model, 0), optimizer={}, config={}, update=0, rng={})
    save_checkpoint(tmp_path / "a.pt", data)
    with pytest.raises(CheckpointError, match=r"policy-only checkpoint \(no engine\)"):
        load_training_checkpoint(tmp_path / "a.pt")
