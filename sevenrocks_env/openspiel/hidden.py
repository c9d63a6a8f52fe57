"""The hands a player of ``python_sevenrocks`` cannot see, filled in: dealt again
(:func:`resample`, the state's ``resample_from_infostate``) or given (:func:`state_from_view`).

Both make a state that one player cannot tell from the position it knows, which is what search
over imperfect information needs: OpenSpiel's IS-MCTS resamples its root once per simulation,
and the bots of :mod:`.bots` start each decision from their seat's view with one sample.

* :func:`resample` deals the hands hidden from the player again, uniformly among the deals
  consistent with what it knows (tile counts, and the numbers each seat showed it lacks by
  knocking: R6); while a round is being dealt (R1), the tiles not dealt to the player are drawn
  again from those it does not hold.  The copy's ``history()`` carries the new deal in place of
  the old one, so replaying it gives the copy again.
* :func:`state_from_view` starts the one-round game at the position a seat's view shows.

The draws come from OpenSpiel's ``probability_sampler``: a callable returning a float in
[0, 1) (``pyspiel.UniformProbabilitySampler``, ``numpy.random.RandomState().rand``), or,
beyond OpenSpiel, anything with such a ``random()`` (a ``numpy.random.Generator``).  Each draw
is checked to be in [0, 1), as OpenSpiel's ``SampleAction`` checks its own: one outside (NaN,
1.5) would deal a wrong number of tiles without a word.
"""

from __future__ import annotations

import dataclasses
import numbers

import pyspiel

from .. import rules
from ..agents.belief import HandSampler, world_match
from ..agents.layout import view_of
from ..checks import checked_int, is_int, is_number_in, shown
from ..observation import SeatView
from ..tiles import KNOCK, NUM_NUMBERS, NUM_SEATS, NUM_TILES, tiles_of, tiles_showing
from .observer import HAND

#: How the errors of :func:`resample` name it: the OpenSpiel method it implements.
_WHERE = "resample_from_infostate"


class _Draws:
    """``random()`` from ``draw`` (a callable), each value checked to be a number in [0, 1)."""

    __slots__ = ("_draw",)

    def __init__(self, draw):
        self._draw = draw

    def random(self) -> float:
        value = self._draw()
        if type(value) is float and 0.0 <= value < 1.0:
            return value  # the usual draw, quickly: IS-MCTS makes ~20 per simulation
        if is_number_in(value, 0.0, 1.0) and value < 1.0:
            return float(value)
        wrong_type = isinstance(value, bool) or not isinstance(value, numbers.Real)
        raise (TypeError if wrong_type else ValueError)(
            f"{_WHERE}: the probability sampler must return a float in [0, 1), "
            f"got {type(value).__name__} {shown(value)}")


def checked_draws(probability_sampler) -> _Draws:
    """``probability_sampler`` (module docstring) as an object with a checked ``random()``;
    ``TypeError`` for one that is neither a callable nor has ``random()`` (``None``, a seed)."""
    random = getattr(probability_sampler, "random", None)
    draw = random if callable(random) else probability_sampler
    if not callable(draw):
        raise TypeError(f"{_WHERE}: probability_sampler must be a callable returning a float in "
                        "[0, 1) (pyspiel.UniformProbabilitySampler) or have random() "
                        f"(numpy.random.Generator), got {type(probability_sampler).__name__} "
                        f"{shown(probability_sampler)}")
    return _Draws(draw)


def resample(state, player, probability_sampler, sampler: HandSampler | None = None):
    """A state ``player`` cannot tell from ``state`` (module docstring).  ``sampler`` is the
    :class:`HandSampler` of ``player``'s view of ``state``, for a caller that resamples the
    same state many times (IS-MCTS) and builds it once; ``None`` builds it here.

    ``player`` is a seat, an int 0-3 (a NumPy int too; not a bool, which pybind11 would take as
    0 or 1): ``TypeError`` otherwise, ``ValueError`` for another int.  OpenSpiel's C++ games
    raise ``SpielError`` or ``IndexError`` for a player out of range; this follows the
    project's convention instead, as for a draw outside [0, 1).  A ``sampler`` that is not a
    :class:`HandSampler` is a ``TypeError``; one built for another view (it would deal hands
    ``player`` knows to be wrong) a ``ValueError``.
    """
    player = checked_int(f"{_WHERE}: player", player, 0, NUM_SEATS - 1)
    if sampler is not None and not isinstance(sampler, HandSampler):
        raise TypeError(f"{_WHERE}: sampler must be a HandSampler or None, got "
                        f"{type(sampler).__name__}")
    rng = checked_draws(probability_sampler)
    clone = state.clone()
    if state._dealing or state._drawing_opener:
        clone._dealt = _redeal_partial(state._dealt, player, rng)
        new_deal = clone._dealt
    elif state._match is not None and not state._match.over:
        _resample_hands(clone._match, player, rng, sampler)
        # a state started from a position (state_from_view) has no deal in its history
        new_deal = None if state._position else [
            tile for hand in clone._match.history[-1].hands for tile in tiles_of(hand)]
    else:
        return clone  # the match is over: nothing left to play
    if not new_deal:
        return clone
    return _replayed_with_deal(state, clone, new_deal)


def _redeal_partial(dealt: list[int], player: int, rng) -> list[int]:
    """The tiles dealt so far, with everything not dealt to ``player`` drawn again uniformly
    from the tiles ``player`` does not hold (it has seen only its own: R1)."""
    own = {t for k, t in enumerate(dealt) if k // HAND == player}
    pool = [t for t in range(NUM_TILES) if t not in own]
    out = []
    for k, tile in enumerate(dealt):
        if k // HAND == player:
            out.append(tile)
        else:
            pick = min(int(rng.random() * len(pool)), len(pool) - 1)
            out.append(pool.pop(pick))
    return out


def _resample_hands(match: rules.Match, player: int, rng, sampler=None) -> None:
    """Replace the hands hidden from ``player`` with a uniform consistent sample (in place),
    and the round log's hands with the same tiles plus what each seat played since."""
    view = view_of(match, player)
    if sampler is None:
        sampler = HandSampler(view)
    elif not sampler.fits(view):  # it would deal hands this seat knows to be wrong
        raise ValueError(f"{_WHERE}: the sampler was built for another view than seat "
                         f"{player}'s view of this state")
    hidden = sampler.sample(rng)
    log = match.history[-1]
    played_since = [0] * NUM_SEATS
    for seat, action, _, _ in log.moves:
        if action != KNOCK:
            played_since[seat] |= 1 << (action >> 2)
    for k in (1, 2, 3):
        seat = (player + k) & 3
        match.hands[seat] = hidden[k - 1]
        log.hands[seat] = hidden[k - 1] | played_since[seat]


def _replayed_with_deal(state, clone, deal: list[int]):
    """``clone`` rebuilt from ``state``'s history with ``deal`` on this round's deal nodes, so
    that the copy's ``history()`` replays to it (OpenSpiel's serialisation of a Python state:
    the history line, then the pickled state)."""
    history = [(a.player, a.action) for a in state.full_history()]
    for k, tile in enumerate(deal):
        history[state._deal_start + k] = (pyspiel.PlayerId.CHANCE, tile)
    _, pickled = clone.serialize().split("\n", 1)
    text = "history=" + ",".join(f"{p}:{a}" for p, a in history) + "\n" + pickled
    return state.get_game().deserialize_state(text)


def state_from_view(game, view: SeatView, hidden: tuple[int, int, int], own_voids: int = 0):
    """A one-round state at the position ``view`` (a :class:`~sevenrocks_env.observation.SeatView`)
    shows, with ``hidden`` as the other seats' hands (tile bitmasks of relative seats 1, 2, 3).

    Seats are the observer's frame: player 0 is the observer, 1 its left opponent, 2 its
    partner; returns are player 0's partnership's margin over the rest of the round.  The
    public part of the position is written into every information state string.  The game's
    ``target`` must be the view's (R8: the round ends the match when a side reaches it).

    ``own_voids``: the numbers the observer knocked on this round (R6; a 7-bit set, as
    ``Match.voids`` keeps them).  An observation does not carry them (a decoded view's
    ``voids[0]`` is 0), yet the other seats saw those knocks: without them the other players'
    information states, and their resamples (``resample_from_infostate``), would let the
    observer hold those numbers.  A bot resampling only for the observer needs none.
    """
    if getattr(game, "rounds", None) != 1:
        raise ValueError("state_from_view needs the one-round game (rounds=1)")
    if not isinstance(view, SeatView):
        raise TypeError(f"state_from_view: view must be a SeatView, got {type(view).__name__}")
    if view.target != game.target:  # the state would play to the view's, against its game's
        name = game.get_type().short_name
        raise ValueError(f"state_from_view: the view's match plays to {view.target}, the game "
                         f"to {game.target}: load the game with its target, pyspiel.load_game("
                         f"{name!r}, {{'rounds': 1, 'target': {view.target}}})")
    if not (isinstance(hidden, (tuple, list)) and len(hidden) == 3
            and all(is_int(hand) for hand in hidden)):
        raise TypeError("state_from_view: hidden must be 3 hands (tile bitmasks, ints), "
                        f"got {shown(hidden)}")
    hidden = tuple(int(hand) for hand in hidden)
    if not is_int(own_voids, 0, (1 << NUM_NUMBERS) - 1):
        error = ValueError if is_int(own_voids) else TypeError
        raise error(f"state_from_view: own_voids must be a 7-bit set of numbers (an int in "
                    f"0..127, as Match.voids keeps them), got {shown(own_voids)}")
    own_voids = int(own_voids) | view.voids[0]
    if tiles_showing(own_voids) & view.hand:  # (R6: a knock shows the seat holds none)
        knocked = ", ".join(str(n) for n in range(NUM_NUMBERS) if own_voids >> n & 1)
        raise ValueError(f"state_from_view: own_voids says the observer knocked on {knocked}, "
                         "but its hand holds such a tile")
    view = dataclasses.replace(view, voids=(own_voids, *view.voids[1:]))
    if any(hidden[k - 1].bit_count() != view.tile_counts[k] for k in (1, 2, 3)):
        raise ValueError(f"state_from_view: hidden hands of {[h.bit_count() for h in hidden]} "
                         f"tiles, but the view counts {list(view.tile_counts[1:])}")
    # from_state refuses hands that overlap each other or the played tiles; with the counts
    # checked above, disjoint hands and the played tiles are all 28
    match = world_match(view, hidden)
    match.max_rounds = 1
    match.history = [rules.Round(view.turn, match.hands)]
    state = game.new_initial_state()
    state._start_at(match)
    return state


__all__ = ["checked_draws", "resample", "state_from_view"]
