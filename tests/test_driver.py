"""The match driver: forced moves play themselves, choices go to agents or stop for outside seats."""

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env import arena, rules
from sevenrocks_env.agents import GreedyAgent, RandomAgent
from sevenrocks_env.driver import AgentError, IllegalActionError, MatchDriver, forced_action


class Strict(RandomAgent):
    """A random agent that fails if it is ever asked about a forced move."""

    name = "strict"

    def act(self, observation, action_mask):
        assert action_mask.sum() > 1, "a forced move reached the agent"
        return super().act(observation, action_mask)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_forced_moves_never_reach_agents_and_the_hook_sees_every_move(seed):
    match = rules.Match.new(seed, max_rounds=3)
    shadow = rules.Match.new(seed, max_rounds=3)
    moves = []

    def on_move(m, seat, action, points, forced):
        assert m is match
        assert seat == shadow.turn and forced == (len(rules.legal_actions(shadow)) == 1)
        assert rules.apply_action(shadow, action) == points
        moves.append(forced)

    agents = [Strict(seed=seed + k) for k in range(4)]
    driver = MatchDriver(match, agents, on_move=on_move)
    assert driver.run() is match and match.over
    assert shadow.scores == match.scores and len(moves) == sum(len(r.moves) for r in match.history)
    assert sum(driver.decisions) == moves.count(False)


def test_outside_seat_stops_the_driver_only_for_real_choices():
    match = rules.Match.new(7, max_rounds=2)
    driver = MatchDriver(match, {0: GreedyAgent(), 1: GreedyAgent(), 3: GreedyAgent()})
    rng = np.random.default_rng(0)
    stops = 0
    while (seat := driver.advance()) is not None:
        assert seat == 2 and match.turn == 2 and forced_action(match) is None
        legal = rules.legal_actions(match)
        driver.play(legal[int(rng.integers(len(legal)))])
        stops += 1
    assert match.over and stops == driver.decisions[2] > 0


def test_ask_forced_stops_even_for_a_knock():
    match = rules.Match.new(3, max_rounds=2)
    driver = MatchDriver(match, [None, GreedyAgent(), GreedyAgent(), GreedyAgent()], ask_forced=[0])
    forced_seen = 0
    while (seat := driver.advance()) is not None:
        assert seat == 0
        forced = forced_action(match)
        forced_seen += forced is not None
        driver.play(forced if forced is not None else rules.legal_actions(match)[0])
    assert forced_seen > 0


def test_outside_illegal_action_and_agent_illegal_action_are_clear_errors():
    match = rules.Match.new(0)
    driver = MatchDriver(match, [None] * 4)
    assert driver.advance() == match.turn
    with pytest.raises(ValueError, match="illegal action 112"):
        driver.play(112)  # a knock at the opening is never legal

    class Cheater(RandomAgent):
        name = "cheater"

        def act(self, observation, action_mask):
            return 111

    with pytest.raises(IllegalActionError, match="cheater.*illegal action 111"):
        MatchDriver(rules.Match.new(0), [Cheater()] * 4).run()
    with pytest.raises(ValueError, match="seat .* has no agent"):
        MatchDriver(rules.Match.new(0), [None] * 4).run()
    with pytest.raises(ValueError, match="4 seats"):
        MatchDriver(rules.Match.new(0), [GreedyAgent()] * 3)


SPEC_HINT = r"; make_agent\('greedy'\) builds one"


@pytest.mark.parametrize("seats, seat, hint", [
    (["greedy", GreedyAgent(), None, GreedyAgent()], 0, SPEC_HINT), ({2: "greedy"}, 2, SPEC_HINT),
    ([None, 5, None, None], 1, "$"), ([None, object(), None, None], 1, "$"),
    ([None, None, None, GreedyAgent], 3, r"; GreedyAgent\(\) builds one")],
    ids=["spec", "spec-by-seat", "int", "object", "class"])
def test_a_seat_given_a_spec_or_no_agent_is_refused_before_the_match_moves(seats, seat, hint):
    """``MatchDriver(match, ["greedy", ...])`` was taken, then failed at that seat's first
    choice: ``AttributeError: 'str' object has no attribute 'act'``, as an AgentError."""
    match = rules.Match.new(0)
    with pytest.raises(TypeError, match=rf"seat {seat}: an agent must be an Agent .* or None, "
                                        rf"got .*{hint}"):
        MatchDriver(match, seats)
    assert match.placements == 0


@pytest.mark.parametrize("count", [3, 5])
def test_a_driver_needs_exactly_four_seats(count):
    with pytest.raises(ValueError, match=f"4 seats' agents .* got {count}"):
        MatchDriver(rules.Match.new(0), [None] * count)


@pytest.mark.parametrize("answer", [float, bool], ids=["float", "bool"])
def test_an_agent_answer_equal_to_a_legal_action_but_not_an_int_is_refused(answer):
    """``0.0`` or ``False`` equal the legal action 0 (tile 0 opening at slot 0) but are not
    actions: the driver refuses them by type (``driver.agent_action``) before any legality."""
    match = next(m for m in map(rules.Match.new, range(100)) if m.hands[m.turn] & 1)
    assert 0 in rules.legal_actions(match)

    class Sly(RandomAgent):
        name = "sly"

        def act(self, observation, action_mask):
            return answer(0)

    with pytest.raises(AgentError, match="'sly' at seat .* act must return an int"):
        MatchDriver(match, [Sly()] * 4).run()
    assert match.placements == 0  # refused at the first answer, nothing played


def test_an_outside_numpy_action_is_recorded_as_a_plain_int():
    """``play`` takes an action from an array; the hook and the round's moves (saved as JSON)
    get a plain int."""
    match = rules.Match.new(0)
    seen = []
    driver = MatchDriver(match, [None] * 4, on_move=lambda m, s, a, p, f: seen.append(a))
    assert driver.advance() == match.turn
    action = np.int64(rules.legal_actions(match)[0])
    driver.play(action)
    assert seen == [int(action)] and type(seen[0]) is int
    assert type(match.history[-1].moves[-1][1]) is int


def test_arena_matches_are_the_driver_run():
    result = arena.play_match([GreedyAgent() for _ in range(4)], seed=11)
    match = MatchDriver(rules.Match.new(11, max_rounds=100), [GreedyAgent()] * 4).run()
    assert result.scores == tuple(match.scores) and result.rounds == len(match.history)


def test_a_seedless_match_stops_the_driver_at_its_next_deal():
    """``stopped``: "a seedless match waits for its next deal (start_round)" -- the driver must
    stop there, not move for a seat of a round that has ended."""
    hands, opener = rules.deal(5, 0)
    match = rules.Match.from_deal(hands, opener)  # no seed: the next deal is the caller's
    moves = []

    def on_move(m, seat, action, points, forced):
        moves.append(action)
        assert len(moves) <= 200, "the driver kept moving after the round ended"

    driver = MatchDriver(match, [GreedyAgent() for _ in range(4)], on_move=on_move)
    assert driver.run() is match
    assert len(moves) == len(match.history[-1].moves)
    assert match.awaiting_deal and not match.over and driver.stopped
    assert len(match.history) == 1 and match.history[-1].result is not None
    assert driver.advance() is None  # still stopped: nothing more is played


def test_play_on_a_round_that_waits_for_its_deal_says_so():
    hands, opener = rules.deal(5, 0)
    match = rules.Match.from_deal(hands, opener)
    driver = MatchDriver(match, [RandomAgent(seed=1) for _ in range(4)])
    driver.run()
    assert match.awaiting_deal and not match.over
    with pytest.raises(ValueError, match=r"waits for a deal\): no move to play"):
        driver.play(rules.KNOCK)


def test_forced_moves_played_from_outside_are_not_decisions():
    """``decisions[seat]`` counts the *real choices* taken from outside; a forced move handed to
    ``play`` (an ``ask_forced`` seat) is reported ``forced=True`` to the hook and not counted."""
    match = rules.Match.new(3, max_rounds=2)
    hooks = []
    driver = MatchDriver(match, [None, GreedyAgent(), GreedyAgent(), GreedyAgent()],
                         on_move=lambda m, seat, a, p, forced: hooks.append((seat, forced)),
                         ask_forced=[0])
    choices = forced_plays = 0
    while driver.advance() is not None:
        forced = forced_action(match)
        if forced is None:
            choices += 1
            driver.play(rules.legal_actions(match)[0])
        else:
            forced_plays += 1
            driver.play(forced)
    assert forced_plays > 0 and choices > 0
    assert driver.decisions[0] == choices
    assert sum(1 for seat, forced in hooks if seat == 0 and forced) == forced_plays


def test_an_agent_seat_listed_in_ask_forced_is_not_an_outside_seat():
    """``ask_forced`` "lists outside seats"; a seat with an agent is driven by the driver, and
    ``run`` plays a match of four agents to its end."""
    match = rules.Match.new(3, max_rounds=2)
    driver = MatchDriver(match, [GreedyAgent() for _ in range(4)], ask_forced=[0, 2])
    assert driver.run() is match and match.over


class Slow(GreedyAgent):
    """A greedy agent that spends at least ``PAUSE`` seconds on every choice."""

    PAUSE = 0.01

    def act(self, observation, action_mask):
        time.sleep(self.PAUSE)
        return super().act(observation, action_mask)


def test_think_time_adds_up_over_every_decision():
    """``think_s[seat]``: the seconds spent inside ``act``, summed over the seat's decisions."""
    match = rules.Match.new(4, max_rounds=1)
    driver = MatchDriver(match, [Slow() for _ in range(4)])
    driver.run()
    for seat in range(4):
        assert driver.decisions[seat] >= 2
        assert driver.think_s[seat] >= Slow.PAUSE * driver.decisions[seat]


def test_an_agent_that_raises_is_an_agent_error_naming_it_and_its_seat():
    """A failing agent (a hostile checkpoint's network, a bug of its own) raised its own
    exception type, which CLIs could not tell from a bug of theirs."""
    from sevenrocks_env.driver import AgentError
    from sevenrocks_env.rules import Match

    class Broken:
        name = "broken"

        def act(self, observation, mask):
            raise ValueError("MaskedCategorical: the logits are not finite")

    from sevenrocks_env.agents import make_agent
    match = Match.new(3)
    agents = [Broken()] + [make_agent("random", seed=s) for s in (1, 2, 3)]
    with pytest.raises(AgentError, match=r"agent 'broken' at seat 0 failed: ValueError: "
                                         r"MaskedCategorical: the logits are not finite") as info:
        MatchDriver(match, agents).run()  # a seeded match deals its rounds itself
    assert isinstance(info.value.__cause__, ValueError)


def test_an_agent_answering_a_numpy_int_is_played_as_a_python_int():
    """A network agent may answer ``np.int64``: the move hook, the match history and so the
    game record get a plain int (``json`` cannot write a numpy integer)."""
    import json

    from sevenrocks_env import record as records

    class NumpyAnswers(RandomAgent):
        def act(self, observation, action_mask):
            return np.int64(super().act(observation, action_mask))

    seen = []
    match = rules.Match.new(4, max_rounds=1)
    driver = MatchDriver(match, [NumpyAnswers(seed=k) for k in range(4)],
                         on_move=lambda m, seat, action, points, forced: seen.append(action))
    driver.run()
    assert seen and all(type(action) is int for action in seen)
    json.dumps(records.game_record(match))
