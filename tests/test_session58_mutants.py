"""Tests from a mutation audit of what session 57 changed: ship's refusal of config text
the card's command cannot hold (ship.py), the wall-time bound of checkpoints and resumes
(checkpoint.py, resume.py), the curves' tag count and non-event records (plot_curve.py), a
YAML control character's line (config_yaml.py), the OpenSpiel DQN loader's checks
(examples/openspiel_dqn.py), the batched engine's rewards, the TorchRL env's done flags, which
agents the batched arena plays (batched_agents.py, training/opponents.py), an oracle-critic
checkpoint's value head and the policy agent's copies (policy.py), the layout a checkpoint does
not say (policy_file.py), the ckpt:/sb3: hints (agents), the CLI's escapes (cli.py), play's
answers and exit statuses (play.py), '1 pip' (tiles.py) and file kinds' articles
(textfile.py)."""

from __future__ import annotations

import io
import sys
import zipfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import CheckpointError, PolicyNet  # noqa: E402
from training.checkpoint import policy_entries  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- training/ship.py: a config text value the card's command cannot hold ----------------------

def _run(hidden, config):
    return dict(policy_entries(PolicyNet(hidden, action_features=2), 0), config=config)


def test_check_config_refuses_command_text_by_default():
    """A caller that does not say who writes the command gets the check (ship's own default)."""
    from training.ship import _check_config
    with pytest.raises(CheckpointError, match=r"p.pt: 'config' init_from: 'a`b.pt' must be one "
                                              "line of at most 4096 printable characters"):
        _check_config(_run([16], {"hidden_sizes": [16], "init_from": "a`b.pt"}), "p.pt", False)
    _check_config(_run([16], {"hidden_sizes": [16], "init_from": "a`b.pt"}), "p.pt", False,
                  writes_command=False)


def test_a_newline_without_a_backtick_is_refused_too():
    from training.ship import _check_config
    with pytest.raises(CheckpointError, match=r"'config' init_from: 'runs/a\\nb.pt' must be"):
        _check_config(_run([16], {"hidden_sizes": [16], "init_from": "runs/a\nb.pt"}), "p.pt",
                      False)


def test_command_text_is_at_most_4096_printable_characters_without_backticks():
    from training.ship import _command_text
    assert _command_text("x" * 4096) and not _command_text("x" * 4097)
    assert not _command_text("a\tb") and not _command_text("a`b") and _command_text("make train")


# -- training/checkpoint.py and resume.py: wall_time up to 1e9 s -------------------------------

def test_a_checkpoint_s_wall_time_is_read_up_to_1e9_seconds():
    from training.checkpoint import MAX_WALL_SECONDS, run_facts
    assert MAX_WALL_SECONDS == 10 ** 9
    for wall in (0, 10 ** 9, 1e9):
        assert run_facts({"global_step": 0, "wall_time": wall}, "p.pt")["wall_time"] == wall
    for wall in (10 ** 9 + 1, 1e9 + 1, -1):
        with pytest.raises(CheckpointError, match=r"p.pt: 'wall_time' must be a number of "
                                                  r"seconds in \[0, 1e9\], got "):
            run_facts({"global_step": 0, "wall_time": wall}, "p.pt")


def _resume_counters(wall):
    from training.config import config_from_dict
    from training.resume import check_counters
    cfg = config_from_dict({"hidden_sizes": [8], "num_matches": 2, "num_steps": 16,
                            "total_steps": 64, "num_minibatches": 2, "max_snapshots": 2})
    check_counters({"update": 1, "global_step": cfg.batch_size, "wall_time": wall}, cfg, "f.pt")


def test_resume_takes_wall_times_from_0_to_1e9_and_refuses_past_it():
    for wall in (0, 0.0, 10 ** 9, 1e9):
        _resume_counters(wall)
    for wall in (-1e-9, 1e9 + 1, 10 ** 10, 1e300, float("inf"), float("nan")):
        with pytest.raises(CheckpointError, match=r"f.pt: resume piece 'wall_time' must be a "
                                                  r"number of seconds in \[0, 1e9\], got "):
            _resume_counters(wall)


# -- cli.py: escapes on whatever stdout is ----------------------------------------------------

class _Stream(io.StringIO):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def reconfigure(self, **kwargs):
        raise self.error


@pytest.mark.parametrize("stdout", [io.StringIO(), _Stream(ValueError("I/O on closed file")),
                                    _Stream(OSError(9, "Bad file descriptor"))])
def test_a_stdout_that_cannot_be_reconfigured_is_left_as_it_is(monkeypatch, stdout):
    """A StringIO (no reconfigure), a closed stream (ValueError), an odd one (OSError): the
    command runs on."""
    from sevenrocks_env.cli import escape_unwritable_characters, guarded
    monkeypatch.setattr(sys, "stdout", stdout)
    escape_unwritable_characters()
    assert guarded("test", lambda: print("caf\u00e9") or 0) == 0
    assert stdout.getvalue() == "caf\u00e9\n"


# -- play.py: answers at a terminal ------------------------------------------------------------

def _session(text, pause=True):
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.play import Session
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    return Session(0, agents, seed=3, target=250, stdin=io.StringIO(text), stdout=out,
                   echo=False, pause=pause), out


def test_an_answer_of_64_characters_is_taken_with_or_without_its_line_end():
    from sevenrocks_env.play_answers import MAX_ANSWER
    assert MAX_ANSWER == 64
    for text in ("x" * 64 + "\n", "x" * 64):
        session, out = _session(text)
        assert session.ask("? ") == text and out.getvalue() == "? "
    session, out = _session("x" * 65 + "\nq\n")
    assert session.ask("? ") == "q\n"
    assert out.getvalue() == "? \n  not accepted: an answer is at most 64 characters\n? "


def test_a_short_answer_that_is_not_utf8_is_refused_on_its_own_line():
    session, out = _session("\udce9\nq\n")
    assert session.ask("? ") == "q\n"
    assert out.getvalue() == "?   not accepted: not UTF-8 text (set the terminal to UTF-8)\n? "


# -- textfile.py: a file kind's article ----------------------------------------------------------

def test_a_kind_takes_the_article_of_its_first_letter():
    from sevenrocks_env.textfile import a, not_regular
    assert a("arena result") == "an arena result" and a("game record") == "a game record"
    assert a("Event file") == "an Event file" and a("TensorBoard event file") == \
        "a TensorBoard event file"
    import stat
    assert not_regular(stat.S_IFDIR, "arena result") == "is a folder, not an arena result"
    assert not_regular(stat.S_IFCHR, "event file").startswith(
        "is not a regular file (a device?), not an event file: ")
    assert not_regular(stat.S_IFREG, "event file") is None


def test_a_file_over_the_limit_names_its_kind_with_its_article(tmp_path):
    from sevenrocks_env.textfile import read_text
    path = tmp_path / "r.json"
    path.write_text("x" * 11)
    with pytest.raises(ValueError, match=r"r.json is larger than 10 bytes; not an arena result$"):
        read_text(path, 10, "arena result")


# -- policy.py: only an oracle-critic run's checkpoint loses its value head ---------------------

def test_trained_with_oracle_critic_reads_the_run_s_config_only():
    from sevenrocks_env.policy import trained_with_oracle_critic
    assert trained_with_oracle_critic({"config": {"critic": "oracle"}})
    for data in ({}, {"config": None}, {"config": [("critic", "oracle")]}, {"config": {}},
                 {"config": {"critic": "shared"}}, {"config": {"critic": "Oracle"}}):
        assert not trained_with_oracle_critic(data), data


@pytest.mark.parametrize("config", [None, {}, {"critic": "shared"}])
def test_a_checkpoint_of_a_run_without_the_oracle_critic_keeps_its_value_head(config):
    from sevenrocks_env.policy import build_model
    data = dict(policy_entries(PolicyNet([16]), 0), config=config)
    model = build_model(data, "p.pt")
    assert model.value(torch.zeros(1, 238)).shape == (1,)



# -- training/plot_curve.py: tags counted over all files, records that are no event -------------

def _event_file(path, tags_per_event, tail=b""):
    """An event file: the file version, then one event per list of tags (a scalar each)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.record_writer import RecordWriter
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        writer = RecordWriter(file)
        writer.write(Event(file_version="brain.Event:2").SerializeToString())
        for tags in tags_per_event:
            writer.write(Event(step=1, summary=Summary(value=[
                Summary.Value(tag=tag, simple_value=0.5) for tag in tags])).SerializeToString())
        file.write(tail)
    return path


def test_tags_are_counted_across_the_files_and_within_an_event(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    from training import plot_curve
    monkeypatch.setattr(plot_curve, "MAX_EVENT_TAGS", 3)
    run = tmp_path / "run"
    _event_file(run / "events.out.tfevents.1.a", [["a"], ["b"]])
    _event_file(run / "events.out.tfevents.2.b", [["a"], ["c"]])
    plot_curve.check_event_files(run)  # a, b, c: 3 tags
    _event_file(run / "events.out.tfevents.2.b", [["c"], ["d"]])  # 2 + 2 tags: 4
    with pytest.raises(ValueError, match="event files hold more than 3 tags"):
        plot_curve.check_event_files(run)
    one = tmp_path / "one"
    _event_file(one / "events.out.tfevents.1.a", [["a", "b", "c", "d"]])  # 4 in one event
    with pytest.raises(ValueError, match="event files hold more than 3 tags"):
        plot_curve.check_event_files(one)


def test_a_record_that_is_no_event_is_named_by_its_byte_offset(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.summary.writer.record_writer import RecordWriter
    from training import plot_curve
    path = _event_file(tmp_path / "run" / "events.out.tfevents.1.a", [["a"]])
    offset = path.stat().st_size
    with open(path, "ab") as file:
        RecordWriter(file).write(b"\xff\xff\xff")
    with pytest.raises(ValueError, match=rf"events.out.tfevents.1.a: record at byte {offset} is "
                                         "not an event$"):
        plot_curve.check_event_files(tmp_path / "run")


# -- training/config_yaml.py: every YAML line break counts --------------------------------------

@pytest.mark.parametrize("text, line, column", [
    ("seed: 1\x85# \x07\n", 2, 3),  # NEL
    ("seed: 1\u2029# \x07\n", 2, 3),  # paragraph separator
    ("seed: 1\r\nbatch: 2\r\n# \x07\n", 3, 3),  # a Windows line end is one break
    ("seed: 1\r\r\n\x07", 3, 1),
])
def test_a_control_character_s_line_counts_yaml_s_line_breaks(text, line, column):
    import yaml
    from training.config_yaml import ConfigError, _read_yaml
    with pytest.raises(yaml.reader.ReaderError) as info:  # PyYAML's own count, for reference
        yaml.safe_load(text)
    position = info.value.position
    assert text[position] == "\x07"
    with pytest.raises(ConfigError) as info:
        _read_yaml(text, "c.yaml")
    assert str(info.value) == (f"c.yaml is not valid YAML: character #x0007 is not allowed "
                               f"(line {line}, column {column})")


# -- batched/engine.py and lockstep.py: rewards bit for bit -------------------------------------

def _lockstep_play(venv, steps, seed=0):
    from sevenrocks_env.batched import random_actions
    from sevenrocks_env.batched.lockstep import Lockstep
    lockstep = Lockstep(venv, range(venv.num_envs))
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        lockstep.step(random_actions(venv.action_mask, generator))
    return lockstep


def test_a_win_reward_s_float64_value_is_rounded_once():
    """win_reward 0.15 and points_scale 0.001: 0.001 * m +- 0.15 in float64 rounded once is
    the AEC env's reward; win_reward first rounded to float32 gives another float32 at more than
    half the margins."""
    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=16, target=25, reward="shaped", points_scale=0.001,
                                    win_reward=0.15)
    venv.reset(seed=11)
    lockstep = _lockstep_play(venv, 400)  # raises LockstepError on one bit of difference
    assert lockstep.finished >= 16


def test_lockstep_tells_a_reward_one_float32_step_off(monkeypatch):
    """The checker compares bits: float32 arithmetic's 0.049999997 for 0.01 * 5 (the AEC env's
    0.05 rounds to 0.050000001) is a difference it reports."""
    from sevenrocks_env import sevenrocks_v0
    from sevenrocks_env.batched import engine
    from sevenrocks_env.batched.lockstep import LockstepError

    def in_float32(margin, sign, scale, win):
        return scale * margin.to(torch.float32) + win * sign.to(torch.float32)
    monkeypatch.setattr(engine, "team0_reward", in_float32)
    venv = sevenrocks_v0.vector_env(num_envs=16, reward="points")
    venv.reset(seed=3)
    with pytest.raises(LockstepError, match="rewards"):
        _lockstep_play(venv, 400)


# -- examples/openspiel_dqn.py: the Q-network file's checks ------------------------------------

@pytest.fixture(scope="module")
def dqn():
    from script_modules import example
    return example("openspiel_dqn")


def _dqn_file(dqn, tmp_path, weights):
    from sevenrocks_env.observation import OBS_SIZE
    from sevenrocks_env.tiles import NUM_ACTIONS
    path = tmp_path / "q.pt"
    torch.save({"format": dqn.FORMAT, "hidden": [8], "obs_size": OBS_SIZE,
                "num_actions": NUM_ACTIONS, "env_steps": 1, "seed": 0, "q_network": weights},
               path)
    return path


def test_missing_and_unexpected_weights_are_named_three_at_most(dqn, tmp_path):
    weights = dqn.QNetwork((8,)).state_dict()
    missing = {k: v for k, v in weights.items() if k != "model.1.bias"}
    with pytest.raises(ValueError, match=r"missing, unexpected or not a dict: 'model.1.bias'$"):
        dqn.load_agent(_dqn_file(dqn, tmp_path, missing))
    extra = {**weights, **{f"x{i}": torch.zeros(1) for i in range(9)}}
    with pytest.raises(ValueError, match=r"not a dict: 'x0', 'x1', 'x2'$"):
        dqn.load_agent(_dqn_file(dqn, tmp_path, extra))
    with pytest.raises(ValueError, match=r"missing, unexpected or not a dict: a list$"):
        dqn.load_agent(_dqn_file(dqn, tmp_path, [1, 2]))


def test_q_values_that_overflow_at_some_legal_actions_only_are_refused(dqn, tmp_path):
    """Half the actions' Q-values overflow (3e38 + 3e38), the rest are 0: the agent would play
    among the finite ones, or the first legal move where every legal one overflows."""
    weights = {k: torch.zeros_like(v) for k, v in dqn.QNetwork((8,)).state_dict().items()}
    weights["model.0.0.bias"] += 1.0  # every hidden unit 1
    weights["model.1.weight"][::2] = 3e38
    weights["model.1.bias"][::2] = 3e38
    with pytest.raises(ValueError, match="Q-values are not finite"):
        dqn.load_agent(_dqn_file(dqn, tmp_path, weights))
    weights["model.1.weight"][::2] = 1.0
    assert dqn.load_agent(_dqn_file(dqn, tmp_path, weights)).network is not None


# -- torchrl_env.py: a full reset leaves no match finished --------------------------------------

def test_after_a_full_reset_every_match_is_in_progress_again():
    """Finished matches' flags are cleared by reset(): naming one in a partial ``_reset`` is
    then a reset of a match in progress, refused."""
    pytest.importorskip("torchrl")
    from batched_helpers import masked_random
    from tensordict import TensorDict

    from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv
    env = SevenRocksTorchRLEnv(4, seed=2, target=25, max_rounds=1)
    generator = torch.Generator().manual_seed(0)
    td = env.reset()
    for _ in range(100):  # one round a match: some end before the others
        td["action"] = masked_random(td["action_mask"], generator)
        td = env.step(td)
        done = td["next", "done"]
        if done.any() and not done.all():
            break
        td = td["next"]
    assert done.any() and not done.all()
    env.reset()
    with pytest.raises(ValueError, match="partial reset of matches in progress"):
        env.reset(TensorDict({"_reset": done.clone()}, batch_size=[4]))


# -- batched_agents.py: which overrides make a subclass its own player --------------------------

def _bases():
    from sevenrocks_env.agents.greedy import GreedyAgent
    from sevenrocks_env.agents.heuristic import HeuristicAgent
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    from sevenrocks_env.agents.random_agent import RandomAgent
    from sevenrocks_env.agents.search import SearchAgent
    from sevenrocks_env.policy import PolicyAgent
    return {"GreedyAgent": GreedyAgent, "RandomAgent": RandomAgent,
            "HeuristicAgent": HeuristicAgent, "PolicyAgent": PolicyAgent,
            "SearchAgent": SearchAgent, "PolicySearchAgent": PolicySearchAgent}


BYPASSED = [("GreedyAgent", "act"), ("GreedyAgent", "choose"), ("RandomAgent", "act"),
            ("HeuristicAgent", "act"), ("HeuristicAgent", "choose"),
            ("HeuristicAgent", "values"), ("PolicyAgent", "act"), ("SearchAgent", "act"),
            ("SearchAgent", "choose"), ("SearchAgent", "action_values"),
            ("SearchAgent", "_rollout_action"), ("SearchAgent", "_rollout_value"),
            ("PolicySearchAgent", "act"), ("PolicySearchAgent", "action_values")]


def _subclass(base, **methods):
    """An object of a subclass of ``base`` with ``methods`` of its own (not initialised:
    :func:`plays_as` and the refusal read only its class)."""
    cls = type(f"My{base.__name__}", (base,), {"name": "mine", **methods})
    return cls.__new__(cls)


@pytest.mark.parametrize("base_name, method", BYPASSED)
def test_overriding_a_method_the_batched_version_plays_in_place_of_is_refused(base_name,
                                                                               method):
    from sevenrocks_env.batched_agents import batched_agent, plays_as
    base = _bases()[base_name]
    agent = _subclass(base, **{method: lambda self, *args: 0})
    assert not plays_as(agent, base)
    with pytest.raises(ValueError, match=rf"'mine' \(My{base_name}\) overrides how {base_name} "
                                         "plays: it has no batched version"):
        batched_agent(agent)


@pytest.mark.parametrize("base_name, method", [
    ("GreedyAgent", "seed"), ("RandomAgent", "seed"), ("HeuristicAgent", "seed"),
    ("PolicyAgent", "distribution"), ("PolicyAgent", "seed"), ("SearchAgent", "seed"),
    ("PolicySearchAgent", "choose_many"), ("PolicySearchAgent", "seed")])
def test_overriding_what_the_batched_version_calls_or_seeds_still_plays_as_the_base(
        base_name, method):
    from sevenrocks_env.batched_agents import plays_as
    base = _bases()[base_name]
    assert plays_as(_subclass(base, **{method: lambda self, *args: 0}), base)
    assert not plays_as(_subclass(base), _bases()["GreedyAgent"] if base_name != "GreedyAgent"
                        else _bases()["RandomAgent"])


def test_plays_as_is_exported():
    import sevenrocks_env.batched_agents as batched_agents
    assert "plays_as" in batched_agents.__all__


# -- arena_batched.py: the playing agents' files are checked after they are built --------------

def test_a_checkpoint_replaced_while_the_playing_agents_are_built_is_told(monkeypatch, tmp_path):
    """The agents that play are built, then their files checked against the run's
    fingerprints: a file replaced as they were built is refused, not played unnamed."""
    import shutil
    from pathlib import Path

    from sevenrocks_env import arena_batched
    from sevenrocks_env.policy import shipped_path
    other = Path(__file__).resolve().parents[1] / "checkpoints" / "previous" / "v2_oracle" \
        / "sevenrocks_ppo.pt"
    path = tmp_path / "latest.pt"
    shutil.copyfile(shipped_path(), path)
    built, build = [], arena_batched.batched_agent

    def replaced_while_built(agent, device="cpu"):
        built.append(agent)
        if len(built) == 3:  # the first agent that plays (after the run's fingerprints)
            shutil.copyfile(other, path)
        return build(agent, device)
    monkeypatch.setattr(arena_batched, "batched_agent", replaced_while_built)
    with pytest.raises(ValueError, match="its file changed since the run began"):
        arena_batched.evaluate_batched(f"ckpt:{path}", "greedy", 2, seed=4, target=100)
    assert len(built) == 4


# -- agents: the ckpt:/sb3: hints --------------------------------------------------------------

def test_zip_holds_finds_an_entry_at_any_depth_among_the_first_1000(tmp_path):
    from sevenrocks_env.agents.sb3_agent import zip_holds
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("archive/version", "archive/data.pkl", "xpolicy.pth"):
            archive.writestr(name, b"")
    assert zip_holds(path, "data.pkl")  # (its second entry, in a folder)
    assert zip_holds(path, "version")  # its first
    assert not zip_holds(path, "policy.pth")  # 'xpolicy.pth' is another name
    assert not zip_holds(path, "version.pkl")
    late = tmp_path / "late.zip"
    with zipfile.ZipFile(late, "w") as archive:
        for i in range(1000):
            archive.writestr(f"e{i}", b"")
        archive.writestr("policy.pth", b"")
    assert not zip_holds(late, "policy.pth")  # past the first 1,000 entries: not looked at
    (tmp_path / "plain.pt").write_bytes(b"not a zip")
    assert not zip_holds(tmp_path / "plain.pt", "data.pkl")
    assert not zip_holds(tmp_path / "missing.zip", "data.pkl")
    assert not zip_holds(tmp_path, "data.pkl")  # a folder


def test_the_sampling_spec_gets_no_hint_to_use_itself(tmp_path):
    """``ckpt:`` alone is told that parameters belong to ``sample:``; a sampling load of a path
    that holds ``,x=`` is not sent to itself."""
    from sevenrocks_env.agents import _load_checkpoint
    missing = str(tmp_path / "no,temperature=1")
    with pytest.raises(ValueError, match=r"cannot read checkpoint: .*; ckpt: takes a path"):
        _load_checkpoint(missing, None)
    with pytest.raises(ValueError) as info:
        _load_checkpoint(missing, None, deterministic=False)
    assert str(info.value).startswith("cannot read checkpoint: ") and "takes a path" not in str(
        info.value)


# -- training/opponents.py: a training opponent with its own moves plays them -------------------

def _first_legal(self, *args):
    mask = args[-1]
    if isinstance(mask, list):  # choose(view, legal)
        return mask[0]
    return int(np.flatnonzero(mask)[0])


@pytest.mark.parametrize("which", ["heuristic", "policy"])
def test_a_training_opponent_of_a_subclass_with_its_own_moves_plays_them(which):
    from sevenrocks_env import sevenrocks_v0
    from sevenrocks_env.agents.heuristic import HeuristicAgent
    from sevenrocks_env.policy import PolicyAgent, load_policy
    from training.opponents import _batch_actions
    if which == "heuristic":
        agent = type("FirstHeuristic", (HeuristicAgent,), {"choose": _first_legal})()
    else:
        cls = type("FirstPolicy", (PolicyAgent,), {"act": _first_legal})
        agent = cls(load_policy("shipped").model, name="first")
    venv = sevenrocks_v0.vector_env(num_envs=4, validate=False)
    venv.reset(seed=3)
    ours = _batch_actions(agent, venv.state, venv.observation, venv.action_mask, torch.arange(4))
    assert torch.equal(ours, venv.action_mask.float().argmax(1))  # each env's first legal one
