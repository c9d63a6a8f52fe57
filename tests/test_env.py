"""The PettingZoo AEC environment sevenrocks_v0: determinism, rewards, illegal moves, observation bounds."""

import json
import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.env import MAX_PLACEMENT_POINTS, MAX_TEAM_DEDUCTION, observation_space
from sevenrocks_env.observation import OBS_SIZE, encode
from sevenrocks_env.rules import Match, apply_action, deal, legal_actions
from sevenrocks_env.scoring import deduction
from sevenrocks_env.tiles import KNOCK, mask_of, parse_tile


def play_out(env, seed, policy=None, on_step=None):
    """Play one match with random legal actions; returns the per-agent summed rewards."""
    env.reset(seed=seed)
    rng = random.Random(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        if term or trunc:
            action = None
        else:
            legal = np.flatnonzero(obs["action_mask"])
            action = int(rng.choice(legal)) if policy is None else policy(agent, obs)
        if on_step:
            on_step(env, agent, action)
        env.step(action)
    return totals


# PettingZoo's own checkers (api_test, seed_test, ...) run in tests/test_checkers.py.


def test_same_seed_same_match_byte_for_byte():
    records = []
    for _ in range(2):
        env = sevenrocks_v0.env()
        play_out(env, seed=7)
        records.append(json.dumps(env.unwrapped.game_record(), sort_keys=True))
    assert records[0] == records[1]


def test_round_deal_depends_only_on_seed_and_round_index():
    """Two different plays from the same seed see the same deals and drawn openers per round."""
    env = sevenrocks_v0.env()
    play_out(env, seed=11)
    first = env.unwrapped.game_record()["rounds"]
    play_out(env, seed=11, policy=lambda agent, obs: int(np.flatnonzero(obs["action_mask"])[-1]))
    second = env.unwrapped.game_record()["rounds"]
    for r in range(min(len(first), len(second))):
        assert first[r]["hands"] == second[r]["hands"]
        hands, _ = deal(11, r)
        assert [mask_of(parse_tile(t) for t in hand) for hand in first[r]["hands"]] == hands
    drawn_after_a_block = 0
    for rounds in (first, second):  # the opener is the draw, except after a domino (R2)
        for r, rnd in enumerate(rounds):
            if r == 0 or rounds[r - 1]["result"] == "blocked":
                assert rnd["opener"] == deal(11, r)[1], r
                drawn_after_a_block += r > 0
    assert drawn_after_a_block  # a draw that follows play, not only round 0's


def _deals_after(env, seed, resets):
    """The first round's hands of ``resets`` unseeded resets after ``reset(seed=seed)``."""
    env.reset(seed=seed)
    hands = []
    for _ in range(resets):
        env.reset()
        hands.append(env.unwrapped.match.hands)
    return hands


@pytest.mark.parametrize("make", [sevenrocks_v0.env, sevenrocks_v0.parallel_env])
def test_seeding_once_makes_the_unseeded_resets_after_it_reproducible(make):
    """As Gymnasium's ``np_random``: ``reset()`` without a seed goes on from the last seed (what
    TorchRL's ``PettingZooWrapper(seed=...)`` relies on), and each reset deals a new match."""
    first, second = _deals_after(make(), 42, 3), _deals_after(make(), 42, 3)
    assert first == second
    assert len({tuple(hands) for hands in first}) == 3
    assert _deals_after(make(), 43, 3) != first


def test_an_unseeded_reset_records_the_seed_that_dealt_it():
    env = sevenrocks_v0.raw_env()
    env.reset(seed=5)
    env.reset()
    again = sevenrocks_v0.raw_env()
    again.reset(seed=env.seed_used)
    assert 0 <= env.seed_used <= (1 << 63) - 1 and again.match.hands == env.match.hands
    fresh = [sevenrocks_v0.raw_env() for _ in range(2)]
    for unseeded in fresh:  # never seeded: fresh entropy, as before
        unseeded.reset()
    assert fresh[0].seed_used != fresh[1].seed_used


def test_unseeded_resets_after_a_seed_each_deal_a_new_match():
    """The seeds of unseeded resets are drawn from the whole seed range, not a handful: 300 of
    them (from a seeded generator, so the test is reproducible) never repeat a seed."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=12)
    seeds = set()
    for _ in range(300):
        env.reset()
        seeds.add(env.seed_used)
    assert len(seeds) == 300


def test_a_copy_resets_to_what_the_original_resets_to():
    """The generator of the unseeded resets travels with ``pickle`` and ``copy.deepcopy``."""
    import copy

    env = sevenrocks_v0.raw_env()
    env.reset(seed=9)
    clone, pickled = copy.deepcopy(env), pickle.loads(pickle.dumps(env))
    for other in (clone, pickled):
        other.reset()
    env.reset()
    assert clone.seed_used == pickled.seed_used == env.seed_used


def test_win_reward_and_terminal_last():
    env = sevenrocks_v0.env()
    totals = play_out(env, seed=3)
    record = env.unwrapped.game_record()
    winner = record["winner"]
    assert winner in (0, 1)
    assert max(record["scores"]) >= 250 and record["scores"][winner] >= 250
    for seat in range(4):
        assert totals[f"player_{seat}"] == (1.0 if seat % 2 == winner else -1.0)
    assert env.agents == []
    # record still available after the agents are gone
    assert env.unwrapped.game_record() == record
    for which in (env, env.unwrapped):  # not PettingZoo's bare KeyError of an agent's name
        with pytest.raises(RuntimeError, match="call reset"):
            which.last()


@pytest.mark.parametrize("max_rounds", [100, 1])
def test_no_seat_has_a_legal_action_once_the_match_is_over(max_rounds):
    """After the last move (a win, or the round limit) the seat that played it is still "on
    turn" in the rules state; the mask of every seat's final observation is all zeros."""
    env = sevenrocks_v0.env(max_rounds=max_rounds)
    final_masks = {}

    def look(env, agent, action):
        if action is None:
            final_masks[agent] = env.observe(agent)["action_mask"].copy()
    play_out(env, seed=3, on_step=look)
    assert sorted(final_masks) == env.possible_agents
    assert all(not mask.any() for mask in final_masks.values())


def test_points_reward_sums_to_margin():
    env = sevenrocks_v0.env(reward="points")
    totals = play_out(env, seed=5)
    scores = env.unwrapped.game_record()["scores"]
    margin = (scores[0] - scores[1]) / 100
    assert totals["player_0"] == pytest.approx(margin)
    assert totals["player_2"] == pytest.approx(margin)
    assert totals["player_1"] == pytest.approx(-margin)


def test_max_rounds_truncates_with_zero_reward():
    env = sevenrocks_v0.env(max_rounds=1)
    truncated = []
    totals = play_out(env, seed=2, on_step=lambda e, a, act: truncated.append(e.truncations.get(a)))
    assert len(env.unwrapped.game_record()["rounds"]) == 1
    assert truncated[-1] is True
    assert set(totals.values()) == {0.0}


def test_a_higher_target_is_respected():
    env = sevenrocks_v0.env(target=60)
    play_out(env, seed=1)
    record = env.unwrapped.game_record()
    assert record["target"] == 60 and max(record["scores"]) >= 60


def test_knock_is_an_explicit_step_and_mask_is_knock_only():
    env = sevenrocks_v0.raw_env()
    seen = []

    def on_step(e, agent, action):
        if action == KNOCK:
            mask = e.observe(agent)["action_mask"]
            seen.append(mask.nonzero()[0].tolist())

    for seed in range(5):
        play_out(env, seed, on_step=on_step)
    assert seen and all(m == [KNOCK] for m in seen)


def test_raw_env_says_why_an_action_equal_to_a_legal_one_is_refused():
    """``0.0`` or ``True`` beside a legal ``0`` read "illegal action 0.0 ...; legal actions:
    [0 (0|0 west), ...]": a contradiction; the message says what is wrong with the value."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    legal = legal_actions(env.match)[0]
    for action, words in ((float(legal), "a float, not an int action index"),
                          (True, "a bool, not an int action index"),
                          (str(legal), "a str, not an int action index"),
                          (None, "None is the step of a terminated or truncated agent only"),
                          (113, "113 (outside [0, 112])"), (-1, "-1 (outside [0, 112])"),
                          (KNOCK, "illegal action 112 (knock) for")):
        with pytest.raises(ValueError, match="illegal action") as info:
            env.step(action)
        assert words in str(info.value), (action, str(info.value))
    # either end of [0, 112] is an action index, described as one when illegal
    from sevenrocks_env.tiles import illegal_action_text

    assert illegal_action_text(0, [KNOCK], "seat 2") == \
        "illegal action 0 (0|0 west) for seat 2; legal actions: [112 (knock)]"


def test_raw_env_rejects_illegal_actions_and_keeps_state():
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    agent = env.agent_selection
    before = env.observe(agent)["observation"].copy()
    legal = legal_actions(env.match)
    bad = next(a for a in range(113) if a not in legal)
    for action in (bad, 113, -1, "3", 2.5, None, True, False, np.bool_(True)):
        with pytest.raises(ValueError, match="illegal action") as info:
            env.step(action)
        assert "legal actions" in str(info.value)
    assert env.agent_selection == agent
    assert np.array_equal(env.observe(agent)["observation"], before)


def test_wrapped_env_illegal_move_ends_match_with_penalty():
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    agent = env.agent_selection
    obs = env.observe(agent)
    bad = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    env.step(bad)
    assert all(env.terminations.values())
    rewards = {}
    for other in env.agent_iter():
        rewards[other] = env.last()[1]
        env.step(None)
    assert rewards[agent] == -1 and sum(rewards.values()) == -1


def test_wrapped_env_out_of_range_asserts():
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    with pytest.raises(AssertionError):
        env.step(113)


def test_bad_constructor_arguments():
    for kwargs in ({"reward": "money"}, {"target": 0}, {"max_rounds": -1},
                   {"render_mode": "3d"}, {"render_observer": 5}, {"render_observer": True},
                   {"render_mode": np.array(["ansi", "human"])}):  # NumPy's ambiguous truth
        with pytest.raises(ValueError, match=f"^{next(iter(kwargs))} must be"):
            sevenrocks_v0.raw_env(**kwargs)


def test_numpy_reward_weights_are_numbers():
    env = sevenrocks_v0.raw_env(reward="shaped", points_scale=np.float32(0.5), win_reward=np.int64(2))
    assert (env.points_scale, env.win_reward) == (0.5, 2.0)
    with pytest.raises(ValueError, match="points_scale"):
        sevenrocks_v0.raw_env(reward="shaped", points_scale=np.bool_(True))


def test_unknown_agents_and_bool_actions_are_clear_errors():
    env = sevenrocks_v0.env()
    env.reset(seed=3)
    for space in (env.observation_space, env.action_space):
        with pytest.raises(ValueError, match="unknown agent 'player_9'"):
            space("player_9")
    before = env.observe(env.agent_selection)["observation"].copy()
    with pytest.raises(TypeError, match="a bool"):  # the mask lookup took True as an index array
        env.step(True)
    assert np.array_equal(env.observe(env.agent_selection)["observation"], before)


def test_raw_env_is_picklable():
    env = sevenrocks_v0.raw_env(target=100, reward="points")
    clone = pickle.loads(pickle.dumps(env))
    assert clone.target == 100 and clone.reward_mode == "points" and clone.points_scale == 0.01 and clone.win_reward == 0.0


def _rest_of_match(env, rng) -> list:
    """Play ``env`` to its end with ``rng``'s legal choices; every step's (agent, observation,
    reward, termination, truncation) in order."""
    trace = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        trace.append((agent, observation["observation"].tobytes(), reward, terminated, truncated))
        legal = np.flatnonzero(observation["action_mask"])
        env.step(None if terminated or truncated else int(legal[rng.randrange(len(legal))]))
    return trace


@pytest.mark.parametrize("make", [sevenrocks_v0.raw_env, sevenrocks_v0.env])
@pytest.mark.parametrize("copy_of", ["deepcopy", "pickle"])
def test_a_copy_of_an_env_mid_match_goes_on_from_the_same_position(make, copy_of):
    """``copy.deepcopy`` and ``pickle`` keep the game in progress (a search copies the env
    before trying a move); the copy and the original go on apart."""
    import copy

    env = make(reward="points", target=150)
    env.reset(seed=8)
    rng = random.Random(1)
    for _ in range(37):  # into the second round or late in the first
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    clone = copy.deepcopy(env) if copy_of == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.match is not env.unwrapped.match
    assert clone.agent_selection == env.agent_selection and clone.agents == env.agents
    copied = _rest_of_match(clone, random.Random(2))
    assert _rest_of_match(env, random.Random(2)) == copied and len(copied) > 4


def test_observation_matches_space():
    env = sevenrocks_v0.env()
    env.reset(seed=4)
    obs = env.observe(env.agent_selection)
    assert obs["observation"].shape == (OBS_SIZE,) and obs["observation"].dtype == np.float32
    assert obs["action_mask"].dtype == np.int8
    assert env.observation_space(env.agent_selection).contains(obs)


def test_each_agent_has_its_own_spaces_the_same_object_on_every_call():
    """The four agents shared one observation space, so seeding one seeded them all (PettingZoo's
    classic games build one per agent; ``seed_test`` seeds them one by one)."""
    env = sevenrocks_v0.env()
    for spaces_of in (env.observation_space, env.action_space):
        assert len({id(spaces_of(agent)) for agent in env.possible_agents}) == 4
        assert all(spaces_of(agent) is spaces_of(agent) for agent in env.possible_agents)
    first, second = (env.observation_space(a) for a in env.possible_agents[:2])
    first.seed(1)
    second.seed(2)
    drawn = first.sample()["observation"]
    first.seed(1)
    assert np.array_equal(first.sample()["observation"], drawn)  # player_1's seed plays no part
    assert first == second  # equal spaces all the same


def test_game_record_mid_round_has_null_result():
    env = sevenrocks_v0.env()
    env.reset(seed=9)
    for _ in range(3):
        obs = env.observe(env.agent_selection)
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    record = env.unwrapped.game_record()
    json.dumps(record)
    assert record["rounds"][-1]["result"] is None and len(record["rounds"][-1]["moves"]) == 3
    assert record["winner"] is None


# The no-leak property over random matches, seats and moments is in tests/test_no_leak.py.


# -- observation bounds: finite, true, and what every observation obeys --------------------------

@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), target=st.sampled_from([5, 30, 250, 1000]),
       max_rounds=st.sampled_from([1, 3, 100]))
def test_every_observation_of_random_play_lies_in_the_declared_space(seed, target, max_rounds):
    """Each seat's observation after every step (and after the match) is in its space."""
    env = sevenrocks_v0.raw_env(target=target, max_rounds=max_rounds)
    space = env.observation_space("player_0")
    assert np.isfinite(space["observation"].low).all() and np.isfinite(space["observation"].high).all()

    def check(e, agent, action):
        for other in e.possible_agents:
            assert space.contains(e.observe(other)), (other, e.match.scores)

    play_out(env, seed, on_step=check)
    for agent in env.possible_agents:
        assert space.contains(env.observe(agent))


@pytest.mark.parametrize("target, max_rounds", [(250, 100), (5, 1000), (1000, 1)])
def test_the_score_bounds_are_exactly_the_derived_ones(target, max_rounds):
    """Scores at the derived extremes are inside the space, one point beyond is outside."""
    space = observation_space(target, max_rounds)
    hands, opener = deal(0, 0)
    lowest, highest = -MAX_TEAM_DEDUCTION * max_rounds, target - 1 + MAX_PLACEMENT_POINTS
    for scores, inside in (((lowest, highest), True), ((highest, lowest), True),
                           ((lowest - 1, 0), False), ((0, highest + 1), False)):
        match = Match.from_deal(hands, opener, target=target)
        match.scores = list(scores)  # the winner's score, past the target: set by hand
        obs = {"observation": encode(match, 0), "action_mask": np.zeros(113, np.int8)}
        assert space.contains(obs) is inside, scores
    env = sevenrocks_v0.raw_env(target=target, max_rounds=max_rounds)
    for agent in env.possible_agents:  # the env's own spaces follow its target and max_rounds
        assert env.observation_space(agent) == space, agent


def test_the_module_observation_space_defaults_to_the_env_s_defaults():
    """``observation_space()`` is "the observation space of every agent" of a default env."""
    assert observation_space() == sevenrocks_v0.raw_env().observation_space("player_0")


@settings(max_examples=200, deadline=None)
@given(st.permutations(range(28)))
def test_a_partnership_loses_at_most_max_team_deduction_per_round(order):
    """R7: two 7-tile hands of a team, rounded separately, never cost more than the bound."""
    first = sum(1 << t for t in order[:7])
    second = sum(1 << t for t in order[7:14])
    assert deduction(first) + deduction(second) <= MAX_TEAM_DEDUCTION
    assert MAX_PLACEMENT_POINTS == 35  # R5: the largest scoring placement


def test_max_team_deduction_is_reached_by_the_heaviest_hands():
    from sevenrocks_env.tiles import TILE_PIPS

    heaviest = sorted(range(28), key=lambda t: -TILE_PIPS[t])
    first, second = sum(1 << t for t in heaviest[:7]), sum(1 << t for t in heaviest[7:14])
    assert (deduction(first), deduction(second)) == (70, 50)
    assert MAX_TEAM_DEDUCTION == 120


@pytest.mark.parametrize("observer", [4, -1, 3.5, "0", 1.0, np.float64(2.0), 1 + 0j, np.True_])
def test_render_observer_must_be_a_seat(observer):
    """``render_observer`` "must be a seat 0-3 or None": 4 (one past the last seat) is refused,
    and so are values equal to a seat that are not ints (``1 + 0j`` crashed ``render()``)."""
    with pytest.raises(ValueError, match="render_observer"):
        sevenrocks_v0.raw_env(render_observer=observer)


@pytest.mark.parametrize("observer", [None, 0, 3, np.int64(2)])
def test_render_observer_takes_a_seat_or_none(observer):
    assert sevenrocks_v0.raw_env(render_observer=observer).render_observer == observer


@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render_after_a_round_ends_shows_how_it_ended(mode):
    """The next round is dealt at once, so the render after a round's last move showed a fresh
    table: the last tile, the hands, the deductions were never seen (env videos neither)."""
    env = sevenrocks_v0.raw_env(render_mode=mode)
    env.reset(seed=3)
    rng = random.Random(0)
    while len(env.match.history) == 1:
        env.step(rng.choice(legal_actions(env.match)))
    ended = env.render()
    if mode == "ansi":
        assert "round over" in ended and "round 1 " in ended
    else:  # the round that ended, not the fresh deal the match holds now
        from sevenrocks_env.render.picture import render_picture
        from sevenrocks_env.render.text import just_ended_round
        assert np.array_equal(ended, render_picture(just_ended_round(env.match), spectator=True))
        assert not np.array_equal(ended, render_picture(env.match, spectator=True))
    env.step(rng.choice(legal_actions(env.match)))  # the next round's first tile
    after = env.render()
    if mode == "ansi":
        assert "round over" not in after and "round 2 " in after
    else:
        assert ended.shape == after.shape and not np.array_equal(ended, after)


def test_the_aec_env_starts_from_options_match():
    """reset(options={"match": m}) dealt a fresh match without a word (the Gymnasium view
    honoured it); now every AEC env starts from a copy of m, its later rounds dealt from
    m.seed (seed_used), checked as the Gymnasium view checks it."""
    from sevenrocks_env.env import raw_env

    start = Match.new(99)
    start.scores = [200, 100]
    for make in (raw_env, sevenrocks_v0.env):
        env = make(render_mode="ansi")
        env.reset(seed=1, options={"match": start})
        assert env.unwrapped.match.to_state() == start.to_state() | {"max_rounds": 100}
        assert env.unwrapped.match is not start and env.unwrapped.seed_used == 99
        assert "200" in env.render() and env.agent_selection == f"player_{start.turn}"
        env.step(legal_actions(start)[0])
        assert start.placements == 0  # the caller's match is untouched
        env.reset(seed=1, options={"options": 1})  # PettingZoo's api_test: unknown keys pass
        assert env.unwrapped.match.scores == [0, 0] and env.unwrapped.seed_used == 1
        with pytest.raises(ValueError, match="must be a sevenrocks_env.rules.Match"):
            env.reset(options={"match": "not a match"})
        with pytest.raises(ValueError, match="this env plays to 250"):
            env.reset(options={"match": Match.new(5, target=100)})
        with pytest.raises(TypeError, match="options must be a dict"):
            env.reset(options="nonsense")


def test_subtly_illegal_moves_are_refused_in_both_engines():
    """The illegal moves tried elsewhere were crude (an unheld tile, action 113, the opening):
    a rule check that ignored whether a held tile's number matches the end, or let a seat knock
    while holding a tile that fits, passed them.  Here, mid-round: a held tile on an open end
    it does not match, and a knock beside a legal placement (R3, R6).  The batched engine
    where torch is installed (the core-only venv runs this file too)."""
    import importlib.util

    from sevenrocks_env.rules import is_legal
    from sevenrocks_env.tiles import TILE_HIGH, TILE_LOW, tiles_of

    rng, checked = random.Random(2), 0
    for seed in range(40):
        env = sevenrocks_v0.raw_env(max_rounds=1)
        env.reset(seed=seed)
        match = env.match
        for _ in range(rng.randrange(1, 12)):  # into the round
            if match.over or match.awaiting_deal:
                break
            env.step(rng.choice(legal_actions(match)))
        if match.over or match.placements == 0 or legal_actions(match) == [KNOCK]:
            continue
        seat = match.turn
        wrong = [4 * tile + slot for tile in tiles_of(match.hands[seat])
                 for slot, number in enumerate(match.ends)
                 if number >= 0 and number not in (TILE_LOW[tile], TILE_HIGH[tile])]
        for action in wrong[:2] + [KNOCK]:
            assert not is_legal(match, action), (seed, action)
            state = match.to_state()
            with pytest.raises(ValueError, match="illegal action"):
                env.step(action)
            assert match.to_state() == state
            if importlib.util.find_spec("torch") is not None:
                import torch
                venv = sevenrocks_v0.vector_env(num_envs=1, max_rounds=1)
                venv.reset(seed=0)
                venv.load([match])
                with pytest.raises(ValueError, match="illegal"):
                    venv.step(torch.tensor([action]))
            checked += 1
    assert checked > 30


def test_a_won_match_terminates_every_seat_and_truncates_none():
    """A win (R8) is a terminal state, not a cut: a learner bootstraps past a truncation, so a
    win reported as truncated would be valued as a match that goes on."""
    env = sevenrocks_v0.raw_env(target=60)
    ends = {}

    def look(e, agent, action):
        if action is None:
            ends[agent] = (e.terminations[agent], e.truncations[agent])
    play_out(env, seed=4, on_step=look)
    assert env.match.winner is not None
    assert ends == {agent: (True, False) for agent in env.possible_agents}


def test_rewards_are_the_last_step_s_only_and_zero_after_a_step_that_scores_nothing():
    """``env.rewards`` (what the parallel view hands out) is reset on every step: a placement
    that scores nothing after one that scored must not repeat the old rewards."""
    env = sevenrocks_v0.raw_env(reward="points")
    env.reset(seed=6)
    rng = random.Random(6)
    kinds = set()
    while env.agents and not (env.terminations[env.agent_selection]
                              or env.truncations[env.agent_selection]):
        before = env.match.scores[0] - env.match.scores[1]
        env.step(rng.choice(legal_actions(env.match)))
        change = (env.match.scores[0] - env.match.scores[1] - before) / 100
        expected = [change, -change, change, -change]
        assert [env.rewards[agent] for agent in env.possible_agents] == pytest.approx(expected)
        kinds.add(change != 0)
        if len(kinds) == 2 and len(env.match.history) > 2:
            break
    assert kinds == {True, False}


def test_options_match_must_be_a_consistent_match_in_play_for_this_env_s_settings():
    """A finished match, one whose fields no play reaches, or one cut at another round limit
    is refused (the observation bounds follow from the env's target and max_rounds)."""
    env = sevenrocks_v0.raw_env(max_rounds=100)
    won = Match.new(3, target=250)
    rng = random.Random(3)
    while not won.over:
        apply_action(won, rng.choice(legal_actions(won)))
    broken = Match.new(5)
    broken.scores = [260, 0]  # past the target with no winner (R8)
    for start, words in ((won, "a match in play"), (broken, "below the target"),
                         (Match.new(5, max_rounds=3), "max_rounds 3")):
        with pytest.raises(ValueError, match=words):
            env.reset(options={"match": start})
    env.reset(options={"match": Match.new(5, max_rounds=None)})  # None takes the env's
    assert env.match.max_rounds == 100 and env.seed_used == 5


def test_a_seat_s_rgb_render_shows_no_hidden_hand():
    """With ``render_observer`` a seat, the picture is that seat's view (a video of what the
    agent saw): exchanging a tile between two other hands changes nothing in it, while the
    spectator picture (no observer) shows the change."""
    pictures = {observer: _picture_unchanged_by_an_exchange(observer, 1, 2)
                for observer in (0, None)}
    assert pictures == {0: True, None: False}


def _picture_unchanged_by_an_exchange(observer, a: int, b: int) -> bool:
    """Whether the rgb picture for ``render_observer=observer`` stays the same when seats ``a``
    and ``b`` exchange the first tile of their hands (seed 3)."""
    from sevenrocks_env.tiles import tiles_of

    env = sevenrocks_v0.raw_env(render_mode="rgb_array", render_observer=observer)
    env.reset(seed=3)
    before = env.render()
    hands = env.match.hands
    one, two = tiles_of(hands[a])[0], tiles_of(hands[b])[0]
    hands[a] ^= (1 << one) | (1 << two)
    hands[b] ^= (1 << one) | (1 << two)
    return np.array_equal(before, env.render())


def test_the_target_entry_is_declared_as_0_to_target_over_1000():
    """The module docs' ``[0, target / 1000]``: the bound is the value every observation holds."""
    from sevenrocks_env.observation import OFFSETS

    entry = OFFSETS["scores"].start + 2
    for target in (5, 250, 5000):
        space = observation_space(target, 100)["observation"]
        value = encode(Match.new(0, target=target), 0)[entry]
        assert (space.low[entry], space.high[entry]) == (0, value) == (0, np.float32(target / 1000))


@pytest.mark.parametrize("copy_of", ["deepcopy", "pickle"])
def test_a_copy_draws_only_the_seat_the_original_draws(copy_of):
    """The Gymnasium view sets the AEC env's ``render_observer`` to the learner's seat after
    construction; a copy of it mid-match (``pickle`` rebuilds from the constructor's arguments)
    drew every hidden hand, the original only the learner's."""
    import copy

    from sevenrocks_env.single_agent import SingleAgentEnv

    view = SingleAgentEnv(opponents="random", seat=1, partner="random", render_mode="ansi")
    view.reset(seed=0)
    raw = sevenrocks_v0.raw_env(render_mode="ansi")
    raw.reset(seed=0)
    raw.render_observer = 3
    for env, seat in ((view, 1), (raw, 3)):
        clone = copy.deepcopy(env) if copy_of == "deepcopy" else pickle.loads(pickle.dumps(env))
        hands = [line.split()[1] for line in clone.render().splitlines()
                 if line.startswith("  seat ") and " hand: " in line]
        assert hands == [str(seat)]
        assert clone.render() == env.render()


def test_human_mode_prints_the_table_at_reset_and_after_every_step(capsys):
    """``render_mode="human"`` prints the ansi table (and ``render()`` returns None): at reset and
    after each step, what a person watching the match reads."""
    env = sevenrocks_v0.raw_env(render_mode="human", render_observer=0)
    env.reset(seed=3)
    printed = capsys.readouterr().out
    assert "Seven Rocks - round 1 " in printed
    ansi = sevenrocks_v0.raw_env(render_mode="ansi", render_observer=0)
    ansi.reset(seed=3)
    assert printed == ansi.render() + "\n"
    action = legal_actions(env.match)[0]
    env.step(action)
    ansi.step(action)
    assert capsys.readouterr().out == ansi.render() + "\n"
    assert env.render() is None and capsys.readouterr().out == ansi.render() + "\n"


def test_a_seat_s_rgb_render_shows_that_seat_s_own_hand():
    """The seat's view shows its own hand: exchanging a tile between the observer's hand and
    another's changes the picture (the no-leak test above checks only the other hands)."""
    assert not _picture_unchanged_by_an_exchange(0, 0, 1)


def test_each_agent_s_infos_is_its_own_dict():
    """``infos`` holds one dict per agent: what a wrapper writes into one seat's info (an
    ``action_mask``, a flag) must not appear in the other seats' infos."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    env.infos["player_0"]["note"] = 1
    assert all("note" not in env.infos[agent] for agent in ("player_1", "player_2", "player_3"))
