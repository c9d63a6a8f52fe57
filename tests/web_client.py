"""Shared by the web API tests (``test_web_api.py``: whole matches; ``test_hostile_web.py``: bad
input); their ``app`` and ``client`` fixtures are in ``conftest.py``."""

BOTS = {"partner": "greedy", "left": "greedy", "right": "greedy"}


def game_of(app, view):
    return app.state.store.get(view["id"])
