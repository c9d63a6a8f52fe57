"""Agents and policy loading given what no caller should pass: a mask no position has, a device
or path of the wrong kind, a seed of the wrong kind.  Each is one clear error naming the problem,
never a library's traceback from deep inside (or a silent move)."""

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents import GreedyAgent, HeuristicAgent, RandomAgent, SearchAgent  # noqa: E402
from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.agents.policy_search import PolicySearchAgent  # noqa: E402
from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.policy import CheckpointError, load_policy  # noqa: E402
from sevenrocks_env.rules import Match  # noqa: E402
from sevenrocks_env.tiles import KNOCK  # noqa: E402

SPECS = ["random", "greedy", "heuristic", "search:samples=2", "ckpt:shipped",
         "sample:policy=shipped", "search:policy=shipped,samples=2",
         "search:policy=shipped,samples=2,inference=0.5"]


# -- B: knock legal beside a placement -----------------------------------------------------------

@pytest.mark.parametrize("spec", SPECS)
def test_a_mask_with_knock_beside_a_placement_is_not_a_mask_of_this_game(spec):
    """R6: knock is legal exactly when nothing can be placed.  Such a mask was an IndexError
    inside heuristic (rules.py) and the policy search (batched/observe.py); greedy, search and
    the checkpoints played something."""
    agent = make_agent(spec, seed=0)
    match = Match.new(1)
    obs, real = encode(match, match.turn), action_mask(match, match.turn)
    one = np.zeros_like(real)
    one[[int(np.flatnonzero(real)[0]), KNOCK]] = 1  # two legal actions: no forced move
    for mask in (np.where(np.arange(len(real)) == KNOCK, 1, real).astype(real.dtype), one,
                 one.astype(bool)):
        with pytest.raises(ValueError, match=r"not a mask of this game: it marks knock \(112\) "
                                             r"legal beside \d+ placement"):
            agent.act(obs, mask)


@pytest.mark.parametrize("spec", SPECS)
def test_the_mask_and_observation_of_two_seats_are_refused_in_words(spec):
    """``env.observe(other_agent)`` with the mask of the seat on turn: the policy search failed
    with torch's IndexError deep inside; the other agents played, some a tile their seat does
    not hold (a mask with such a tile marked)."""
    from sevenrocks_env import sevenrocks_v0

    agent = make_agent(spec, seed=0)
    env = sevenrocks_v0.raw_env()
    env.reset(seed=2)
    for _ in range(4):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    seat, mask = env.agent_selection, env.observe(env.agent_selection)["action_mask"]
    other = next(name for name in env.agents if name != seat)
    with pytest.raises(ValueError, match="observation is not of the seat on turn"):
        agent.act(env.observe(other)["observation"], mask)
    obs = env.observe(seat)["observation"]
    held = {int(a) // 4 for a in np.flatnonzero(mask[:KNOCK])}
    foreign = next(4 * tile for tile in range(28)
                   if tile not in held and not obs[tile])  # a tile the seat does not hold
    with_foreign = mask.copy()
    with_foreign[foreign] = 1
    with pytest.raises(ValueError, match=rf"marks \[{foreign}\] legal, but the observation's "
                                         "seat can play only"):
        agent.act(obs, with_foreign)
    plays = {"history": env.public_round()} if "inference" in spec else {}
    assert mask[agent.act(obs, mask, **plays)]


# -- C: load_policy's arguments ------------------------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU-only torch")
def test_load_policy_on_cuda_without_cuda_says_so():
    """It was torch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    for device in ("cuda", "cuda:0", torch.device("cuda")):
        with pytest.raises(ValueError, match="device 'cuda(:0)?': CUDA is not available here"):
            load_policy("shipped", device=device)


@pytest.mark.parametrize("device, error, words", [
    ("bogus", ValueError, "device 'bogus'"),
    ("cpu:x", ValueError, "device 'cpu:x'"),
    (None, TypeError, "device must be a str or torch.device .* got NoneType None"),
    (3.5, TypeError, "device must be a str or torch.device .* got float 3.5"),
])
def test_load_policy_names_a_device_no_policy_can_run_on(device, error, words):
    """torch's RuntimeError ('Expected one of cpu, cuda, ...') and pybind's TypeError named no
    argument."""
    with pytest.raises(error, match=words):
        load_policy("shipped", device=device)
    with pytest.raises(error, match=words):
        PolicySearchAgent("shipped", samples=2, device=device)


def test_an_int_device_is_torchs_cuda_shorthand_and_true_is_no_device():
    """``torch.device(0)`` is ``cuda:0``: the policy takes that shorthand as torch does."""
    if torch.cuda.is_available():
        assert load_policy("shipped", device=0).device == torch.device("cuda", 0)
    else:
        with pytest.raises(ValueError, match="device 'cuda:0': CUDA is not available here"):
            load_policy("shipped", device=0)
    with pytest.raises(TypeError, match="device must be a str or torch.device .* got bool True"):
        load_policy("shipped", device=True)


@pytest.mark.parametrize("path, words", [(None, "NoneType None"), (3, "int 3"),
                                         (b"shipped", "bytes"), (["shipped"], "list")])
def test_load_policy_names_a_path_that_is_no_path(path, words):
    """pathlib's 'expected str, bytes or os.PathLike object, not NoneType' named no argument."""
    with pytest.raises(TypeError, match=f"checkpoint path must be a str or os.PathLike .* got "
                                        f"{words}"):
        load_policy(path)


def test_a_checkpoint_path_with_a_nul_character_is_named():
    """``os.stat`` raised a bare ``ValueError: embedded null byte``."""
    with pytest.raises(CheckpointError, match=r"checkpoint path 'a\\x00b' contains a NUL"):
        load_policy("a\x00b")
    for spec in ("ckpt:a\x00b", "sample:policy=a\x00b", "search:policy=a\x00b"):
        with pytest.raises(ValueError, match="contains a NUL character") as raised:
            make_agent(spec)
        assert "a\\x00b" in str(raised.value)


# -- D: seeds --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def every_kind_of_agent():
    """One agent of every class, built without a seed, with what builds it given a seed."""
    policy = load_policy("shipped")
    net = policy.model
    return [(RandomAgent(), RandomAgent), (GreedyAgent(), GreedyAgent),
            (HeuristicAgent(), HeuristicAgent),
            (SearchAgent(samples=2), lambda seed: SearchAgent(samples=2, seed=seed)),
            (policy, None), (load_policy("shipped", deterministic=False), None),
            (PolicySearchAgent(net, samples=2), lambda seed: PolicySearchAgent(net, samples=2,
                                                                                seed=seed)),
            (make_agent("search:policy=shipped,samples=2,inference=0.5"), None),
            *([(make_agent("openspiel:ismcts:sims=2"), None)]  # (its seed: numpy's error)
              if importlib.util.find_spec("pyspiel") else [])]


#: Seeds every agent takes: numpy integers as the envs take them, ints past 2**64 (an arena's
#: or the web page's seed times 4).
GOOD_SEEDS = [None, 0, 7, np.int64(7), np.uint64(2 ** 63), 2 ** 64 + 7, 2 ** 70]
BAD_SEEDS = [(-1, ValueError), (-(2 ** 70), ValueError), (np.int64(-3), ValueError),
             (1.5, TypeError), ("7", TypeError), (True, TypeError), (np.float64(2.0), TypeError),
             ([1], TypeError)]


def test_every_agent_takes_exactly_the_seeds_make_agent_takes(every_kind_of_agent):
    """RandomAgent(seed=-1) and SearchAgent(seed=-1) were numpy's 'expected non-negative
    integer', 1.5 a SeedSequence TypeError; PolicyAgent.seed took -1, 1.5 and "7" silently;
    greedy and heuristic ignored any seed.  Now each refuses what make_agent refuses, in its
    words, and takes what it takes."""
    match = Match.new(5)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    for seed in GOOD_SEEDS:
        make_agent("random", seed=seed)
        for agent, build in every_kind_of_agent:
            agent.seed(seed)
            if build is not None:
                agent = build(seed=seed)
            if not getattr(agent, "needs_history", False):
                assert mask[agent.act(obs, mask)], (agent.name, seed)
    for seed, error in BAD_SEEDS:
        with pytest.raises(error, match="seed must be a non-negative int or None") as expected:
            make_agent("random", seed=seed)
        for agent, build in every_kind_of_agent:
            with pytest.raises(error) as raised:
                agent.seed(seed)
            assert str(raised.value) == str(expected.value), agent.name
            if build is not None:
                with pytest.raises(error) as raised:
                    build(seed=seed)
                assert str(raised.value) == str(expected.value), agent.name
