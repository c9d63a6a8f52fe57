"""Our agents as OpenSpiel bots (``sevenrocks_env.openspiel.agent_bot``): what the agent is
given, whole matches through OpenSpiel's ``evaluate_bots``, the round's plays, the refusals."""

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from open_spiel.python.algorithms import evaluate_bots  # noqa: E402
from openspiel_states import deal_chance, first_state_where, load, random_state  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.driver import IllegalActionError  # noqa: E402
from sevenrocks_env.observation import action_mask, decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.openspiel.agent_bot import AgentBot, agent_bot  # noqa: E402
from sevenrocks_env.public_round import PublicRound, public_round  # noqa: E402
from sevenrocks_env.tiles import KNOCK, NUM_ACTIONS  # noqa: E402


class Recorder:
    """A fake agent: plays a random legal action and keeps what it was given."""

    name = "recorder"

    def __init__(self, seed=0, needs_history=False):
        self.rng = np.random.default_rng(seed)
        self.needs_history = needs_history
        self.calls = []

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, **extra):
        self.calls.append((observation.copy(), action_mask.copy(), extra))
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def _lockstep(game, seed, agents):
    """Play ``game`` with AgentBots of ``agents``, the deal fed from ``rules.deal(seed, r)``,
    next to ``rules.Match.new(seed)`` (the same match in the rules engine, which deals itself
    the same tiles); yield ``(match, seat, call)`` for each decision an agent was asked, the
    match at the position the agent saw."""
    bots = [AgentBot(game, seat, agent) for seat, agent in enumerate(agents)]
    state, match = game.new_initial_state(), rules.Match.new(seed, target=game.target,
                                                               max_rounds=game.max_rounds)
    while not state.is_terminal():
        deal_chance(state, seed)
        seat = state.current_player()
        assert seat == match.turn
        asked = len(agents[seat].calls)
        action = bots[seat].step(state)
        if len(agents[seat].calls) > asked:
            yield match, seat, agents[seat].calls[-1]
        state.apply_action(action)
        rules.apply_action(match, action)
    assert match.over and match.scores == state._match.scores


@pytest.mark.parametrize("rounds, target, seed", [(0, 150, 3), (1, 250, 4)])
def test_the_agent_gets_the_seat_observation_and_the_legal_actions(rounds, target, seed):
    game = load(rounds=rounds, target=target)
    agents = [Recorder(seat) for seat in range(4)]
    asked = 0
    for match, seat, (observation, mask, extra) in _lockstep(game, seed, agents):
        assert observation.dtype == np.float32 and mask.dtype == np.int8
        assert np.array_equal(observation, encode(match, seat))
        assert mask.shape == (NUM_ACTIONS,)
        assert np.array_equal(mask, action_mask(match, seat))
        assert np.flatnonzero(mask).tolist() == rules.legal_actions(match)
        assert extra == {}  # no history for an agent that does not ask for it
        asked += 1
    assert asked > (30 if rounds == 0 else 10)


def test_a_history_reading_agent_gets_the_public_round_of_the_rules_match():
    game = load(target=150)
    agents = [Recorder(seat, needs_history=True) for seat in range(4)]
    checked, later_rounds, knocks = 0, 0, 0
    for match, seat, (observation, _, extra) in _lockstep(game, 5, agents):
        history = extra["history"]
        assert isinstance(history, PublicRound)
        assert history == public_round(match)
        assert history.seat_on_turn == seat
        assert np.array_equal(observation, encode(match, seat))
        checked += 1
        later_rounds += match.round_index >= 1
        knocks += KNOCK in history.actions
    assert checked > 30 and later_rounds > 10 and knocks > 0


def test_evaluate_bots_plays_the_shipped_policy_against_greedy():
    game = load(target=50)
    bots = [agent_bot(game, seat, "ckpt:shipped" if seat % 2 == 0 else "greedy", seed=seat)
            for seat in range(4)]
    assert not any(bot.provides_policy() for bot in bots)
    state = game.new_initial_state()
    returns = evaluate_bots.evaluate_bots(state, bots, np.random.default_rng(0))
    assert state.is_terminal()  # every move was applied: an illegal one raises
    assert sorted(returns) == [-1.0, -1.0, 1.0, 1.0] and returns[0] == returns[2]


def test_the_inference_search_plays_a_round_through_evaluate_bots():
    game = load(rounds=1)
    bots = [agent_bot(game, 0, "search:policy=shipped,samples=4,inference=0.5", seed=0)] + [
        agent_bot(game, seat, "greedy") for seat in (1, 2, 3)]
    state = game.new_initial_state()
    returns = evaluate_bots.evaluate_bots(state, bots, np.random.default_rng(2))
    scores = state._match.scores
    margin = scores[0] - scores[1]
    assert state.is_terminal() and returns == [margin, -margin, margin, -margin] and margin != 0


# -- positions without the round's start ----------------------------------------------------

def _view_state(stop):
    state = first_state_where(load(), stop)
    seat, match = state.current_player(), state._match
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    return state, state_from_view(load(rounds=1), decode(encode(match, seat)), hidden)


def test_a_position_without_its_earlier_plays_is_refused_for_history_readers_only():
    real, searched = _view_state(lambda s: s._match.placements >= 3
                                 and len(s.legal_actions()) > 1)
    recorder = Recorder(needs_history=True)
    with pytest.raises(ValueError, match="started from a position"):
        AgentBot(searched.get_game(), 0, recorder).step(searched)
    plain = Recorder()
    AgentBot(searched.get_game(), 0, plain).step(searched)
    assert np.array_equal(plain.calls[0][0], real.observation_tensor(real.current_player()))


def test_a_position_at_the_round_start_has_its_whole_round():
    real, searched = _view_state(lambda s: s._match.placements == 0)
    recorder = Recorder(needs_history=True)
    bot = AgentBot(searched.get_game(), 0, recorder)
    searched.apply_action(bot.step(searched))
    assert recorder.calls[0][2]["history"] == PublicRound(0, (0, 0), ())


# -- refusals -------------------------------------------------------------------------------

def test_a_bot_refuses_states_it_cannot_play():
    game = load()
    state = first_state_where(game, lambda s: len(s.legal_actions()) > 1)
    turn = state.current_player()
    with pytest.raises(ValueError, match=f"seat {turn}'s turn, not seat {(turn + 1) % 4}'s"):
        AgentBot(game, (turn + 1) % 4, Recorder()).step(state)
    with pytest.raises(ValueError, match="chance node"):
        AgentBot(game, 0, Recorder()).step(game.new_initial_state())
    over = random_state(load(rounds=1), np.random.default_rng(0))
    assert over.is_terminal()
    with pytest.raises(ValueError, match="the game is over"):
        AgentBot(over.get_game(), 0, Recorder()).step(over)
    other = pyspiel.load_game("tic_tac_toe")
    with pytest.raises(ValueError, match="plays python_sevenrocks, the state is of tic_tac_toe"):
        AgentBot(game, 0, Recorder()).step(other.new_initial_state())


def test_bad_specs_players_games_and_answers_are_refused():
    game = load()
    with pytest.raises(ValueError, match="unknown agent spec 'nonsense'"):
        agent_bot(game, 0, "nonsense")
    with pytest.raises(ValueError, match="checkpoint"):
        agent_bot(game, 0, "ckpt:/no/such/file.pt")
    with pytest.raises(ValueError, match="player must be a seat"):
        agent_bot(game, 4, "greedy")
    for player in (True, 1.0):  # was ValueError "got 1.0", a bool's "got True"
        with pytest.raises(TypeError, match=f"player must be a seat, an int 0 to 3, got "
                                            f"{type(player).__name__} {player}"):
            agent_bot(game, player, "greedy")
    assert agent_bot(game, np.int64(1), "greedy").player == 1  # was refused: "got 1"
    with pytest.raises(ValueError, match="plays python_sevenrocks, not tic_tac_toe"):
        agent_bot(pyspiel.load_game("tic_tac_toe"), 0, "greedy")

    class Cheat(Recorder):
        def act(self, observation, action_mask, **extra):
            return KNOCK if action_mask[KNOCK] == 0 else 0

    state = first_state_where(game, lambda s: len(s.legal_actions()) > 1)
    with pytest.raises(IllegalActionError, match="illegal action"):
        AgentBot(game, state.current_player(), Cheat()).step(state)


def test_agent_bot_refuses_a_pickle_where_pickles_are_not_allowed(tmp_path):
    """Security: ``sb3:PATH`` loads a pickle, which can run code; with allow_pickles=False (a
    spec read from a file) it must be refused before anything is read."""
    path = tmp_path / "model.zip"
    path.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: never opened
    with pytest.raises(ValueError, match="loads a pickle, which can run code"):
        agent_bot(load(), 0, f"sb3:{path}", allow_pickles=False)


def test_agent_bot_seeds_its_agent():
    """Two bots of the same spec and seed choose alike at every decision."""
    game = load(target=100)
    bots = [agent_bot(game, seat, "random", seed=5) for seat in range(4)]
    twins = [agent_bot(game, seat, "random", seed=5) for seat in range(4)]
    state, rng, decisions = game.new_initial_state(), np.random.default_rng(0), 0
    while not state.is_terminal() and decisions < 30:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        seat = state.current_player()
        action = bots[seat].step(state)
        assert twins[seat].step(state) == action
        decisions += len(state.legal_actions()) > 1
        state.apply_action(action)
    assert decisions == 30


def test_a_forced_move_is_played_without_asking_the_agent():
    class Refuses(Recorder):
        def act(self, observation, action_mask, **extra):
            raise AssertionError("asked about a forced move")

    state = first_state_where(load(), lambda s: len(s.legal_actions()) == 1)
    (forced,) = state.legal_actions()
    assert AgentBot(state.get_game(), state.current_player(), Refuses()).step(state) == forced


def test_a_numpy_answer_is_returned_as_a_plain_int():
    """An agent answering with a NumPy integer (``np.argmax`` of its logits) gives OpenSpiel a
    plain ``int``, as ``pyspiel.Bot.step`` promises."""
    class NumpyAnswer(Recorder):
        def act(self, observation, action_mask, **extra):
            return np.int64(super().act(observation, action_mask, **extra))

    state = first_state_where(load(rounds=1), lambda s: len(s.legal_actions()) > 1)
    seat = state.current_player()
    action = AgentBot(state.get_game(), seat, NumpyAnswer()).step(state)
    assert type(action) is int and action in state.legal_actions()
