"""Seven Rocks in OpenSpiel: OpenSpiel's own checks, agreement with the env, resampling, bots."""

import itertools

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from sevenrocks_env import rules, sevenrocks_v0  # noqa: E402
from sevenrocks_env.agents.belief import excluded_tiles  # noqa: E402
from sevenrocks_env.arena import evaluate, play_match  # noqa: E402
from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.observation import OBS_SIZE, OFFSETS, decode, encode  # noqa: E402
from sevenrocks_env.openspiel import GAME_NAME, state_from_view  # noqa: E402
from sevenrocks_env.openspiel.bots import PyspielBotAgent, make_openspiel_agent  # noqa: E402
from sevenrocks_env.openspiel.game import MAX_ROUND_MARGIN, MAX_ROUND_MOVES  # noqa: E402
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET, game_record  # noqa: E402
from sevenrocks_env.tiles import KNOCK, NUM_TILES  # noqa: E402


def load(**params):
    return pyspiel.load_game(GAME_NAME, params)


def deal_chance(state, seed):
    """Feed the chance nodes of the round being dealt with ``rules.deal(seed, round)``."""
    if not state.is_chance_node():
        return
    round_index = 0 if state._match is None else len(state._match.history)
    hands, drawn = rules.deal(seed, round_index)
    tiles = [t for hand in hands for t in range(NUM_TILES) if (hand >> t) & 1]
    while state.is_chance_node():
        if state._drawing_opener:
            state.apply_action(drawn)
        else:
            state.apply_action(tiles[len(state._dealt)])


def random_state(game, rng, stop=None, at_chance=False):
    """Play uniformly random chance outcomes and moves; stop early when ``stop(state)`` holds
    (checked at the players' nodes, and at chance nodes too with ``at_chance``)."""
    state = game.new_initial_state()
    while not state.is_terminal():
        if stop is not None and (at_chance or not state.is_chance_node()) and stop(state):
            return state
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def first_state_where(game, stop, at_chance=False, seeds=range(200)):
    """The first state of random play (seed by seed) where ``stop`` holds."""
    for seed in seeds:
        state = random_state(game, np.random.default_rng(seed), stop, at_chance)
        if not state.is_terminal():
            return state
    raise AssertionError("no random match reached such a state")


# -- OpenSpiel's checks and the declared game type ------------------------------------------

def test_random_sim_test_one_round():
    pyspiel.random_sim_test(load(rounds=1), num_sims=5, serialize=True, verbose=False)


def test_random_sim_test_whole_match():
    pyspiel.random_sim_test(load(target=60), num_sims=1, serialize=True, verbose=False)


def test_game_type_is_declared_honestly():
    for game, bound in ((load(), 1.0), (load(rounds=1), float(MAX_ROUND_MARGIN))):
        kind = game.get_type()
        assert game.num_players() == 4
        assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
        assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
        assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
        assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
        assert game.utility_sum() == 0.0
        assert (game.min_utility(), game.max_utility()) == (-bound, bound)
        assert game.num_distinct_actions() == KNOCK + 1
        assert game.max_chance_outcomes() == NUM_TILES
        assert game.observation_tensor_shape() == [238]
    assert load(rounds=1).max_game_length() == MAX_ROUND_MOVES
    assert load(max_rounds=7).max_game_length() == 7 * MAX_ROUND_MOVES


@pytest.mark.parametrize("params, word", [({"rounds": 2}, "rounds"), ({"target": 0}, "target"),
                                          ({"max_rounds": 0}, "max_rounds"),
                                          ({"target": MAX_TARGET + 1}, "target"),
                                          ({"max_rounds": MAX_ROUNDS + 1}, "max_rounds")])
def test_bad_parameters_are_named(params, word):
    with pytest.raises(Exception, match=word):
        load(**params)


def test_rounds_must_be_an_int_not_a_bool():
    """(pyspiel's own parameter types refuse a bool first; the game checks it too)"""
    from sevenrocks_env.openspiel.game import SevenRocksGame
    with pytest.raises(ValueError, match="rounds"):
        SevenRocksGame({"rounds": True})


def test_unsupported_observation_types_are_refused():
    """The observation holds public pieces: a private-only view is refused, not given whole."""
    game = pyspiel.load_game(GAME_NAME)
    private_only = pyspiel.IIGObservationType(
        perfect_recall=False, public_info=False,
        private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER)
    with pytest.raises(ValueError, match="public_info=True"):
        game.make_py_observer(private_only)
    everyone = pyspiel.IIGObservationType(
        perfect_recall=False, public_info=True, private_info=pyspiel.PrivateInfoType.ALL_PLAYERS)
    with pytest.raises(ValueError, match="single-player private"):
        game.make_py_observer(everyone)
    default = pyspiel.IIGObservationType(
        perfect_recall=False, public_info=True,
        private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER)
    assert game.make_py_observer(default) is not None


def test_illegal_action_is_a_clear_error():
    state = random_state(load(rounds=1), np.random.default_rng(0),
                         stop=lambda s: True)
    illegal = next(a for a in range(KNOCK + 1) if a not in state.legal_actions())
    with pytest.raises(Exception, match="illegal action"):
        state.apply_action(illegal)


def test_chance_nodes_deal_then_draw_the_opener():
    state = load().new_initial_state()
    for k in range(NUM_TILES):
        assert state.is_chance_node()
        outcomes = state.chance_outcomes()
        assert len(outcomes) == NUM_TILES - k
        assert sum(p for _, p in outcomes) == pytest.approx(1.0)
        state.apply_action(outcomes[0][0])
    assert state.is_chance_node() and state.chance_outcomes() == [(s, 0.25) for s in range(4)]
    state.apply_action(2)
    assert state.current_player() == 2  # the drawn seat opens (R2)


# -- agreement with the env -----------------------------------------------------------------

def test_same_deals_and_actions_as_the_env():
    """240 random matches to 100 (2-3 rounds each; the 250 of R8 only makes them longer): same
    legal sets, same turn, same rewards, same game record."""
    game = load(target=100)
    rng = np.random.default_rng(2024)
    for seed in range(240):
        env = sevenrocks_v0.env(target=100)
        env.reset(seed=seed)
        state = game.new_initial_state()
        totals = dict.fromkeys(env.possible_agents, 0.0)
        while True:
            deal_chance(state, seed)
            if state.is_terminal():
                break
            agent = env.agent_selection
            mask = env.observe(agent)["action_mask"]
            assert state.current_player() == env.possible_agents.index(agent)
            assert state.legal_actions() == np.flatnonzero(mask).tolist()
            action = int(rng.choice(state.legal_actions()))
            env.step(action)
            state.apply_action(action)
            for name, reward in env.rewards.items():
                totals[name] += reward
        assert all(env.terminations.values()) or all(env.truncations.values())
        assert state.returns() == [totals[name] for name in env.possible_agents]
        assert game_record(state._match) == env.unwrapped.game_record()


def test_one_round_returns_the_round_margin():
    game = load(rounds=1)
    rng = np.random.default_rng(5)
    for seed in range(50):
        state = game.new_initial_state()
        match = rules.Match.new(seed, max_rounds=1)
        deal_chance(state, seed)
        while not state.is_terminal():
            action = int(rng.choice(state.legal_actions()))
            assert state.legal_actions() == rules.legal_actions(match)
            state.apply_action(action)
            rules.apply_action(match, action)
        margin = match.scores[0] - match.scores[1]
        assert match.over and state.returns() == [margin, -margin, margin, -margin]
        assert abs(margin) <= MAX_ROUND_MARGIN
        assert state.move_number() - 29 <= MAX_ROUND_MOVES


def test_rl_environment_plays_an_episode():
    """OpenSpiel's RL API (NFSP, DQN, ... train through it) runs the game, chance included."""
    rl_environment = pytest.importorskip("open_spiel.python.rl_environment")
    env = rl_environment.Environment(load(rounds=1), seed=3)
    assert env.observation_spec()["info_state"] == (12587,)
    rng = np.random.default_rng(3)
    step = env.reset()
    while not step.last():
        player = step.observations["current_player"]
        step = env.step([int(rng.choice(step.observations["legal_actions"][player]))])
    margin = step.rewards[0]
    assert step.rewards == [margin, -margin, margin, -margin]


# -- serialisation --------------------------------------------------------------------------

def test_serialize_round_trip_mid_match():
    game = load(target=100)
    rng = np.random.default_rng(3)
    for stop_at in (0, 10, 40, 90):
        moves = iter(range(10 ** 6))
        state = random_state(game, rng, stop=lambda s: next(moves) >= stop_at)
        again = game.deserialize_state(state.serialize())
        assert str(again) == str(state) and again.history() == state.history()
        for player in range(4):
            assert again.information_state_string(player) == state.information_state_string(player)
            assert again.observation_tensor(player) == state.observation_tensor(player)
        assert again.legal_actions() == state.legal_actions()
        game2, state2 = pyspiel.deserialize_game_and_state(
            pyspiel.serialize_game_and_state(game, state))
        assert str(game2) == str(game) and str(state2) == str(state)


def test_observation_tensor_is_the_env_observation():
    state = random_state(load(), np.random.default_rng(4), stop=lambda s: s.move_number() > 40)
    for player in range(4):
        assert np.array_equal(np.asarray(state.observation_tensor(player), np.float32),
                              encode(state._match, player))


# -- resample_from_infostate ----------------------------------------------------------------

def _hidden_hands_respect_knocks(state, player):
    match = state._match
    for seat in range(4):
        if seat != player:
            assert not match.hands[seat] & excluded_tiles(match.voids[seat]), (seat, match.voids)


def test_resampling_keeps_what_the_player_knows():
    game = load(target=60)
    rng = np.random.default_rng(7)
    checked = knocks = 0
    for _ in range(5):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, _ = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(outcomes)))
            else:
                for player in range(4):
                    other = state.resample_from_infostate(player, rng)
                    assert other.information_state_string(player) == state.information_state_string(player)
                    assert other.information_state_tensor(player) == state.information_state_tensor(player)
                    assert other.observation_tensor(player) == state.observation_tensor(player)
                    assert other.legal_actions() == state.legal_actions() or player != state.current_player()
                    _hidden_hands_respect_knocks(other, player)
                    if checked % 5 == 0:  # the copy's history is its own deal
                        replayed = game.new_initial_state()
                        for action in other.history():
                            replayed.apply_action(action)
                        assert str(replayed) == str(other)
                    checked += 1
                knocks += any(state._match.voids)
                state.apply_action(int(rng.choice(state.legal_actions())))
    assert checked > 200 and knocks > 0


def test_resampling_during_the_deal_keeps_own_tiles():
    state = load().new_initial_state()
    for tile in range(17):
        state.apply_action(tile)
    other = state.resample_from_infostate(1, pyspiel.UniformProbabilitySampler(0.0, 1.0))
    assert other._dealt[7:14] == state._dealt[7:14]
    assert len(set(other._dealt)) == 17
    assert other.information_state_string(1) == state.information_state_string(1)


def _consistent_deals(state, player):
    """Every assignment of the unseen tiles to the other seats with the right counts and
    respecting the knocks (brute force)."""
    match = state._match
    others = [(player + k) & 3 for k in (1, 2, 3)]
    unseen = [t for t in range(NUM_TILES) if any((match.hands[s] >> t) & 1 for s in others)]
    deals = []
    for owners in itertools.product(others, repeat=len(unseen)):
        hands = {s: 0 for s in others}
        for tile, seat in zip(unseen, owners):
            hands[seat] |= 1 << tile
        if all(hands[s].bit_count() == match.hands[s].bit_count()
               and not hands[s] & excluded_tiles(match.voids[s]) for s in others):
            deals.append(tuple(hands[s] for s in others))
    return others, deals


def test_resampling_is_uniform_on_a_small_case():
    """A late position with a knock: every consistent deal comes up equally often (chi-square)."""
    scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is needed for the chi-square test")
    game = load(rounds=1)
    rng = np.random.default_rng(11)

    def small(state):
        match = state._match
        player = state.current_player()
        hidden = sum(match.hands[s].bit_count() for s in range(4) if s != player)
        return hidden <= 5 and any(match.voids[s] for s in range(4) if s != player)

    for _ in range(200):
        state = random_state(game, rng, stop=small)
        if not state.is_terminal():
            break
    player = state.current_player()
    others, deals = _consistent_deals(state, player)
    assert 3 <= len(deals) <= 60, len(deals)
    index = {deal: i for i, deal in enumerate(deals)}
    counts = np.zeros(len(deals))
    samples = 100 * len(deals)
    for _ in range(samples):
        other = state.resample_from_infostate(player, rng)
        counts[index[tuple(other._match.hands[s] for s in others)]] += 1
    assert counts.min() > 0
    assert scipy_stats.chisquare(counts).pvalue > 1e-3


# -- bots -----------------------------------------------------------------------------------

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
        while not match.over:
            legal = rules.legal_actions(match)
            action = legal[0]
            if match.turn == 0 and len(legal) > 1:
                action = bot.act(encode(match, 0), np.isin(np.arange(KNOCK + 1), legal).astype(np.int8))
                chosen.append(action)
            rules.apply_action(match, action)
        return chosen

    assert moves(3) == moves(3)


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


# -- what each seat is shown ----------------------------------------------------------------

def test_scores_are_seat_relative_while_a_later_round_is_dealt():
    """Between rounds the observation is built from the match, not by ``encode``: the scores
    are still ours, theirs and the target / 1000, as in every other observation."""
    state = first_state_where(
        load(), lambda s: s._match is not None and s._dealing and len(s._dealt) == 3
        and s._match.scores[0] != s._match.scores[1], at_chance=True, seeds=range(50))
    scores = state._match.scores
    piece = OFFSETS["scores"]
    for player in range(4):
        got = np.asarray(state.observation_tensor(player))[piece]
        ours, theirs = scores[player & 1], scores[(player & 1) ^ 1]
        np.testing.assert_allclose(got, [ours / 250, theirs / 250, 250 / 1000], rtol=1e-6)


def test_the_information_state_names_the_first_mover_relative_to_the_player():
    state = random_state(load(), np.random.default_rng(4), stop=lambda s: s.move_number() > 35)
    opener = state._match.history[-1].opener
    for player in range(4):
        tensor = np.asarray(state.information_state_tensor(player))
        first = tensor[OBS_SIZE + NUM_TILES:OBS_SIZE + NUM_TILES + 4]
        assert first.tolist() == [float(k == ((opener - player) & 3)) for k in range(4)]


def test_hands_are_shown_after_a_blocked_round():
    """R7: at a round's count the remaining hands are shown, after a block as after a domino."""
    state = first_state_where(load(), lambda s: s._match is not None and s._match.history
                              and s._match.history[-1].result == rules.BLOCKED, at_chance=True)
    assert f"{rules.BLOCKED} shown[" in state.information_state_string(0)


def test_one_round_from_a_view_returns_the_margin_over_the_rest_of_the_round():
    whole = first_state_where(load(), lambda s: 0 not in s._match.scores
                              and s._match.scores[0] != s._match.scores[1])
    seat = whole.current_player()
    view = decode(encode(whole._match, seat))
    hidden = tuple(whole._match.hands[(seat + k) & 3] for k in (1, 2, 3))
    state = state_from_view(load(rounds=1), view, hidden)
    start = list(state._match.scores)
    assert 0 not in start and start[0] != start[1]
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        state.apply_action(int(rng.choice(state.legal_actions())))
    end = state._match.scores
    margin = (end[0] - start[0]) - (end[1] - start[1])
    assert state.returns() == [margin, -margin, margin, -margin]


def test_deal_nodes_name_the_seat_dealt_to():
    state = load().new_initial_state()
    for tile in range(8):
        text = state.action_to_string(pyspiel.PlayerId.CHANCE, tile)
        assert text.endswith(f"to seat {tile // 7}"), (tile, text)
        state.apply_action(tile)


def test_resampling_for_a_player_out_of_range_is_refused():
    state = random_state(load(), np.random.default_rng(2), stop=lambda s: s.move_number() > 35)
    with pytest.raises(ValueError, match="player must be 0-3"):
        state.resample_from_infostate(4, np.random.default_rng(0))
