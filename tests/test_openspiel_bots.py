"""OpenSpiel's bots playing Seven Rocks (``sevenrocks_env/openspiel/bots.py``): rebuilt from a
seat's view, ISMCTS and MCTS playing in the arena, any pyspiel bot wrapped, reproducible for a
seed, bad specs and actions named, and the bots' settings reaching OpenSpiel (the game itself:
``test_openspiel.py``)."""

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import deal_chance, load, random_state  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.arena import evaluate, play_match  # noqa: E402
from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.agents.belief import HandSampler  # noqa: E402
from sevenrocks_env.observation import decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.openspiel.bots import PyspielBotAgent, make_openspiel_agent  # noqa: E402
from sevenrocks_env.tiles import KNOCK  # noqa: E402
from positions import until_over  # noqa: E402


def test_state_from_view_matches_the_seat_view():
    game = load(rounds=1)
    state = random_state(load(), np.random.default_rng(9), stop=lambda s: s.move_number() > 45)
    seat = state.current_player()
    match = state._match
    view = decode(encode(match, seat))
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    searched = state_from_view(game, view, hidden)
    assert searched.current_player() == 0
    assert searched.legal_actions() == state.legal_actions()
    assert np.array_equal(searched.observation_tensor(0), state.observation_tensor(seat))
    with pytest.raises(ValueError, match="hidden hands"):
        state_from_view(game, view, (hidden[0], hidden[1] | hidden[2], 0))


def test_ismcts_plays_full_matches_in_the_arena_against_greedy():
    bot = make_openspiel_agent("ismcts:sims=4", seed=0)
    result = evaluate(bot, "greedy", pairs=1, seed=0)  # raises on any illegal move
    assert result.matches == 2 and result.truncated == 0


def test_mcts_plays_a_round():
    bot = make_openspiel_agent("mcts:sims=4,uct_c=10,rollouts=2", seed=0)
    result = play_match([bot, make_agent("greedy"), bot, make_agent("random", seed=0)], seed=1,
                        max_rounds=1)
    assert result.rounds == 1 and sum(result.decisions[0::2]) > 0


def test_any_pyspiel_bot_can_be_wrapped():
    bot = PyspielBotAgent(lambda game, sampler, rng: pyspiel.make_uniform_random_bot(0, 5),
                          "uniform")
    result = play_match([bot, make_agent("greedy"), bot, make_agent("greedy")], seed=2,
                        max_rounds=2)
    assert result.rounds == 2 and sum(result.decisions[0::2]) > 0


def test_bots_are_reproducible_for_a_seed():
    def moves(seed):
        bot = make_openspiel_agent("ismcts:sims=6", seed=seed)
        match = rules.Match.new(4, max_rounds=1)
        chosen = []
        for _ in until_over(match):
            legal = rules.legal_actions(match)
            action = legal[0]
            if match.turn == 0 and len(legal) > 1:
                action = bot.act(encode(match, 0), np.isin(np.arange(KNOCK + 1), legal).astype(np.int8))
                chosen.append(action)
            rules.apply_action(match, action)
        return chosen

    assert moves(3) == moves(3) and len(moves(3)) > 0
    assert moves(3) != moves(4)  # and the seed is used (a bot ignoring it would pass the above)


@pytest.mark.parametrize("spec, word", [("alphazero", "unknown OpenSpiel bot"),
                                        ("ismcts:sims=0", "sims"), ("ismcts:depth=3", "depth"),
                                        ("mcts:sims=many", "sims must be int")])
def test_bad_bot_specs_are_named(spec, word):
    with pytest.raises(ValueError, match=word):
        make_openspiel_agent(spec)


def test_make_agent_knows_openspiel_specs():
    agent = make_agent("openspiel:ismcts:sims=8", seed=1)
    assert agent.name == "openspiel:ismcts:sims=8"
    assert make_agent("openspiel:mcts:sims=8,uct_c=10").name == "openspiel:mcts:sims=8,uct_c=10"
    with pytest.raises(ValueError, match="ismcts"):
        make_agent("openspiel:nonsense")


def test_spaces_around_an_openspiel_specs_parts_are_ignored():
    """``openspiel: mcts : sims=3`` is ``openspiel:mcts:sims=3``, spaces around the bot's
    kind included, as around the other parts of a spec."""
    assert make_agent("openspiel: mcts : sims=3, uct_c=2").name == "openspiel:mcts:sims=3,uct_c=2"
    assert make_agent("openspiel: ismcts ").name == "openspiel:ismcts:sims=100"


def test_bad_actions_are_clear_errors_at_every_kind_of_node():
    game = load(rounds=1)
    state = game.new_initial_state()
    with pytest.raises(ValueError, match="chance outcome 28"):
        state.action_to_string(pyspiel.PlayerId.CHANCE, 28)
    deal_chance(state, 3)
    assert state.current_player() in range(4)
    for action in (-5, 113):
        with pytest.raises(ValueError, match="actions are 0-112"):
            state.action_to_string(state.current_player(), action)
    # a seat is to play: a chance outcome gets a label that does not need the deal in progress
    # (a tool labelling a finished history asks the last state), a bad one still an error
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 3) \
        == "chance outcome 3: deal 0|3 or seat 3 drawn to open"
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 27) == "chance outcome 27: deal 6|6"
    with pytest.raises(ValueError, match="chance outcome 28"):
        state.action_to_string(pyspiel.PlayerId.CHANCE, 28)
    with pytest.raises(ValueError, match="not a chance node"):
        state.chance_outcomes()
    while not state.is_terminal():
        state.apply_action(state.legal_actions()[0])
    with pytest.raises(ValueError, match="the game is over"):
        state.apply_action(112)
    with pytest.raises(ValueError, match="not a chance node"):
        state.chance_outcomes()


def _decision(target=250):
    """A position of a match to ``target`` with more than one legal action: (obs, mask)."""
    from sevenrocks_env.observation import action_mask

    match = rules.Match.new(3, target=target)
    while len(rules.legal_actions(match)) < 2:
        rules.apply_action(match, rules.legal_actions(match)[0])
    return encode(match, match.turn), action_mask(match, match.turn)


@pytest.mark.parametrize("kind", ["ismcts", "mcts"])
def test_sims_uct_c_and_rollouts_reach_the_openspiel_bot(kind):
    agent = make_openspiel_agent(f"{kind}:sims=7,uct_c=3.5,rollouts=2", seed=0)
    game = load(rounds=1)
    view = decode(_decision()[0])
    bot = agent._search_bot(game, HandSampler(view), np.random.default_rng(0))
    if kind == "ismcts":
        settings = (bot._max_simulations, bot._uct_c, bot._evaluator.n_rollouts)
    else:
        settings = (bot.max_simulations, bot.uct_c, bot.evaluator.n_rollouts)
    assert settings == (7, 3.5, 2)


def test_the_searched_round_is_played_to_the_matchs_target():
    """The target decides where the round stops (R8): the searched game is the observed one's,
    for each decision's own target (not the first one's kept for all)."""
    games = []

    def recording(game, sampler, rng):
        games.append(game)
        return pyspiel.make_uniform_random_bot(0, 1)

    agent = PyspielBotAgent(recording, "recorder")
    for target in (100, 250, 100):
        observation, mask = _decision(target=target)
        assert mask[agent.act(observation, mask)] == 1
    assert [(g.target, g.rounds) for g in games] == [(100, 1), (250, 1), (100, 1)]
