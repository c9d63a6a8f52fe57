"""Starting an env from a chosen match: ``reset(options={"match": m})`` in the AEC env
(:mod:`sevenrocks_env.env`), the single-agent and the RLlib views, checked in one place.  A
match given this way is copied and checked (``rules.Match.from_state``), never played on in
place."""

from __future__ import annotations

from .checks import shown
from .public_round import reads_history
from .rules import Match


def reset_options(options, others_ignored: bool = False) -> dict:
    """``reset``'s ``options``, checked: ``None`` or a dict whose one key may be ``"match"``;
    with ``others_ignored`` other keys are let through (PettingZoo's ``api_test`` resets with
    ``options={"options": 1}``: an AEC env must take options it does not know)."""
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = sorted(map(shown, set(options or {}) - {"match"}))
    if unknown and not others_ignored:  # a typo ("matc") would start a fresh deal silently
        raise ValueError(f"unknown reset option(s) {', '.join(unknown)[:200]}; the one "
                         "option is 'match' (a rules.Match to start from)")
    return options or {}


def starting_match(start, target: int, max_rounds: int) -> Match:
    """A copy of ``options["match"]`` to play on, checked against the env's settings (its
    observation space is derived from ``target`` and ``max_rounds``): a match in play, with a
    seed for its later deals; ``ValueError`` naming what is wrong.  Its history is copied for
    the round's public plays and the board (the env's ``game_record()`` refuses a history that
    does not replay to the match: an edited match, one dealt at other scores or a later round)."""
    if not isinstance(start, Match):
        raise ValueError(f"options['match'] must be a sevenrocks_env.rules.Match, "
                         f"got {type(start).__name__}")
    if start.over:
        ended = (f"team {start.winner} won it" if start.winner is not None
                 else f"it was cut after {start.round_index} rounds (max_rounds)")
        raise ValueError(f"options['match'] is over ({ended}): start from a match in play")
    if start.seed is None:
        waits = (", and it waits for its next deal" if start.awaiting_deal else "")
        raise ValueError(f"options['match'] has no seed for the later deals{waits}: build it "
                         "with one, e.g. Match.from_deal(hands, opener, seed=s)")
    if start.target != target or start.max_rounds not in (None, max_rounds):
        raise ValueError(f"options['match'] has target {shown(start.target)} and max_rounds "
                         f"{shown(start.max_rounds)}; this env plays to {target} with "
                         f"max_rounds {max_rounds} (max_rounds None takes the env's)")
    # a checked copy (ValueError naming a field no match can have); the caller's stays as it was
    copy = Match.from_state(dict(start.to_state(), max_rounds=max_rounds))
    try:
        copy.history = [log.copy() for log in start.history]
    except (TypeError, AttributeError):  # None, or no list of rules.Round
        pass
    return copy


def checked_start(start, target: int, max_rounds: int, agents) -> Match:
    """:func:`starting_match` for a view with agents of its own (the single-agent and RLlib
    views): also refused without a history when one of ``agents`` (``None``: a learner seat)
    reads the round's plays (``needs_history``)."""
    start = starting_match(start, target, max_rounds)
    if start.history is None and any(map(reads_history, agents)):
        raise ValueError("options['match'] keeps no history (built with keep_history=False "
                         "or from_state), and an agent here reads the round's plays "
                         "(needs_history): start from a match that keeps its history")
    return start
