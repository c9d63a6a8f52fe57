"""Seven Rocks in OpenSpiel, more of what a mutation audit of ``sevenrocks_env/openspiel`` found
untested: what resampling keeps and leaves alone (mid-round, mid-deal, at the opener draw, at the
end); the bots' checks (forced moves, illegal answers, a narrowed mask, settings) and seeding;
``AgentBot``'s checks.  The pinned strings of a known position, perfect recall, the observer,
the deal and ``state_from_view``: test_openspiel_audit.py."""

import re

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel",
    reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import load, random_state  # noqa: E402
from test_openspiel_bots import _decision  # noqa: E402
from test_openspiel_agent_bot import Recorder, _view_state  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.agents.belief import HandSampler  # noqa: E402
from sevenrocks_env.observation import action_mask, decode, encode  # noqa: E402
from sevenrocks_env.openspiel.agent_bot import AgentBot  # noqa: E402
from sevenrocks_env.openspiel.bots import (  # noqa: E402
    OpenSpielAgent, PyspielBotAgent, make_openspiel_agent)
from sevenrocks_env.tiles import NUM_TILES  # noqa: E402


# -- resampling ----------------------------------------------------------------------------

def test_resampling_keeps_the_observation_string_and_leaves_the_state_alone():
    """The copy's hidden hands are new; the player's observation string (which must not show
    them) is the same, and the state resampled from is not touched."""
    mid_round = random_state(load(), np.random.default_rng(2), stop=lambda s: s.move_number() > 35)
    mid_deal = load().new_initial_state()
    for tile in range(17):
        mid_deal.apply_action(tile)
    rng = np.random.default_rng(0)
    for state in (mid_round, mid_deal):
        saved = (state.serialize(), str(state), state.history())
        changed = False
        for player in range(4):
            for _ in range(3):
                other = state.resample_from_infostate(player, rng)
                assert other.observation_string(player) == state.observation_string(player)
                changed |= str(other) != str(state)
                assert (state.serialize(), str(state), state.history()) == saved
        assert changed


# -- resampling at the chance nodes and at the end ------------------------------------------

def test_resampling_at_the_opener_draw_redeals_the_hidden_hands():
    state = load().new_initial_state()
    for tile in range(NUM_TILES):
        state.apply_action(tile)
    assert state.is_chance_node()
    rng = np.random.default_rng(1)
    others = [state.resample_from_infostate(1, rng) for _ in range(3)]
    for other in others:
        assert other.is_chance_node() and other._dealt[7:14] == list(range(7, 14))
        assert sorted(other._dealt) == list(range(NUM_TILES))
        assert other.information_state_string(1) == state.information_state_string(1)
    assert any(other._dealt != state._dealt for other in others)


def test_resampling_a_finished_game_gives_the_same_game():
    state = random_state(load(rounds=1), np.random.default_rng(3))
    assert state.is_terminal()
    for player in range(4):
        other = state.resample_from_infostate(player, np.random.default_rng(0))
        assert other.is_terminal() and other.returns() == state.returns()
        assert str(other) == str(state) and other.history() == state.history()


# -- bots -----------------------------------------------------------------------------------

def _forced_decision():
    match = rules.Match.new(3)
    while len(rules.legal_actions(match)) != 1:
        rules.apply_action(match, rules.legal_actions(match)[0])
    return encode(match, match.turn), action_mask(match, match.turn)


def test_a_bot_agent_plays_a_forced_move_without_building_a_bot():
    def no_bot(game, sampler, rng):
        raise AssertionError("a bot was built for a forced move")

    observation, mask = _forced_decision()
    (forced,) = np.flatnonzero(mask)
    assert PyspielBotAgent(no_bot, "none").act(observation, mask) == forced


def test_a_bots_illegal_answer_is_refused():
    class Illegal:
        def __init__(self, action):
            self.action = action

        def step(self, state):
            return self.action

    observation, mask = _decision()
    illegal = int(np.flatnonzero(mask == 0)[0])
    agent = PyspielBotAgent(lambda game, sampler, rng: Illegal(illegal), "illegal")
    with pytest.raises(RuntimeError, match=f"illegal: the bot chose {illegal}, legal: "):
        agent.act(observation, mask)


def test_a_mask_narrower_than_the_observations_position_is_refused_not_searched():
    """A mask leaving out moves the observation's seat can make (2 of its 3 or more legal
    actions) is not the position the bot rebuilds: refused as the caller's input (a
    ``ValueError`` saying the bots cannot be restricted) before the bot is asked."""
    match = rules.Match.new(3)
    while len(rules.legal_actions(match)) < 3:
        rules.apply_action(match, rules.legal_actions(match)[0])
    observation, mask = encode(match, match.turn), action_mask(match, match.turn)
    narrow = np.zeros_like(mask)
    narrow[np.flatnonzero(mask)[:2]] = 1

    class First:
        def step(self, state):
            return int(np.flatnonzero(narrow)[0])

    agent = PyspielBotAgent(lambda game, sampler, rng: First(), "first")
    legal = np.flatnonzero(narrow).tolist()
    with pytest.raises(ValueError, match=rf"first: the mask allows {re.escape(str(legal))}, "
                       "fewer moves than the observation's position .*cannot be restricted"):
        agent.act(observation, narrow)


@pytest.mark.parametrize("options, error, words", [
    ({"uct_c": -1.0}, ValueError, "uct_c must be in"),
    ({"uct_c": 2e6}, ValueError, "uct_c must be in"),
    ({"uct_c": float("nan")}, ValueError, "uct_c must be in"),
    ({"uct_c": "1"}, ValueError, r"uct_c must be in \[0, 1e6\], got '1'"),
    ({"rollouts": 0}, ValueError, "rollouts must be in"),
    ({"rollouts": 1001}, ValueError, "rollouts must be in"),
    ({"sims": 0}, ValueError, r"sims must be in \[1, 1000000\], got 0"),
    # not an int: refused here, not at the first move deep inside OpenSpiel
    ({"sims": 2.5}, TypeError, "sims must be an int, got float 2.5"),
    ({"sims": True}, TypeError, "sims must be an int, got bool True"),
    ({"rollouts": 1.5}, TypeError, "rollouts must be an int, got float 1.5")])
def test_bot_settings_out_of_range_are_refused(options, error, words):
    """Built directly (a spec string's settings are typed as it is read)."""
    with pytest.raises(error, match=f"openspiel:ismcts: {words}"):
        OpenSpielAgent("ismcts", **options)
    agent = OpenSpielAgent(sims=np.int64(3), rollouts=np.int64(2), uct_c=np.float32(2))
    assert (type(agent.sims), type(agent.rollouts), type(agent.uct_c)) == (int, int, float)


def test_the_seed_reaches_the_random_rollouts():
    """Same seed, same rollouts; another seed, other rollouts (not only other samples).  Reads
    the evaluator's ``_random_state``: OpenSpiel's rollouts draw from nothing else."""
    view = decode(_decision()[0])

    def rollout_draws(kind, seed):
        agent = make_openspiel_agent(f"{kind}:sims=2", seed=seed)
        bot = agent._search_bot(load(rounds=1), HandSampler(view), np.random.default_rng(0))
        evaluator = bot._evaluator if kind == "ismcts" else bot.evaluator
        return evaluator._random_state.randint(2 ** 31, size=4).tolist()

    for kind in ("ismcts", "mcts"):
        assert rollout_draws(kind, 1) == rollout_draws(kind, 1) != rollout_draws(kind, 2)


# -- AgentBot -------------------------------------------------------------------------------

def test_an_agent_bot_needs_an_agent_that_acts():
    with pytest.raises(ValueError, match=r"needs an act\(observation, action_mask\) method, "
                                         "got object"):
        AgentBot(load(), 0, object())


def test_a_position_one_placement_into_the_round_is_refused_for_history_readers():
    _, searched = _view_state(lambda s: s._match.placements == 1 and len(s.legal_actions()) > 1)
    with pytest.raises(ValueError, match="started from a position"):
        AgentBot(searched.get_game(), 0, Recorder(needs_history=True)).step(searched)
