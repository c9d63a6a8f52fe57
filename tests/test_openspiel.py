"""Seven Rocks in OpenSpiel: OpenSpiel's own checks, agreement with the env, serialisation,
truncation and the chance nodes.  What each player may know (resampling, observations):
``test_openspiel_information.py``; the bots: ``test_openspiel_bots.py``."""

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import deal_chance, first_state_where, load, random_state  # noqa: E402

from sevenrocks_env import rules, sevenrocks_v0  # noqa: E402
from sevenrocks_env.observation import decode, encode  # noqa: E402
from sevenrocks_env.openspiel import GAME_NAME, state_from_view  # noqa: E402
from sevenrocks_env.openspiel.game import MAX_ROUND_MARGIN, MAX_ROUND_MOVES  # noqa: E402
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET, game_record  # noqa: E402
from sevenrocks_env.tiles import KNOCK, NUM_TILES, tile_name  # noqa: E402


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
                                          ({"max_rounds": MAX_ROUNDS + 1}, "max_rounds"),
                                          # was ignored silently: one round is one round
                                          ({"rounds": 1, "max_rounds": 7}, "bounds the whole")])
def test_bad_parameters_are_named(params, word):
    with pytest.raises(Exception, match=word):
        load(**params)


@pytest.mark.parametrize("params, message", [
    ({"rounds": True}, "rounds must be 0 .* got bool True"),
    ({"target": 100.0}, rf"target must be an int in \[1, {MAX_TARGET}\], got float 100.0"),
    # was "got 100", which is in range: the message now names the type
    ({"target": np.int64(100)}, "target must be an int .* got int64 100"),
    ({"max_rounds": "7"}, "max_rounds must be an int .* got str '7'"),
    ("target=100", "parameters must be a dict, got str 'target=100'")])
def test_parameters_of_a_wrong_type_are_type_errors(params, message):
    """A plain int, as OpenSpiel's int parameters are (``pyspiel.load_game`` refuses the rest
    first; the game checks them too).  Was: ``ValueError`` for each, and for the string a
    ``dict()`` error naming nothing."""
    from sevenrocks_env.openspiel.game import SevenRocksGame
    with pytest.raises(TypeError, match=f"python_sevenrocks: {message}"):
        SevenRocksGame(params)


def test_unknown_parameters_of_any_key_type_are_named():
    """Keys are sorted for the message: an int beside a str made ``sorted`` raise TypeError."""
    from sevenrocks_env.openspiel.game import SevenRocksGame
    with pytest.raises(ValueError, match=r"unknown parameters 'targt', 1; known: \["):
        SevenRocksGame({1: 2, "targt": 3})


def test_a_game_that_refused_its_parameters_has_a_safe_repr():
    """pytest shows ``self`` in the traceback of a failing test: pyspiel's repr of a game whose
    C++ half was never built (a refused parameter) read undefined memory, and crashed."""
    from sevenrocks_env.openspiel.game import SevenRocksGame
    with pytest.raises(ValueError) as caught:
        SevenRocksGame({"rounds": 2})
    tb = caught.tb
    while "self" not in tb.tb_frame.f_locals:  # up to SevenRocksGame.__init__
        tb = tb.tb_next
    assert repr(tb.tb_frame.f_locals["self"]) == "<python_sevenrocks that refused its parameters>"
    assert repr(load()) == str(load()) == "python_sevenrocks(max_rounds=100,rounds=0,target=250)"


@pytest.mark.parametrize("params", [{}, {"rounds": 1}, {"target": 60, "max_rounds": 7}])
def test_a_pickled_or_copied_game_plays_as_the_original(params):
    """As upstream's ``test_pickle`` of its Python games: pyspiel's own pickling rebuilt the
    C++ game without its Python parameters, and the copy (a game sent to a worker process, a
    deep-copied ``rl_environment.Environment``) could not start a state."""
    import copy
    import pickle

    from open_spiel.python import rl_environment
    game = load(**params)
    for other in (pickle.loads(pickle.dumps(game)), copy.deepcopy(game)):
        assert str(other) == str(game) and other.get_parameters() == game.get_parameters()
        assert (other.target, other.rounds, other.max_rounds) == (
            game.target, game.rounds, game.max_rounds)
        a = random_state(game, np.random.default_rng(3), stop=lambda s: s.is_terminal())
        b = random_state(other, np.random.default_rng(3), stop=lambda s: s.is_terminal())
        assert a.history() == b.history() and a.returns() == b.returns()
    environment = copy.deepcopy(rl_environment.Environment(game))
    assert environment.reset().observations["current_player"] in range(4)


def test_a_pickled_game_loads_in_a_process_that_never_imported_the_package():
    """A game sent to a spawned worker (or pickled to a file) unpickled as ``pyspiel.load_game``
    in a process where nothing had registered ``python_sevenrocks``: "Unknown game" (a pool's
    worker died on its task and the pool waited forever).  A pickled state always loaded: its
    class imports the package."""
    import pickle
    import subprocess
    import sys

    code = ("import pickle, sys; game = pickle.loads(sys.stdin.buffer.read()); "
            "print(game, game.new_initial_state().is_chance_node())")
    pickled = pickle.dumps(load(rounds=1, target=90))
    proc = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-500:]
    assert proc.stdout.decode().split() == ["python_sevenrocks(max_rounds=1,rounds=1,target=90)",
                                            "True"]


def test_state_from_view_refuses_a_game_with_another_target():
    """The state played to the view's target, whatever its game's (a round of a 250-point game
    could end when a side reached 100)."""
    state = random_state(load(target=100), np.random.default_rng(2),
                         stop=lambda s: s.move_number() > 35)
    assert not state.is_terminal()
    seat, match = state.current_player(), state._match
    view = decode(encode(match, seat))
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    with pytest.raises(ValueError, match=r"the view's match plays to 100, the game to 250: load "
                                         r"the game with its target, pyspiel.load_game\("
                                         r"'python_sevenrocks', \{'rounds': 1, 'target': 100\}\)"):
        state_from_view(load(rounds=1), view, hidden)
    assert state_from_view(load(rounds=1, target=100), view, hidden).legal_actions() == \
        state.legal_actions()


def test_unsupported_observation_types_are_none_as_openspiel_expects():
    """The observation holds public pieces: a private-only view is not offered (rather than
    given whole); OpenSpiel's answer for a type a game does not offer is ``None``."""
    from open_spiel.python.observation import make_observation

    game = pyspiel.load_game(GAME_NAME)
    kinds = {
        "private only": (False, pyspiel.PrivateInfoType.SINGLE_PLAYER),
        "public only": (True, pyspiel.PrivateInfoType.NONE),
        "everyone's": (True, pyspiel.PrivateInfoType.ALL_PLAYERS),
    }
    for public, private in kinds.values():
        kind = pyspiel.IIGObservationType(perfect_recall=False, public_info=public,
                                          private_info=private)
        assert game.make_py_observer(kind) is None and make_observation(game, kind) is None
    default = pyspiel.IIGObservationType(
        perfect_recall=False, public_info=True,
        private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER)
    assert game.make_py_observer(default) is not None
    with pytest.raises(ValueError, match="parameters are not supported"):
        game.make_py_observer(default, {"x": 1})


def test_openspiel_writes_a_playthrough_of_the_game():
    """OpenSpiel's own playthrough generator (its games' regression files) asks for the
    public-only and private-only observers and labels every action of a whole match."""
    from open_spiel.python.algorithms import generate_playthrough

    text = generate_playthrough.playthrough(f"{GAME_NAME}(rounds=1)", action_sequence=None,
                                            alsologtostdout=False)
    assert "game: " + GAME_NAME in text and "IsTerminal() = True" in text
    assert "deal " in text and "Returns() = [" in text


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
        state, totals = play_in_lockstep(game, env, seed, rng)
        assert all(env.terminations.values()) or all(env.truncations.values())
        assert state.returns() == [totals[name] for name in env.possible_agents]
        assert game_record(state._match) == env.unwrapped.game_record()


def play_in_lockstep(game, env, seed: int, rng):
    """One match of ``game`` dealt from ``seed`` and the same match in ``env``, random legal
    actions applied to both (the same turn and legal set checked at every decision):
    ``(final state, env rewards summed per agent)``."""
    env.reset(seed=seed)
    state = game.new_initial_state()
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while True:
        deal_chance(state, seed)
        if state.is_terminal():
            return state, totals
        agent = env.agent_selection
        mask = env.observe(agent)["action_mask"]
        assert state.current_player() == env.possible_agents.index(agent)
        assert state.legal_actions() == np.flatnonzero(mask).tolist()
        action = int(rng.choice(state.legal_actions()))
        env.step(action)
        state.apply_action(action)
        for name, reward in env.rewards.items():
            totals[name] += reward


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


def test_a_state_cloned_while_dealing_after_a_domino_plays_on():
    """R2, R7: after a domino the finisher opens the next round.  A state cloned at that deal
    (as every search clones states) still knows the finisher, and plays to the end exactly as
    the state it was cloned from."""
    def dealing_after_a_domino(state):
        return state._match is not None and state._match.history[-1].result == rules.DOMINO
    state = first_state_where(load(target=100), dealing_after_a_domino, at_chance=True)
    assert state.is_chance_node()
    clone = state.clone()
    dominoed, finisher = len(state._match.history) - 1, state._match.history[-1].finisher
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            action = int(rng.choice(outcomes, p=probs))
        else:
            action = int(rng.choice(state.legal_actions()))
        state.apply_action(action)
        clone.apply_action(action)
    assert clone.is_terminal() and clone.returns() == state.returns()
    assert clone.history() == state.history()
    assert clone._match.history[dominoed + 1].opener == finisher  # the finisher opened


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


# -- the state as text ---------------------------------------------------------------------

def test_str_tells_deals_apart_and_shows_no_stale_table():
    """``str(state)`` is the state's identity for OpenSpiel tools (``get_all_states`` keys by
    it): two deals in progress must print differently, and a later round's deal must not show
    the last round's hands and layout as if they were on the table."""
    game = load(target=100)
    first, second = game.new_initial_state(), game.new_initial_state()
    for tile in (0, 1, 2):
        first.apply_action(tile)
    for tile in (0, 1, 3):
        second.apply_action(tile)
    assert str(first) != str(second) and "seat 0 dealt: 0|0 0|1 0|2" in str(first)
    later = random_state(game, np.random.default_rng(4), at_chance=True,
                         stop=lambda s: s.is_chance_node() and s._match is not None
                         and len(s._dealt) == 10)
    assert later is not None and not later.is_terminal()
    text = str(later)
    assert "dealing: 10 of 28 tiles dealt" in text and "spinner" not in text
    assert "seat 1 dealt: " + " ".join(map(tile_name, later._dealt[7:10])) in text


# -- truncation and the chance nodes ----------------------------------------------------------

def test_a_match_cut_off_by_max_rounds_returns_zero_like_the_env():
    """No partnership reached the target: 0 for everyone (not +-1), as the env's truncation."""
    game = load(max_rounds=1)
    rng = np.random.default_rng(6)
    for seed in range(3):
        env = sevenrocks_v0.env(max_rounds=1)
        state, totals = play_in_lockstep(game, env, seed, rng)
        assert state._match.winner is None and all(env.truncations.values())
        assert state.returns() == [0.0] * 4 == list(totals.values())


@pytest.mark.parametrize("max_rounds", [1, 2])
def test_chance_nodes_stay_within_the_declared_bound(max_rounds):
    """28 deals per round plus the opener draw (first round, after a block): at most 29 per
    round, exactly 29 for a one-round match."""
    game = load(max_rounds=max_rounds)
    bound = game.max_chance_nodes_in_history()
    assert bound == 29 * max_rounds
    for seed in range(3):
        state = random_state(game, np.random.default_rng(seed))
        chance = sum(item.player == pyspiel.PlayerId.CHANCE for item in state.full_history())
        assert chance <= bound
        if max_rounds == 1:
            assert chance == bound


def test_a_tile_is_dealt_once_and_the_opener_is_a_seat():
    state = load().new_initial_state()
    state.apply_action(5)
    with pytest.raises(ValueError, match="deal: 5 is not a tile left to deal"):
        state.apply_action(5)
    assert state._dealt == [5]
    for tile in range(NUM_TILES):
        if tile != 5:
            state.apply_action(tile)
    with pytest.raises(ValueError, match="opener draw: 4 is not a seat"):
        state.apply_action(4)
    state.apply_action(3)
    assert state.current_player() == 3

