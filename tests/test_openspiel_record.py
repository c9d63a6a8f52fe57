"""``SevenRocksState.game_record()``: an OpenSpiel state's match as a ``sevenrocks-record/1`` game
record (docs/openspiel.md, docs/records.md)."""

import json

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from openspiel_states import first_state_where, load, random_state  # noqa: E402
from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.observation import decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.record import FORMAT, cut_off, replay, validate  # noqa: E402


def replayed(record) -> rules.Match:
    """The match ``record`` replays to (``record.replay`` checks every number on the way)."""
    match = None
    for match, _, _ in replay(record):
        pass
    return match


def returns_of(match: rules.Match, rounds: int) -> list[float]:
    """The returns a state of the game with ``rounds`` gives at the end of ``match``."""
    if rounds == 1:
        margin = float(match.scores[0] - match.scores[1])
    elif match.winner is None:
        margin = 0.0
    else:
        margin = 1.0 if match.winner == 0 else -1.0
    return [margin, -margin, margin, -margin]


@pytest.mark.parametrize("params, seed", [
    ({"target": 60}, 1), ({"target": 60}, 2), ({"rounds": 1}, 3),
    ({"target": 250, "max_rounds": 1}, 4)])
def test_a_played_out_states_record_replays_to_its_returns_and_scores(params, seed):
    game = load(**params)
    state = random_state(game, np.random.default_rng(seed))
    assert state.is_terminal()
    record = state.game_record()
    validate(record)
    json.loads(json.dumps(record))  # plain JSON
    match = replayed(record)
    assert record["format"] == FORMAT
    assert match.scores == state._match.scores and record["scores"] == list(match.scores)
    assert match.winner == state._match.winner == record["winner"]
    assert returns_of(match, game.rounds) == state.returns()
    assert len(record["rounds"]) == len(state._match.history)
    assert record["max_rounds"] == game.max_rounds
    assert cut_off(record) == (match.winner is None)  # a game that ends without a winner cut it


def test_a_mid_round_states_record_validates_and_ends_with_the_round_in_play():
    state = first_state_where(load(target=100), lambda s: s._match is not None
                              and len(s._match.history) >= 2 and s._match.placements >= 3)
    record = state.game_record()
    validate(record)
    last = record["rounds"][-1]
    assert last["result"] is None and record["winner"] is None and not cut_off(record)
    assert len(record["rounds"]) == len(state._match.history) >= 2
    assert len(last["moves"]) == len(state._match.history[-1].moves) >= 3
    assert last["scores"] == record["scores"] == list(state._match.scores)
    assert replayed(record).hands == state._match.hands  # every hand, mid-round


def test_a_state_dealing_a_later_round_gives_the_rounds_played():
    state = first_state_where(load(target=100), lambda s: s._match is not None and s._dealing
                              and len(s._dealt) == 5, at_chance=True)
    record = state.game_record()
    validate(record)
    assert len(record["rounds"]) == len(state._match.history)
    assert record["rounds"][-1]["result"] in ("domino", "blocked")


def test_a_clones_record_is_its_own():
    state = first_state_where(load(), lambda s: s._match is not None and s._match.placements >= 2)
    before = json.dumps(state.game_record())
    clone = state.clone()
    assert json.dumps(clone.game_record()) == before
    clone.apply_action(clone.legal_actions()[0])
    after = clone.game_record()
    validate(after)
    assert json.dumps(state.game_record()) == before  # the original's match is untouched
    assert len(after["rounds"][-1]["moves"]) == len(state.game_record()["rounds"][-1]["moves"]) + 1
    record = state.game_record()
    record["rounds"][-1]["moves"].clear()  # a new dict each call: changing one changes nothing
    assert json.dumps(state.game_record()) == before


def test_a_resampled_states_record_is_its_own_and_valid():
    state = first_state_where(load(), lambda s: s._match is not None and s._match.placements >= 4)
    before = json.dumps(state.game_record())
    seat = state.current_player()
    other = state.resample_from_infostate(seat, np.random.default_rng(5).random)
    record = other.game_record()
    validate(record)
    assert json.dumps(state.game_record()) == before
    assert record["rounds"][-1]["hands"][seat] == json.loads(before)["rounds"][-1]["hands"][seat]


def test_no_record_before_the_first_deal_nor_for_a_position():
    game = load()
    state = game.new_initial_state()
    for _ in range(3):
        with pytest.raises(ValueError, match="first round is still being dealt"):
            state.game_record()
        state.apply_action(state.chance_outcomes()[0][0])
    real = first_state_where(game, lambda s: s._match is not None and s._match.placements >= 3)
    seat, match = real.current_player(), real._match
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    position = state_from_view(load(rounds=1), decode(encode(match, seat)), hidden)
    with pytest.raises(ValueError, match="started from a position"):
        position.game_record()
