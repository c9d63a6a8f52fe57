"""Shared by the web API tests (``test_web_api.py``: whole matches; ``test_hostile_web.py``: bad
input, and its ``_serve`` and ``_uploads`` parts); their ``app`` and ``client`` fixtures are in
``conftest.py``."""

from sevenrocks_env import record as records
from sevenrocks_env.rules import Match, apply_action, legal_actions

BOTS = {"partner": "greedy", "left": "greedy", "right": "greedy"}


def game_of(app, view):
    return app.state.store.get(view["id"])


def one_round_record() -> dict:
    """A finished match's record, small: a target one round reaches."""
    match = Match.new(5, target=10)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    return records.game_record(match)
