"""sb3-contrib's MaskablePPO trains through the Gymnasium single-agent view, taking legal actions only."""

import tempfile
import time

import gymnasium
import pytest

pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.arena import evaluate  # noqa: E402
from sevenrocks_env.rules import legal_actions  # noqa: E402
from script_modules import example  # noqa: E402


def load_example():
    return example("sb3_maskable_ppo")


class LegalityAudit(gymnasium.Wrapper):
    """Records, before each step, whether the learner's action is legal in the true state."""

    def __init__(self, env, log):
        super().__init__(env)
        self.log = log

    def action_masks(self):
        return self.env.unwrapped.action_masks()

    def step(self, action):
        self.log.append(int(action) in legal_actions(self.env.unwrapped.match))
        return self.env.step(action)


@pytest.mark.parametrize("partner", ["self", "random"])
def test_maskable_ppo_trains_and_only_takes_legal_actions(partner):
    log = []
    vec = DummyVecEnv([lambda: Monitor(LegalityAudit(gymnasium.make(
        "sevenrocks/SevenRocks-v0", opponents="random", seat="random", partner=partner), log))])
    model = MaskablePPO("MultiInputPolicy", vec, n_steps=512, batch_size=128, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [32]}, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # no <tmp>/SB3-<date> folder
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    assert len(log) >= 2048 and all(log)
    assert len(model.ep_info_buffer) > 0  # whole matches were played (Monitor saw episodes end)
    assert {info["r"] for info in model.ep_info_buffer} <= {-1.0, 1.0, 0.0}


@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    """The process's temporary folder, made empty and private to the test."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)  # (SB3's default logger writes there)
    return tmp_path


def test_example_train_and_arena_agent(temp_folder, capsys):
    example = load_example()
    # a --refresh of 600 steps is two 256-step rollouts: chunks of 600 ran whole rollouts each
    # (768), and 1024 steps became 1280
    started = time.perf_counter()
    model, seconds = example.train(opponents="self", steps=1024, n_steps=256, batch_size=64,
                                   n_epochs=1, hidden=(32,), refresh=600)
    assert model.num_timesteps == 1024 and 0 < seconds <= time.perf_counter() - started
    # SB3's default logger made an empty <tmp>/SB3-<date> folder at each of the 3 learn() calls
    assert sorted(temp_folder.glob("SB3-*")) == []
    agent = example.SB3Agent(model)
    result = evaluate(agent, make_agent("random"), pairs=1, seed=0)
    again = evaluate(agent, make_agent("random"), pairs=1, seed=0)  # deterministic play
    assert result.matches == 2 and (result.win_rate, result.mean_margin, result.rounds_per_match) \
        == (again.win_rate, again.mean_margin, again.rounds_per_match)
    # the agent only returns legal actions
    obs, _ = example.make_env(opponents="random").reset(seed=0)
    action = agent.act(obs["observation"], obs["action_mask"])
    assert obs["action_mask"][action] == 1


@pytest.mark.parametrize("argv, words", [
    (["--opponents", "self", "--refresh", "0"], "--refresh: must be an int in [1, "),  # looped
    (["--n-envs", "0"], "--n-envs: must be an int in [1, "),                    # an IndexError
    (["--n-steps", "0"], "--n-steps: must be an int in [1, "),                  # an UnboundLocalError
    (["--eval-pairs", "-1"], "--eval-pairs: must be an int in [0, "),        # after training
    (["--json", "/nonexistent/folder/r.json"], "does not exist"),            # after training
    (["--n-steps", "1000000000000"], "--n-steps: must be an int in [1, 1048576]"),  # MemoryError
    (["--n-steps", "2048", "--n-envs", "1024"], "is at most 1,048,576"),
    (["--save", "/tmp/"], "names a folder"),              # wrote /tmp/.zip
    (["--save", "/tmp"], "names a folder"),               # wrote /tmp.zip beside it
])
def test_example_refuses_bad_arguments_before_training(argv, words, capsys):
    try:
        code = load_example().main(["--steps", "64", "--save", "/nonexistent/m", *argv])
    except SystemExit as exit_:  # argparse's usage error
        code = exit_.code
    assert code == 2
    assert words in capsys.readouterr().err


def test_example_prints_the_file_sb3_writes(tmp_path, capsys):
    """SB3 adds .zip to a save path: the printed arena command must name that file."""
    path = tmp_path / "model"
    assert load_example().main(["--opponents", "random", "--steps", "64", "--n-steps", "64",
                                "--save", str(path), "--eval-pairs", "0"]) == 0
    assert (tmp_path / "model.zip").is_file()
    assert f"sevenrocks arena sb3:{path}.zip " in capsys.readouterr().out


def _frozen_opponent(model):
    """The ``--opponents self`` opponent inside the model's (first) env."""
    return model.get_env().envs[0].unwrapped._others[0]


def test_self_play_opponent_is_a_frozen_copy_of_the_learner(temp_folder):
    """The copy has the learner's weights at the last refresh (not a fresh random network) and
    keeps them while the learner goes on learning (not the live policy)."""
    import torch

    example = load_example()
    model, _ = example.train(opponents="self", steps=64, n_steps=32, batch_size=32, n_epochs=1,
                             hidden=(8,), refresh=32)
    frozen = _frozen_opponent(model)
    assert frozen.agent.model is not model.policy
    copy = {k: v.clone() for k, v in frozen.agent.model.state_dict().items()}
    learner = model.policy.state_dict()
    assert copy.keys() == learner.keys()
    assert all(torch.equal(copy[k], learner[k]) for k in copy)
    model.learn(total_timesteps=32, reset_num_timesteps=False)
    learner = model.policy.state_dict()
    assert not all(torch.equal(copy[k], learner[k]) for k in copy)  # the learner moved on
    assert all(torch.equal(v, copy[k]) for k, v in frozen.agent.model.state_dict().items())
    assert _frozen_opponent(model) is frozen  # the same opponent plays on


def test_example_env_options_reach_the_env(temp_folder):
    """make_env's defaults (seat drawn per match, forced moves skipped) and train's reward."""
    example = load_example()
    env = example.make_env(opponents="random").unwrapped
    assert (env.seat_option, env.skip_forced, env.aec_env.reward_mode) == ("random", True, "win")
    model, _ = example.train(opponents="random", steps=16, n_steps=16, batch_size=16,
                             n_epochs=1, hidden=(8,), reward="points")
    assert model.get_env().envs[0].unwrapped.aec_env.reward_mode == "points"
