"""``sb3:PATH``: a MaskablePPO zip trained on the single-agent view plays in the arena."""

import zipfile

import pytest

pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra")

import gymnasium  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.agents import make_agent, valid_specs  # noqa: E402
from sevenrocks_env.arena import evaluate  # noqa: E402
from sevenrocks_env.driver import MatchDriver  # noqa: E402
from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.single_agent import SingleAgentEnv  # noqa: E402
from positions import knock_inputs  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    env = SingleAgentEnv(opponents="random", seat="random", partner="self", skip_forced=True,
                         target=100)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [32]}, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # no <tmp>/SB3-<date> folder
    model.learn(total_timesteps=256)
    path = tmp_path_factory.mktemp("sb3") / "maskable_ppo.zip"
    model.save(path)
    return model, path


def test_spec_loads_the_model_and_plays_what_it_was_trained_on(trained):
    model, path = trained
    agent = make_agent(f"sb3:{path}")
    assert agent.name == "sb3:maskable_ppo.zip"
    match = rules.Match.new(4, target=100)
    checked = 0
    while not match.over and checked < 40:  # the loaded model decides as the trained one
        seat, legal = match.turn, rules.legal_actions(match)
        obs, mask = encode(match, seat), action_mask(match, seat)
        action = agent.act(obs, mask)
        assert action in legal
        if len(legal) > 1:
            expected, _ = model.predict({"observation": obs, "action_mask": mask},
                                        action_masks=mask.astype(bool), deterministic=True)
            assert action == int(expected)
            checked += 1
        rules.apply_action(match, action)
    assert checked > 0


def test_arena_match_with_the_spec_is_legal_throughout(trained):
    _, path = trained
    result = evaluate(f"sb3:{path}", "random", pairs=2, seed=0, progress=False, target=100)
    assert result.matches == 4 and result.agent_a == f"sb3:{path}"
    assert result.seconds_per_decision[0] > 0  # the model was asked (not only forced moves)
    # and every seat of a driven match: the driver raises IllegalActionError otherwise
    agent = make_agent(f"sb3:{path}")
    match = rules.Match.new(1, target=100)
    driver = MatchDriver(match, [agent, make_agent("random", seed=1), agent, make_agent("greedy")])
    assert driver.run().over and driver.decisions[0] + driver.decisions[2] > 0


def test_bad_sb3_files_are_clear_errors(tmp_path, trained):
    assert "sb3:PATH" in valid_specs()
    with pytest.raises(ValueError, match="needs a path"):
        make_agent("sb3:")
    with pytest.raises(ValueError, match="no such file: /"):  # absolute: no "relative to"
        make_agent(f"sb3:{tmp_path / 'missing.zip'}")
    with pytest.raises(ValueError, match="is a folder, not a checkpoint file"):
        make_agent(f"sb3:{tmp_path}")
    text = tmp_path / "model.zip"
    text.write_text("not a zip")
    with pytest.raises(ValueError, match="not a zip file"):
        make_agent(f"sb3:{text}")
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("hello.txt", "not a model")
    with pytest.raises(ValueError, match="cannot load as a MaskablePPO model"):
        make_agent(f"sb3:{other}")
    # a plain PPO model (no action masks): the message says what sb3: reads
    from stable_baselines3 import PPO
    PPO("MultiInputPolicy", SingleAgentEnv(opponents="random"), device="cpu").save(
        tmp_path / "ppo.zip")
    with pytest.raises(ValueError, match="a model of another algorithm, PPO, A2C or DQN, has no "
                                         "action masks"):
        make_agent(f"sb3:{tmp_path / 'ppo.zip'}")
    # a MaskablePPO trained on another env's spaces
    foreign = MaskablePPO("MlpPolicy", gymnasium.make("CartPole-v1"), device="cpu")
    foreign.save(tmp_path / "cartpole.zip")
    with pytest.raises(ValueError, match="not this env's"):
        make_agent(f"sb3:{tmp_path / 'cartpole.zip'}")


def test_forced_moves_do_not_reach_the_model():
    class Exploding:
        def predict(self, *args, **kwargs):
            raise AssertionError("the model was asked about a forced move")

    from sevenrocks_env.agents.sb3_agent import SB3Agent

    assert SB3Agent(Exploding()).act(*knock_inputs()) == 112


def test_deterministic_false_samples_from_the_policy(trained):
    """The flag reaches the model: a barely trained policy, sampled, varies its legal choice."""
    from sevenrocks_env.agents.sb3_agent import SB3Agent

    model, _ = trained
    match = rules.Match.new(4, target=100)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    legal = set(rules.legal_actions(match))
    assert len(legal) > 2
    model.set_random_seed(0)  # (SB3 samples from torch's global generator)
    greedy = {SB3Agent(model).act(obs, mask) for _ in range(20)}
    sampled = {SB3Agent(model, deterministic=False).act(obs, mask) for _ in range(40)}
    assert len(greedy) == 1 and len(sampled) > 1 and sampled <= legal


def test_pickles_are_refused_where_not_allowed_and_big_files_before_loading(trained, monkeypatch):
    """sb3:PATH is a pickle: refused with allow_pickles=False (specs read from files)."""
    from sevenrocks_env.agents import sb3_agent

    _, path = trained
    with pytest.raises(ValueError, match="loads a pickle, which can run code"):
        make_agent(f"sb3:{path}", allow_pickles=False)
    monkeypatch.setattr(sb3_agent, "MAX_MODEL_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match="larger than"):
        make_agent(f"sb3:{path}")
