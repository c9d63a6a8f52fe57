"""examples/openspiel_dqn.py: OpenSpiel's DQN trains on Seven Rocks and plays in the arena."""

from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")
torch = pytest.importorskip("torch", reason="OpenSpiel's PyTorch DQN needs torch (the [train] extra)")
pytest.importorskip("open_spiel.python.pytorch.dqn",
                    reason="OpenSpiel's PyTorch DQN does not import (it needs torch and dm-tree)")

from open_spiel.python import rl_environment  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.arena import evaluate, play_match  # noqa: E402
from sevenrocks_env.observation import OBS_SIZE, OFFSETS  # noqa: E402
from sevenrocks_env.openspiel import GAME_NAME  # noqa: E402
from sevenrocks_env.tiles import NUM_ACTIONS, NUM_TILES  # noqa: E402
from script_modules import load_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str):
    return load_module(path, name)


example = _module(ROOT / "examples" / "openspiel_dqn.py", "openspiel_dqn")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A smoke training (learning starts after 64 transitions) saved to a file; also the
    four learners it made."""
    made, make_learners = [], example.make_learners
    example.make_learners = lambda *args, **kwargs: made.append(make_learners(*args, **kwargs)) \
        or made[-1]
    try:
        network, decisions, _ = example.train(steps=400, seed=3, batch_size=32, min_buffer=64)
    finally:
        example.make_learners = make_learners
    path = tmp_path_factory.mktemp("osdqn") / "q.pt"
    example.save(network, path, example.HIDDEN, decisions, 3)
    return network, decisions, path, made[0]


def test_training_counts_decisions_and_learns(trained):
    """Every counted decision is a seat's DQN step, each seat also steps once at every round's
    end, and all their transitions fill the one shared buffer the network learned from."""
    network, decisions, _, learners = trained
    assert decisions == 400 and learners[0]._q_network is network
    steps = [learner._iteration for learner in learners]
    rounds, extra = divmod(sum(steps) - decisions, 4)
    assert extra == 0 and rounds > 0 and min(steps) > rounds  # every seat decided too
    # a seat's transition runs from one of its decisions to its next (or to the round's end):
    # one per decision, less the decisions of the round still in progress awaiting their next
    buffer = learners[0]._replay_buffer
    assert all(learner._replay_buffer is buffer for learner in learners)
    assert decisions - 4 <= len(buffer) <= decisions
    fresh = example.make_learners(400, seed=3)[0]._q_network  # the same initial weights
    changed = [not torch.equal(a, b) for a, b in zip(fresh.state_dict().values(),
                                                      network.state_dict().values())]
    assert all(changed) and learners[0].loss is not None


def test_the_four_seats_share_one_network_target_and_optimiser():
    learners = example.make_learners(64, seed=0, hidden=(8,))
    first = learners[0]
    for learner in learners[1:]:
        assert learner._q_network is first._q_network
        assert learner._target_q_network is first._target_q_network
        assert learner._optimizer is first._optimizer
    assert [learner.player_id for learner in learners] == [0, 1, 2, 3]


def test_rewards_are_scaled_to_points_over_100():
    time_step = rl_environment.TimeStep(observations={}, rewards=[35.0, -35.0, 35.0, -35.0],
                                        discounts=[1.0] * 4, step_type=rl_environment.StepType.LAST)
    scaled = example._scaled(time_step)
    assert scaled.rewards == pytest.approx([0.35, -0.35, 0.35, -0.35])
    assert scaled.step_type == time_step.step_type and time_step.rewards[0] == 35.0
    first = time_step._replace(rewards=None, step_type=rl_environment.StepType.FIRST)
    assert example._scaled(first) is first


def test_the_saved_network_plays_the_arena(trained):
    network, _, path, _ = trained
    agent = example.load_agent(path)
    x = torch.rand(5, OBS_SIZE)
    assert torch.equal(agent.network(x), network(x).detach())
    result = evaluate(agent, make_agent("greedy"), pairs=1, seed=0)  # an illegal move raises
    assert result.pairs == 1
    bench = _module(ROOT / "benchmarks" / "algorithms.py", "bench_algorithms")
    loaded = bench.load_agent(f"osdqn:{path}").network
    assert torch.equal(loaded(x), network(x).detach())


def test_agent_takes_the_best_legal_q_value(trained):
    agent = example.load_agent(trained[2])
    observation = np.random.default_rng(0).random(OBS_SIZE).astype(np.float32)
    q = agent.network(torch.from_numpy(observation)[None])[0].detach().numpy()
    mask = np.zeros(NUM_ACTIONS, bool)
    legal = np.argsort(q)[:3]  # the three worst actions: the best of them must be chosen
    mask[legal] = True
    assert agent.act(observation, mask) == legal[np.argmax(q[legal])]
    with pytest.raises(ValueError, match="no legal action"):
        agent.act(observation, np.zeros(NUM_ACTIONS, bool))
    with pytest.raises(ValueError, match="shape"):
        agent.act(observation[:10], mask)


# -- the arena's observation is OpenSpiel's observation_tensor --------------------------------

class _Recorder:
    """Plays ``greedy`` and records what the arena handed it, in the order asked."""

    def __init__(self, log):
        self.name, self.log, self.inner = "recorder", log, make_agent("greedy")

    def seed(self, seed):
        pass

    def act(self, observation, action_mask):
        action = self.inner.act(observation, action_mask)
        self.log.append((np.array(observation), np.array(action_mask), action))
        return action


class _DealOf:
    """rl_environment's chance sampler dealing ``rules.deal(seed, round)`` like the arena."""

    def __init__(self, seed):
        self.deal_seed = seed

    def seed(self, seed=None):
        pass

    def __call__(self, state):
        round_index = 0 if state._match is None else len(state._match.history)
        hands, drawn = rules.deal(self.deal_seed, round_index)
        if state._drawing_opener:
            return drawn
        tiles = [t for hand in hands for t in range(NUM_TILES) if (hand >> t) & 1]
        return tiles[len(state._dealt)]


def test_arena_observation_is_the_openspiel_observation_tensor():
    seed, log = 11, []
    result = play_match([_Recorder(log) for _ in range(4)], seed)
    env = rl_environment.Environment(
        pyspiel.load_game(GAME_NAME), chance_event_sampler=_DealOf(seed),
        observation_type=rl_environment.ObservationType.OBSERVATION)
    time_step, asked = env.reset(), iter(log)
    scores_seen = set()
    while not time_step.last():
        seat = time_step.observations["current_player"]
        legal = time_step.observations["legal_actions"][seat]
        if len(legal) == 1:  # forced: the arena plays it without asking
            time_step = env.step(legal)
            continue
        observation, mask, action = next(asked)
        tensor = np.asarray(time_step.observations["info_state"][seat], np.float32)
        assert tensor.shape == (OBS_SIZE,)
        assert np.array_equal(tensor, observation)
        assert np.flatnonzero(mask).tolist() == legal
        scores_seen.add(tuple(observation[OFFSETS["scores"]]))
        time_step = env.step([action])
    assert next(asked, None) is None
    assert len(log) > 50 and len(scores_seen) > 2  # several rounds: the scores moved
    won = [1 if r > 0 else 0 for r in time_step.rewards]
    assert won == [int(rules.team_of(s) == result.winner) for s in range(4)]


# -- untrusted files --------------------------------------------------------------------------

def _saved(tmp_path, **changes):
    data = {"format": example.FORMAT, "hidden": [8], "obs_size": OBS_SIZE,
            "num_actions": NUM_ACTIONS, "env_steps": 1, "seed": 0,
            "q_network": {k: v.clone() for k, v in example.QNetwork((8,)).state_dict().items()}}
    data.update(changes)
    path = tmp_path / "q.pt"
    torch.save(data, path)
    return path


def test_a_well_formed_small_file_loads(tmp_path):
    assert example.load_agent(_saved(tmp_path)).network.model[0][0].out_features == 8


@pytest.mark.parametrize("changes, message", [
    ({"format": "something else"}, "not an OpenSpiel DQN file"),
    ({"hidden": [10 ** 9]}, "'hidden' must be"),
    ({"hidden": []}, "'hidden' must be"),
    ({"obs_size": 100}, "observations of 100 floats"),
    # a tensor there made the comparison a RuntimeError ("Boolean value of Tensor ...")
    ({"obs_size": torch.tensor([OBS_SIZE, OBS_SIZE])}, "observations of <Tensor>"),
    ({"num_actions": float(NUM_ACTIONS)}, "and 113.0 actions"),
    ({"q_network": {"model.0.0.weight": torch.zeros(8, OBS_SIZE)}}, "must hold the tensors"),
    ({"q_network": [1, 2]}, "must hold the tensors"),
    # an int key beside the names: sorting them was a TypeError
    ({"q_network": {**example.QNetwork((8,)).state_dict(), 7: torch.zeros(1)}},
     "unexpected or not a dict: 7$"),
    # long values were repeated whole (200,000 characters)
    ({"obs_size": "A" * 200_000}, "observations of 'AAAA"),
    ({"hidden": list(range(50_000))}, r"got \[0, 1, 2"),
])
def test_bad_fields_are_refused(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message) as info:
        example.load_agent(_saved(tmp_path, **changes))
    assert len(str(info.value)) < 1000, len(str(info.value))


def test_wrong_shapes_and_values_are_refused(tmp_path):
    weights = example.QNetwork((8,)).state_dict()
    wrong = {**weights, "model.1.weight": torch.zeros(5, 8)}
    with pytest.raises(ValueError, match=r"model.1.weight must have shape \(113, 8\), got \(5, 8\)"):
        example.load_agent(_saved(tmp_path, q_network=wrong))
    bad = weights["model.1.bias"].clone()
    bad[0] = float("nan")
    with pytest.raises(ValueError, match="model.1.bias must hold finite values$"):
        example.load_agent(_saved(tmp_path, q_network={**weights, "model.1.bias": bad}))
    # a sparse tensor was a NotImplementedError from torch.isfinite
    sparse = {**weights, "model.1.weight": weights["model.1.weight"].to_sparse()}
    with pytest.raises(ValueError, match=r"model.1.weight must be a dense float32 .*sparse"):
        example.load_agent(_saved(tmp_path, q_network=sparse))
    # float64 weights passed the finite check and loaded as inf (1e300 in float32)
    wide = {**weights, "model.1.bias": weights["model.1.bias"].double()}
    wide["model.1.bias"][1] = 1e300
    with pytest.raises(ValueError, match=r"model.1.bias must be a dense float32 .*got torch.float64"):
        example.load_agent(_saved(tmp_path, q_network=wide))
    # finite weights whose Q-values overflow loaded, and the agent played its first legal move
    huge = {key: torch.full_like(value, 3e38) for key, value in weights.items()}
    with pytest.raises(ValueError, match="Q-values are not finite"):
        example.load_agent(_saved(tmp_path, q_network=huge))


class Payload:
    """An arbitrary object: a pickle of it must not load under weights_only."""


def test_corrupt_foreign_and_missing_files_are_refused(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00not a torch file" * 10)
    with pytest.raises(ValueError, match="not a torch weights file"):
        example.load_agent(garbage)
    pickled = tmp_path / "object.pt"
    torch.save({"format": example.FORMAT, "payload": Payload()}, pickled)
    with pytest.raises(ValueError, match="not a torch weights file"):
        example.load_agent(pickled)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(_saved(tmp_path).read_bytes()[:500])
    with pytest.raises(ValueError, match="not a torch weights file"):
        example.load_agent(truncated)
    with pytest.raises(ValueError, match="no such file"):
        example.load_agent(tmp_path / "missing.pt")


def test_a_pickle_that_would_take_long_to_build_is_refused_before_unpickling(tmp_path):
    """``osdqn:PATH`` files come from others: read as the project's checkpoints are, the pickle
    scan refuses a hash bomb (a dict key made of a tuple chain of depth 20 built from memo
    references; torch.load alone spent seconds on it, and days at depth 40)."""
    import zipfile

    bomb = b"\x80\x02}(X\x01\x00\x00\x00k](" + b")q\x01"  # {"k": [(), t1, ...], t20: 0}
    for level in range(1, 21):  # t_level = (t_level-1, t_level-1): BINGET x2, TUPLE2, BINPUT
        bomb += b"h" + bytes([level]) + b"h" + bytes([level]) + b"\x86q" + bytes([level + 1])
    bomb += b"eh" + bytes([21]) + b"K\x00u."
    saved = _saved(tmp_path)
    with zipfile.ZipFile(saved) as archive:
        entries = [(info.filename, archive.read(info)) for info in archive.infolist()]
    bombed = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bombed, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            archive.writestr(name, bomb if name.endswith("/data.pkl") else data)
    with pytest.raises(ValueError, match="not a torch weights file .*would expand"):
        example.load_agent(bombed)


def test_the_largest_seed_seeds_every_seat():
    """--seed takes up to 2**32 - 1 and seat s was seeded seed + s: past numpy's range, a
    traceback from inside OpenSpiel."""
    assert len(example.make_learners(64, 2**32 - 1)) == 4
