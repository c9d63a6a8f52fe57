"""Adapters for standard RL libraries: the single-agent view's seeding and resets, its errors
(illegal learner actions, bad arguments and options, missing extras), ``render``, deep copies, the
driver's match flow (forced moves), and ``parallel_env``.  Registration and rewards:
test_adapters.py."""

import numpy as np
import pytest

import sevenrocks_env
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.observation import view, without_turn
from sevenrocks_env.rules import Match, deal, legal_actions
from sevenrocks_env.single_agent import SingleAgentEnv
from sevenrocks_env.tiles import mask_of, parse_tile


# -- determinism and errors ----------------------------------------------------------------------

def test_same_seed_same_match_and_same_deal_as_the_aec_env():
    def run(seed):
        env = SingleAgentEnv(opponents="random", seat="random", partner="random")
        obs, _ = env.reset(seed=seed)
        trace = [obs["observation"].copy()]
        for _ in range(40):
            obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[-1]))
            trace.append(obs["observation"].copy())
        return env, trace

    env_a, trace_a = run(9)
    env_b, trace_b = run(9)
    assert all(np.array_equal(a, b) for a, b in zip(trace_a, trace_b))
    record = env_a.aec_env.game_record()
    assert record == env_b.aec_env.game_record()
    assert [mask_of(parse_tile(t) for t in h) for h in record["rounds"][0]["hands"]] == deal(9, 0)[0]


def test_unseeded_resets_after_a_seed_each_deal_a_new_match():
    """As Gymnasium's ``np_random``: seeding once makes the later unseeded resets reproducible,
    and their match seeds come from the whole range: 300 of them never repeat."""
    def seeds():
        env = SingleAgentEnv(opponents="random", seat=0)
        env.reset(seed=21)
        drawn = []
        for _ in range(300):
            env.reset()
            drawn.append(env.match.seed)
        return drawn

    first = seeds()
    assert len(set(first)) == 300 and seeds() == first


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_reset_skips_matches_that_end_before_the_learner_moves(seat):
    """With a tiny target an opponent's opening can win the match (R8) before the learner has
    moved; reset hands the learner a match in play, with a legal action to take."""
    env = SingleAgentEnv(opponents="greedy", seat=seat, partner="greedy", target=5)
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        assert not env.match.over and info["seat"] == seat and "won" not in info
        assert obs["action_mask"].any() and env.match.turn == seat


def test_numpy_integer_seeds_are_seeds_and_bad_ones_get_the_aec_envs_error():
    """The AEC env takes ``np.int64`` seeds; Gymnasium's ``np_random`` alone would refuse them."""
    env = SingleAgentEnv(opponents="random", seat="random")
    first, _ = env.reset(seed=np.int64(3))
    again, _ = SingleAgentEnv(opponents="random", seat="random").reset(seed=3)
    assert np.array_equal(first["observation"], again["observation"])
    for seed, error in ((True, TypeError), (1.5, TypeError), (-1, ValueError),
                        (np.int64(-2), ValueError)):
        with pytest.raises(error, match="seed must be a non-negative int or None"):
            env.reset(seed=seed)


@pytest.mark.parametrize("partner", ["self", "random"])
def test_the_aec_envs_turn_follows_the_match_the_driver_plays(partner):
    """The single-agent view plays through a driver, not the AEC env's step, and moves the AEC
    env's ``agent_selection`` with the match: ``env.aec_env.last()`` is the seat on turn's view."""
    env = SingleAgentEnv(opponents="random", seat=1, partner=partner)
    rng = np.random.default_rng(3)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            aec = env.aec_env
            assert aec.agent_selection == f"player_{env.match.turn}"
            assert np.array_equal(aec.last()[0]["observation"], obs["observation"])
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, _, terminated, truncated, _ = env.step(action)


def test_an_unknown_reset_option_is_named_not_ignored():
    env = SingleAgentEnv(opponents="random")
    with pytest.raises(ValueError, match="unknown reset option.s. 'matc'; the one option is 'match'"):
        env.reset(seed=1, options={"matc": Match.new(seed=1)})
    env.reset(seed=1, options={})  # Gymnasium's checker passes an empty dict


def test_illegal_learner_action_raises_and_keeps_state():
    env = SingleAgentEnv(opponents="random", illegal_action="raise")
    obs, _ = env.reset(seed=0)
    legal = set(legal_actions(env.match))
    bad = next(a for a in range(113) if a not in legal)
    for action, words in ((bad, "illegal action"), (np.array(bad), "illegal action"),
                          (113, "outside the action space"), (-1, "outside the action space")):
        with pytest.raises(ValueError, match=words):
            env.step(action)
    assert np.array_equal(env.aec_env.observe(f"player_{env.match.turn}")["observation"], obs["observation"])


@pytest.mark.parametrize("reward", ["win", "points", "shaped"])
def test_illegal_learner_action_ends_the_episode_by_default(reward):
    """As TerminateIllegalWrapper: terminated, reward exactly -1, info flag, match untouched."""
    env = SingleAgentEnv(opponents="random", reward=reward)
    obs, _ = env.reset(seed=0)
    state = env.match.to_state()
    legal = set(legal_actions(env.match))
    bad = next(a for a in range(113) if a not in legal)
    obs2, reward_, terminated, truncated, info = env.step(np.int64(bad))
    assert (reward_, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    # the same position, with no seat to move (as at every other end)
    assert np.array_equal(without_turn(obs["observation"].copy()), obs2["observation"])
    assert view(obs["observation"], "turn").any() and not obs2["action_mask"].any()
    assert env.match.to_state() == state
    with pytest.raises(RuntimeError, match="reset"):
        env.step(next(iter(legal)))
    env.reset(seed=0)  # and the next episode is normal
    obs3, _, _, _, info = env.step(np.array(next(iter(legal))))  # a 0-d array is that int
    assert "illegal_action" not in info
    # Outside the action space is a caller bug, always raised, with env()'s classes (both are
    # ValueErrors, as documented for this view), the match unchanged.
    from sevenrocks_env.wrappers import ActionNotAnIndex, ActionOutOfRange
    state = env.match.to_state()
    for outside, error, words in ((113, ActionOutOfRange, "outside the action space"),
                                  (-1, ActionOutOfRange, "outside the action space"),
                                  ("3", ActionNotAnIndex, "must be an int action index"),
                                  (2.5, ActionNotAnIndex, "must be an int action index"),
                                  (True, ActionNotAnIndex, r"\(a bool\)"),
                                  (np.bool_(False), ActionNotAnIndex, r"\(a bool\)")):
        with pytest.raises(error, match=words) as raised:
            env.step(outside)
        assert isinstance(raised.value, ValueError)
        assert env.match.to_state() == state


def test_bad_arguments_get_clear_errors():
    with pytest.raises(ValueError, match="seat"):
        SingleAgentEnv(seat=4)
    with pytest.raises(ValueError, match="unknown agent spec"):
        SingleAgentEnv(opponents="nobody")
    with pytest.raises(ValueError, match="two"):
        SingleAgentEnv(opponents=["random", "random", "random"])
    with pytest.raises(ValueError, match="reward"):
        SingleAgentEnv(reward="money")
    with pytest.raises(ValueError, match="illegal_action"):
        SingleAgentEnv(illegal_action="ignore")
    with pytest.raises(ValueError, match="points_scale"):
        SingleAgentEnv(reward="shaped", points_scale=float("nan"))
    with pytest.raises(ValueError, match="shaped"):
        SingleAgentEnv(reward="win", win_reward=2.0)
    with pytest.raises(RuntimeError, match="reset"):
        SingleAgentEnv(opponents="random").action_masks()


@pytest.mark.parametrize("seat", [2, "random"])
def test_render_ansi_shows_the_learners_view(seat):
    """The hand of the learner seat on turn and no other (the text board of the whole table
    shows all four)."""
    env = SingleAgentEnv(opponents="random", render_mode="ansi", seat=seat)
    for seed in range(4):
        _, info = env.reset(seed=seed)
        text = env.render()
        shown = [s for s in range(4) if f"seat {s} hand:" in text]
        assert shown == [info["seat"]] and info["seat"] in (env.seat, (env.seat + 2) % 4), text


def test_with_partner_self_the_picture_follows_the_seat_the_learner_decides_for():
    """``partner="self"`` (the default): the learner decides for seat+2 too; its picture showed
    the learner seat's hand while the observation was the partner's."""
    env = SingleAgentEnv(opponents="heuristic", seat=0, partner="self", render_mode="ansi")
    seen, rng = set(), np.random.default_rng(0)
    observation, info = env.reset(seed=0)
    for _ in range(60):
        text = env.render()
        assert [s for s in range(4) if f"seat {s} hand:" in text] == [info["seat"]], text
        seen.add(info["seat"])
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, _, terminated, _, info = env.step(action)
        if terminated:
            observation, info = env.reset(seed=len(seen))
    assert seen == {0, 2}


# -- parallel_env ----------------------------------------------------------------------------------

# PettingZoo's parallel_api_test and parallel_seed_test run in tests/test_checkers.py.


def test_parallel_env_carries_masks_and_every_final_reward():
    env = sevenrocks_v0.parallel_env()
    observations, _ = env.reset(seed=6)
    rng = np.random.default_rng(6)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        active = [a for a in env.agents if observations[a]["action_mask"].any()]
        assert len(active) == 1  # turn-based: exactly the seat to move has legal actions
        actions = {a: 0 for a in env.agents}
        actions[active[0]] = int(rng.choice(np.flatnonzero(observations[active[0]]["action_mask"])))
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for agent, r in rewards.items():
            totals[agent] += r
    winner = env.unwrapped.match.winner
    assert winner in (0, 1)
    assert totals == {f"player_{s}": (1.0 if s % 2 == winner else -1.0) for s in range(4)}

    # once the match is over a step returns five empty dicts, as the loop above unpacks them
    # (PettingZoo's parent returned four)
    assert env.step({}) == ({}, {}, {}, {}, {})


def test_parallel_step_takes_the_movers_action_alone_and_names_it_when_missing():
    env = sevenrocks_v0.parallel_env()
    observations, _ = env.reset(seed=6)
    mover = next(a for a in env.agents if observations[a]["action_mask"].any())
    other = next(a for a in env.agents if a != mover)
    for actions in ({other: 0}, {}):
        with pytest.raises(ValueError, match=f"an entry for '{mover}', the seat on turn"):
            env.step(actions)
    with pytest.raises(TypeError, match="actions must be a dict"):
        env.step([0, 0, 0, 0])
    legal = int(np.flatnonzero(observations[mover]["action_mask"])[0])
    env.step({mover: legal})  # the other seats may be left out
    assert env.unwrapped.match.placements == 1


@pytest.mark.parametrize("module, call, extra", [
    ("torch", "from sevenrocks_env import sevenrocks_v0; sevenrocks_v0.vector_env(num_envs=2)",
     "[train]"),
    ("torchrl", "import sevenrocks_env.torchrl_env", "[torchrl]"),
])
def test_the_torch_parts_without_torch_say_which_extra_to_install(module, call, extra):
    """``torch`` is not a core dependency: without it (blocked here, so this holds in every venv)
    the batched engine and the TorchRL env raised a bare ``ModuleNotFoundError``."""
    import subprocess
    import sys

    code = f"import sys; sys.modules[{module!r}] = None; {call}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    # (the torch-free venv of test_adapters_compat.py lacks torch itself: "(torch is missing)")
    assert last.startswith("ImportError: sevenrocks") and " is missing)" in last \
        and extra in last, proc.stderr


# -- one match flow: the driver's ------------------------------------------------------------------

class _StrictRandom(sevenrocks_env.agents.RandomAgent):
    """A random agent that fails if it is ever asked about a forced move (R6)."""

    name = "strict"

    def act(self, observation, action_mask):
        assert action_mask.sum() > 1, "a forced move reached an opponent"
        return super().act(observation, action_mask)


@pytest.mark.parametrize("skip_forced", [False, True, None])
def test_other_seats_are_never_asked_about_forced_moves(skip_forced):
    """``None``: not given, the default (False: the learner is asked about its forced moves)."""
    given = {} if skip_forced is None else {"skip_forced": skip_forced}
    env = SingleAgentEnv(opponents=(_StrictRandom(), _StrictRandom()), partner=_StrictRandom(),
                         seat=1, target=150, **given)
    rng = np.random.default_rng(3)
    forced_steps = 0
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            mask = env.action_masks()
            forced_steps += mask.sum() == 1
            obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            done = terminated or truncated
    # the learner is asked about its own forced moves unless skip_forced (sevenrocks_env.driver)
    assert (forced_steps == 0) == bool(skip_forced)


def test_rllib_example_without_ray_says_where_ray_is():
    """Run as a script where Ray cannot be imported (blocked, so this holds in every venv)."""
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"
    code = ("import runpy, sys; sys.modules['ray'] = None; sys.argv = ['rllib_ppo.py', '--help']; "
            f"runpy.run_path({str(example)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and ".venv-rllib" in lines[0] and "make install-rllib" in lines[0] \
        and "[rllib]" in lines[0]


def test_a_deep_copy_of_the_single_agent_env_goes_on_like_the_original():
    """The copy keeps the match, the opponents' random streams and the learner's seat."""
    import copy

    def rest(env, observation, rng):
        trace, done = [], False
        while not done:
            legal = np.flatnonzero(observation["action_mask"])
            observation, reward, terminated, truncated, _ = env.step(
                int(legal[rng.integers(len(legal))]))
            trace.append((observation["observation"].tobytes(), reward))
            done = terminated or truncated
        return trace

    env = SingleAgentEnv(opponents="random", partner="greedy", reward="points")
    observation, _ = env.reset(seed=5)
    for _ in range(6):
        observation, *_ = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
    clone = copy.deepcopy(env)
    copied = rest(clone, observation, np.random.default_rng(3))
    assert rest(env, observation, np.random.default_rng(3)) == copied
