"""The PettingZoo AEC environment sevenrocks_v0: rewards, the end of a match, illegal moves, bad
arguments, ``options["match"]`` and infos (determinism and copies: ``test_env_seeding.py``;
spaces and rendering: ``test_env_spaces.py``)."""

import json
import re
import random

import numpy as np
import pytest

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.observation import view
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK

from positions import played_to_the_end


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
                          (np.array([legal]), "<ndarray> (shape (1,), dtype int64: pass a Python "
                                              "int, e.g. int(a.item())) for"),
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
    for seat in env.possible_agents:  # no seat to move, no legal action: as at every other end
        ended = env.observe(seat)
        assert not view(ended["observation"], "turn").any() and not ended["action_mask"].any()
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
    won = played_to_the_end(Match.new(3, target=250), 3)
    broken = Match.new(5)
    broken.scores = [260, 0]  # past the target with no winner (R8)
    for start, words in ((won, "a match in play"), (broken, "below the target"),
                         (Match.new(5, max_rounds=3), "max_rounds 3")):
        with pytest.raises(ValueError, match=words):
            env.reset(options={"match": start})
    env.reset(options={"match": Match.new(5, max_rounds=None)})  # None takes the env's
    assert env.match.max_rounds == 100 and env.seed_used == 5


def test_a_refused_start_says_whether_it_is_over_or_lacks_a_seed():
    """One message served a finished match and a seedless one: "must be a match in play with a
    seed" for a match that had a seed and was simply over."""
    from sevenrocks_env.rules import deal

    env = sevenrocks_v0.raw_env(max_rounds=2)
    won = played_to_the_end(Match.new(3, target=60), 3)
    cut = played_to_the_end(Match.new(3, max_rounds=2), 3)
    seedless = Match.from_deal(*deal(4, 0))
    waiting = Match.from_deal(*deal(4, 0))
    for _ in range(200):  # one round: at most 28 placements and their knocks
        if waiting.awaiting_deal:
            break
        apply_action(waiting, legal_actions(waiting)[0])
    assert waiting.awaiting_deal and not waiting.over
    for start, message in (
            (won, f"options['match'] is over (team {won.winner} won it): start from a match "
                  "in play"),
            (cut, "options['match'] is over (it was cut after 2 rounds (max_rounds)): start "
                  "from a match in play"),
            (seedless, "options['match'] has no seed for the later deals: build it with one, "
                       "e.g. Match.from_deal(hands, opener, seed=s)"),
            (waiting, "options['match'] has no seed for the later deals, and it waits for its "
                      "next deal: build it with one")):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            sevenrocks_v0.raw_env(target=start.target, max_rounds=2).reset(
                options={"match": start})
    env.reset(options={"match": Match.from_deal(*deal(4, 0), seed=4)})


def test_each_agent_s_infos_is_its_own_dict():
    """``infos`` holds one dict per agent: what a wrapper writes into one seat's info (an
    ``action_mask``, a flag) must not appear in the other seats' infos."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    env.infos["player_0"]["note"] = 1
    assert all("note" not in env.infos[agent] for agent in ("player_1", "player_2", "player_3"))
