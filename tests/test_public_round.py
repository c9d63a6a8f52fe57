"""public_round: the round's public plays, and every driver passing them to agents that ask."""

from __future__ import annotations

import numpy as np
import pytest

from sevenrocks_env import arena, rules, sevenrocks_v0
from sevenrocks_env.agents import GreedyAgent
from sevenrocks_env.driver import MatchDriver
from sevenrocks_env.public_round import MAX_ROUND_ACTIONS, PublicRound, public_round
from sevenrocks_env.single_agent import SingleAgentEnv
from sevenrocks_env.web.games import Game, Setup


def _replayed(history: PublicRound, hands_at_start, target=250) -> rules.Match:
    """The round rebuilt from its start (the real hands) by the public plays."""
    match = rules.Match.from_deal(hands_at_start, history.opener, target=target,
                                  scores=history.scores)
    for action in history.actions:
        rules.apply_action(match, action)
    return match


def test_the_public_round_replays_from_the_round_start_to_the_match_now():
    rng = np.random.default_rng(0)
    checked = knocks = 0
    for seed in range(30):
        match = rules.Match.new(seed, target=150)
        while not match.over:
            history = public_round(match)
            assert history.seat_on_turn == match.turn
            log = match.history[-1]
            replay = _replayed(history, log.hands, target=150)
            for name in ("hands", "played_by", "ends", "turn", "voids", "scores", "spinner"):
                assert getattr(replay, name) == getattr(match, name), name
            checked += 1
            knocks += rules.KNOCK in history.actions
            legal = rules.legal_actions(match)
            rules.apply_action(match, int(rng.choice(legal)))
    assert checked > 1000 and knocks > 50


def test_the_scores_are_those_the_round_started_from():
    match = rules.Match.from_deal(rules.deal(3, 0)[0], 0, scores=(40, -15))
    assert public_round(match) == PublicRound(0, (40, -15), ())
    rng = np.random.default_rng(3)
    scored = 0
    while not match.awaiting_deal:
        assert public_round(match).scores == (40, -15)
        scored += match.scores != [40, -15]  # placements scored meanwhile (R5)
        rules.apply_action(match, int(rng.choice(rules.legal_actions(match))))
    assert scored


def test_a_match_without_history_or_a_round_in_progress_has_no_public_round():
    with pytest.raises(ValueError, match="keeps no history"):
        public_round(rules.Match.new(1, keep_history=False))
    match = rules.Match.from_deal(rules.deal(1, 0)[0], 0)  # no seed: waits after its round
    while not match.awaiting_deal:
        rules.apply_action(match, rules.legal_actions(match)[0])
    with pytest.raises(ValueError, match="no round in progress"):
        public_round(match)


@pytest.mark.parametrize("bad, words", [
    (PublicRound(4, (0, 0), ()), "opener"),
    (PublicRound(True, (0, 0), ()), "opener"),
    (PublicRound(0, (0,), ()), "scores"),
    (PublicRound(0, (0, 10 ** 9), ()), "scores"),
    (PublicRound(0, (0, 0.5), ()), "scores"),
    (PublicRound(0, (0, 0), (113,)), "action 0"),
    (PublicRound(0, (0, 0), (4, -1)), "action 1"),
    (PublicRound(0, (0, 0), (4, "8")), "action 1"),
    (PublicRound(0, (0, 0), "4 8"), "sequence"),
    (PublicRound(0, (0, 0), np.zeros((2, 2), int)), "sequence"),
    (PublicRound(0, (0, 0), np.array([4.5])), "action 0"),
    (PublicRound(0, (0, 0), (0,) * (MAX_ROUND_ACTIONS + 1)), "at most"),
])
def test_checked_names_the_bad_field(bad, words):
    with pytest.raises(ValueError, match=words):
        bad.checked()


def test_checked_gives_plain_ints():
    history = PublicRound(np.int64(2), [np.int64(5), -10], [np.int64(9), 112]).checked()
    assert history == PublicRound(2, (5, -10), (9, 112))
    assert PublicRound(0, (0, 0), np.array([9, 112])).checked().actions == (9, 112)
    assert all(type(v) is int for v in (history.opener, *history.scores, *history.actions))


def test_the_aec_env_gives_the_round_in_progress():
    env = sevenrocks_v0.env()
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.public_round()
    env.reset(seed=4)
    for _ in range(30):
        assert env.unwrapped.public_round() == public_round(env.unwrapped.match)
        obs = env.last()[0]
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert len(env.unwrapped.public_round().actions) > 0
    while env.agents:  # to the match's end: no round in progress
        obs, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated
                 else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(ValueError, match="no round in progress"):
        env.unwrapped.public_round()


class HistorySpy(GreedyAgent):
    """Greedy, checking that every history it is given replays to its observation."""

    needs_history = True

    def __init__(self, hands_of):
        self.hands_of, self.asked = hands_of, 0

    def act(self, observation, action_mask, history=None):
        assert isinstance(history, PublicRound)
        match = self.hands_of()
        replay = _replayed(history, match.history[-1].hands, match.target)
        from sevenrocks_env.observation import encode
        assert np.array_equal(encode(replay, replay.turn), observation)
        self.asked += 1
        return super().act(observation, action_mask)


def test_the_match_driver_passes_the_round_to_agents_that_ask():
    match = rules.Match.new(6, target=150)
    spy = HistorySpy(lambda: match)
    MatchDriver(match, [spy, GreedyAgent(), spy, GreedyAgent()]).run()
    assert spy.asked > 20


def test_the_arena_passes_the_round_to_agents_that_ask(monkeypatch):
    seen = []
    original = rules.Match.new

    def new(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(rules.Match, "new", new)
    spy = HistorySpy(lambda: seen[-1])
    arena.evaluate(spy, "greedy", pairs=1, seed=2, target=100)
    assert spy.asked > 10


def test_the_web_page_passes_the_round_to_bots_that_ask():
    match = rules.Match.new(7, target=100)
    spy = HistorySpy(lambda: match)
    game = Game("g", Setup(0, "greedy", "greedy", "greedy", 100, 7),
                {0: "you", 1: "spy", 2: "spy", 3: "spy"}, {1: spy, 2: spy, 3: spy}, match)
    while not match.over:
        if game.human_to_move():
            game.play_human(rules.legal_actions(match)[0], game.ply)
        else:
            game.play_bot(game.ply)
    assert spy.asked > 20


def test_the_single_agent_envs_opponents_get_the_round():
    holder = {}
    spy = HistorySpy(lambda: holder["env"].match)
    env = holder["env"] = SingleAgentEnv(opponents=spy, seat=0)
    obs, _ = env.reset(seed=5)
    done = False
    while not done:
        action = int(np.flatnonzero(obs["action_mask"])[0])
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert spy.asked > 10
