"""Shared by the web API tests (``test_web_api_games.py``: whole matches, and ``_replays``:
records and replays; ``test_hostile_web_moves.py``, ``_setups``, ``_store``, ``_serve`` and
``_uploads``: bad input); their ``app`` and ``client`` fixtures are in ``conftest.py``."""

import itertools
import json
import re

from sevenrocks_env import record as records
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK, tile_name, tiles_of
from sevenrocks_env.web.views import game_view

BOTS = {"partner": "greedy", "left": "greedy", "right": "greedy"}


def game_of(app, view):
    return app.state.store.get(view["id"])


def one_round_record() -> dict:
    """A finished match's record, small: a target one round reaches."""
    match = Match.new(5, target=10)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    return records.game_record(match)


TILE_TEXT = re.compile(r"\d\|\d")


def hidden_tiles(game) -> set[str]:
    """Names of the tiles in the other seats' hands in the round in progress."""
    match = game.match
    if match.history[-1].result is not None:
        return set()
    return {tile_name(t) for s in range(4) if s != game.seat for t in tiles_of(match.hands[s])}


def visible_strings_and_tiles(view):
    """Every string and every tile index in the view outside the ended rounds' summaries."""
    strings, tiles = [], []

    def walk(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                if k != "last_round":
                    walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            strings.append(value)
        elif key == "tile" and isinstance(value, int):
            tiles.append(tile_name(value))
        elif key == "action" and isinstance(value, int) and value != KNOCK:
            tiles.append(tile_name(value >> 2))
    walk(view)
    return strings, tiles


def assert_nothing_hidden(game, view) -> None:
    """R1: no tile of another seat's current hand anywhere in what the page receives."""
    hidden = hidden_tiles(game)
    strings, tiles = visible_strings_and_tiles(view)
    shown = {t for text in strings for t in TILE_TEXT.findall(text)} | set(tiles)
    assert not shown & hidden, f"hidden tiles sent to the page: {sorted(shown & hidden)}"
    assert view["seed"] is None or game.match.over  # the seed would give every deal away
    # and in any form (a hand's bit set, a list of indices under any key): a tile exchanged
    # between two other hands of the round in progress changes nothing the page receives
    match = game.match
    if match.history[-1].result is None:
        assert json.loads(json.dumps(game_view(game))) == view
        others = [s for s in range(4) if s != game.seat and match.hands[s]]
        for a, b in itertools.combinations(others, 2):
            one, two = tiles_of(match.hands[a])[0], tiles_of(match.hands[b])[0]
            saved = list(match.hands)
            try:
                match.hands[a] ^= (1 << one) | (1 << two)
                match.hands[b] ^= (1 << one) | (1 << two)
                assert json.loads(json.dumps(game_view(game))) == view, (a, b)
            finally:
                match.hands[:] = saved
    if view["last_round"] is not None:
        assert view["last_round"]["result"] is not None  # hands only for ended rounds (R7)


def play_out(client, app, view, max_requests=3000, summaries=None):
    """Play the human's seat with its first legal move until the match ends; check every view.
    ``summaries`` (a list) gets each ended round's summary, from the view where it first shows."""
    game = game_of(app, view)
    for _ in range(max_requests):
        assert_nothing_hidden(game, view)
        if summaries is not None and view["rounds_ended"] > len(summaries):
            assert view["rounds_ended"] == len(summaries) + 1  # a move ends one round at most
            summaries.append(view["last_round"])
        if view["over"]:
            return view
        if view["next"] == "bot":
            response = client.post(f"/api/games/{view['id']}/step", json={"ply": view["ply"]})
        else:
            playable = [p for tile in view["hand"] for p in tile["places"]]
            action = playable[0]["action"] if playable else KNOCK
            assert (not playable) == view["knock"]["required"]
            response = client.post(f"/api/games/{view['id']}/move",
                                   json={"ply": view["ply"], "action": action})
        assert response.status_code == 200, response.text
        view = response.json()
    raise AssertionError("the match did not end")
