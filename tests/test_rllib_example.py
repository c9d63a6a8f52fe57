"""The RLlib example (``examples/rllib_ppo.py``): its modules build without deprecation notices,
one PPO iteration on a local Ray respects the masks and exports the policy it trained, and its
command line bounds the options that size a run (env runners, CPUs, a cluster's address) before
Ray starts.  Needs the [rllib] extra (``.venv-rllib``); the env itself: ``test_rllib.py``."""

import logging

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the [rllib] extra (.venv-rllib)")

import torch  # noqa: E402

from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.arena import evaluate  # noqa: E402
from sevenrocks_env.policy import load_policy  # noqa: E402

from rllib_example import load_example  # noqa: E402


@pytest.fixture(scope="module")
def rllib_ppo():
    return load_example()


class Records(logging.Handler):
    """Collects the records that pass a logger's filters (ray's loggers do not propagate to
    pytest's caplog)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_modules_build_without_deprecation_notices(rllib_ppo):
    """The documented constructor (an RLModuleSpec with spaces and model_config); RLlib's own
    internal RLModuleConfig notice (ray-project/ray#51630) is the one message filtered."""
    config = rllib_ppo.build_config(hidden_sizes=(16,))
    logger = logging.getLogger("ray._common.deprecation")
    records = Records()
    logger.addHandler(records)
    try:
        multi = config.rl_module_spec.build()
    finally:
        logger.removeHandler(records)
    assert isinstance(multi, rllib_ppo.QuietMultiRLModule)
    assert isinstance(multi[rllib_ppo.POLICY_ID], rllib_ppo.MaskedPolicyModule)
    assert records.messages == []
    # the filter drops that one notice only
    drop = rllib_ppo._DropRLModuleConfigNotice()
    for text, kept in (("DeprecationWarning: `RLModule(config=[RLModuleConfig object])` has been "
                        "deprecated.", False),
                       ("DeprecationWarning: `something_else` has been deprecated.", True)):
        record = logging.LogRecord(logger.name, logging.WARNING, __file__, 0, text, None, None)
        assert drop.filter(record) is kept


def test_the_module_takes_hidden_sizes_only_and_export_says_what_it_needs(rllib_ppo):
    """``hidden_sizes=[]`` was an IndexError deep in PolicyNet; exporting another module class
    (RLlib's ActionMaskingTorchRLModule) was that IndexError too, another policy id a bare
    KeyError 'shared'."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    spaces = dict(observation_space=env.observation_spaces["player_0"],
                  action_space=env.action_spaces["player_0"])
    with pytest.raises(ValueError, match=r"hidden_sizes must be 1-8 layer widths"):
        RLModuleSpec(module_class=rllib_ppo.MaskedPolicyModule,
                     model_config={"hidden_sizes": []}, **spaces).build()

    class Learners:  # the learner group's get_weights: {module id: {weight name: array}}
        def __init__(self, weights):
            self.weights = weights

        def get_weights(self):
            return self.weights

    class Algo:
        def __init__(self, weights):
            self.learner_group = Learners(weights)

    with pytest.raises(ValueError, match=r"no RLModule 'shared' \(it has 'p'\): pass policy_id="):
        rllib_ppo.policy_net(Algo({"p": {"net.trunk.0.weight": np.zeros((4, 238))}}))
    with pytest.raises(ValueError, match="RLModule 'shared' holds no PolicyNet .*only "
                                         "MaskedPolicyModule's policies export"):
        rllib_ppo.policy_net(Algo({"shared": {"encoder.0.weight": np.zeros((4, 238))}}))


def test_one_ppo_iteration_on_local_ray_respects_masks(rllib_ppo, tmp_path, monkeypatch):
    import ray
    import ray.tune.trainable.trainable as trainable

    # an Algorithm built outside Tune makes a log folder under ~/ray_results: keep it in tmp_path
    monkeypatch.setattr(trainable, "DEFAULT_STORAGE_PATH", str(tmp_path / "ray_results"))
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        config = rllib_ppo.build_config(hidden_sizes=(32,), num_env_runners=1, train_batch_size=400,
                                        minibatch_size=200, num_epochs=1, seed=3)
        # strict here: a sampled illegal action raises and fails the iteration (RLlib's random-
        # action pre-check, which "raise" would fail, is tested on its own above)
        config.environment(env_config={**config.env_config, "illegal_action": "raise"},
                           disable_env_checking=True)
        algo = config.build_algo()
        before = {k: v.clone() for k, v in rllib_ppo.policy_net(algo).state_dict().items()}
        steps, _ = rllib_ppo.train(algo, env_steps_budget=1, max_iterations=1, log=lambda _: None)
        assert steps >= 400
        path = rllib_ppo.export_policy(algo, tmp_path / "policy.pt", steps)
        module = algo.get_module(rllib_ppo.POLICY_ID)
        algo.stop()
    finally:
        ray.shutdown()
    # the trained module gives illegal actions probability exactly 0
    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=1)
    (_, o), = obs.items()
    batch = {"obs": {k: torch.as_tensor(v)[None] for k, v in o.items()}}
    logits = module.forward_exploration(batch)["action_dist_inputs"]
    probs = torch.softmax(logits, -1)[0].detach().numpy()
    assert probs[o["action_mask"] == 0].max() == 0.0
    assert probs[o["action_mask"] == 1].sum() == pytest.approx(1.0)
    # the exported policy is the trained one (not the initial weights), and an arena agent
    agent = load_policy(path)
    exported = agent.model.state_dict()
    assert any(not torch.equal(before[k], exported[k]) for k in before)
    assert all(torch.allclose(exported[k], v) for k, v in module.net.state_dict().items())
    # ... playing what RLlib trained: the module's logits are the exported PolicyNet's, its
    # action-feature term included (the module used to leave it out: an untrained term then
    # decided the exported policy's moves)
    rng, compared = np.random.default_rng(4), 0
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        for _ in range(int(rng.integers(0, 12))):
            (agent_id, o), = obs.items()
            obs = env.step({agent_id: int(rng.choice(np.flatnonzero(o["action_mask"])))})[0]
            if not obs or len(obs) > 1:
                break
        if len(obs) != 1:
            continue
        (_, o), = obs.items()
        batch = {"obs": {k: torch.as_tensor(v)[None] for k, v in o.items()}}
        trained = module.forward_inference(batch)["action_dist_inputs"][0].detach()
        legal = torch.as_tensor(o["action_mask"]) > 0
        played, _ = agent.model(torch.as_tensor(o["observations"])[None], legal[None])
        assert torch.allclose(trained[legal], played[0].detach()[legal], atol=1e-5), seed
        compared += 1
    assert compared >= 3
    result = evaluate(agent, make_agent("random"), pairs=1, seed=0)
    assert result.matches == 2


def test_the_example_refuses_more_env_runners_than_local_cpus(rllib_ppo, capsys, tmp_path):
    """Each env runner asks Ray for a CPU: three on a one-CPU local Ray waited forever."""
    code = rllib_ppo.main(["--num-env-runners", "3", "--num-cpus", "1", "--env-steps", "100",
                           "--eval-pairs", "0", "--export", str(tmp_path / "p.pt")])
    assert code == 2 and "needs a CPU each; this local Ray has 1" in capsys.readouterr().err
    assert rllib_ppo.local_cpus() >= 1


@pytest.mark.parametrize("option, most", [("--num-cpus", 256), ("--num-envs-per-env-runner", 1024),
                                          ("--train-batch-size", 1_000_000), ("--num-epochs", 1000)])
def test_the_example_bounds_the_options_that_size_the_run(rllib_ppo, capsys, option, most):
    """Unbounded, ``--num-cpus 10**9`` or ``--train-batch-size 10**12`` hung Ray or ran it out
    of memory; refused as the command line is read, as argparse refuses a bad number."""
    parser = rllib_ppo._parser()
    assert getattr(parser.parse_args([option, str(most)]), option[2:].replace("-", "_")) == most
    for bad in (most + 1, 10 ** 12, 0):
        with pytest.raises(SystemExit) as exit:
            parser.parse_args([option, str(bad)])
        assert exit.value.code == 2
        assert f"argument {option}: must be an int in [1, {most}]" in capsys.readouterr().err
    assert f"1..{most:,}".replace(",", "") in parser.format_help().replace(",", "")


def test_the_example_bounds_its_env_runners_on_a_cluster_too(rllib_ppo, capsys):
    """With ``--address`` (a cluster) the local CPU count does not bound ``--num-env-runners``:
    the option itself does (0 samples in the driver)."""
    parser = rllib_ppo._parser()
    assert parser.parse_args(["--num-env-runners", "0"]).num_env_runners == 0
    assert parser.parse_args(["--num-env-runners", "4096"]).num_env_runners == 4096
    with pytest.raises(SystemExit):
        parser.parse_args(["--num-env-runners", "4097"])
    assert "argument --num-env-runners: must be an int in [0, 4096]" in capsys.readouterr().err


def test_the_example_refuses_num_cpus_beside_address_and_names_an_address_with_no_ray(
        rllib_ppo, capsys, monkeypatch, tmp_path):
    """--num-cpus with --address was ignored without a word; --address auto with no cluster
    running was a ConnectionError traceback."""
    import ray

    export = ["--export", str(tmp_path / "p.pt")]
    assert rllib_ppo.main(["--address", "auto", "--num-cpus", "2", *export]) == 2
    assert "--num-cpus sizes a local Ray; with --address" in capsys.readouterr().err

    def no_cluster(address=None, **_):
        raise ConnectionError(f"Could not find any running Ray instance at {address}")
    monkeypatch.setattr(ray, "init", no_cluster)
    assert rllib_ppo.main(["--address", "auto", *export]) == 1
    assert capsys.readouterr().err == ("error: --address auto: Could not find any running Ray "
                                       "instance at auto\n")


def test_the_example_refuses_an_address_where_nothing_listens_before_ray_starts(
        rllib_ppo, capsys, monkeypatch, tmp_path):
    """``--address HOST:PORT`` with nothing listening hung for minutes in Ray's own retries; it
    is now refused at once, as is an address that is neither 'auto' nor HOST:PORT."""
    import socket

    import ray

    def no_ray(**_):
        raise AssertionError("ray.init called for an address refused beforehand")
    monkeypatch.setattr(ray, "init", no_ray)
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    export = ["--export", str(tmp_path / "p.pt")]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}", f"[::1]:{port}"):
        assert rllib_ppo.main(["--address", address, *export]) == 2
        error = capsys.readouterr().err
        assert error.startswith(f"error: --address {address}: nothing accepts a connection there")
        assert "ray start --head" in error
    for address in ("head-node", "host:port", "host:0", "host:70000", ":6379"):
        assert rllib_ppo.main(["--address", address, *export]) == 2
        assert capsys.readouterr().err == (f"error: --address {address!r}: expected 'auto', "
                                           f"HOST:PORT or ray://HOST:PORT\n")
    with socket.socket() as server:  # something listens: the check lets Ray take over
        server.bind(("127.0.0.1", 0))
        server.listen()
        rllib_ppo.check_reachable(f"127.0.0.1:{server.getsockname()[1]}")
    for address in ("auto", "local"):
        rllib_ppo.check_reachable(address)


def test_build_config_carries_the_opponent_reward_and_hyperparameters(rllib_ppo):
    config = rllib_ppo.build_config(opponent="heuristic", reward="shaped", points_scale=0.5,
                                    win_reward=2.0, lr=1e-3, entropy_coeff=0.02, gamma=0.9,
                                    lambda_=0.8, num_epochs=2, seed=7, hidden_sizes=(16,))
    assert config.env_config == {"opponent": "heuristic", "reward": "shaped", "seed": 7,
                                 "points_scale": 0.5, "win_reward": 2.0}
    assert (config.lr, config.entropy_coeff, config.gamma, config.lambda_, config.num_epochs) \
        == (1e-3, 0.02, 0.9, 0.8, 2)


def test_the_example_exports_the_policy_id_it_is_given(rllib_ppo, tmp_path):
    """export_policy(policy_id=...) exports that module (it looked for 'shared' only)."""
    from sevenrocks_env.policy import PolicyNet

    net = PolicyNet([8])
    weights = {"p": {f"net.{key}": value.numpy() for key, value in net.state_dict().items()}}
    algo = type("Algo", (), {"learner_group": type("Learners", (), {
        "get_weights": lambda self: weights})()})()
    path = rllib_ppo.export_policy(algo, tmp_path / "p.pt", policy_id="p")
    loaded = load_policy(path).model
    assert loaded.hidden_sizes == [8]
    for key, value in net.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
