"""The web API's answers to bad new-game setups and request bodies (sevenrocks_env.web): bad
seats, targets, seeds and agent specs, bodies that are not a JSON object or hold NaN or too
many values, and unknown game and replay ids get a short 4xx with a clear message and start no
game; bodies in any JSON encoding are read, off the event loop; the start panel's agent menu
offers agents that load and play at any seed.  Bad moves: ``test_hostile_web_moves.py``; the
store's limits: ``test_hostile_web_store.py``."""

from __future__ import annotations

import asyncio
import json

import pytest
from web_client import game_of

from sevenrocks_env import record as records
from sevenrocks_env.web.api import MAX_BODY, MAX_REPLAY_BODY


def test_the_start_panel_offers_the_shipped_policy_by_a_spec_that_loads(client, monkeypatch,
                                                                        tmp_path):
    """``ckpt:shipped`` resolves through policy_file.shipped_path (the package's copy when
    installed), not through a checkout-relative folder."""
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.web import games

    offered = {agent["label"]: agent["spec"] for agent in client.get("/api/agents").json()["agents"]}
    assert offered["shipped policy"] == "ckpt:shipped"
    make_agent(offered["shipped policy"])
    make_agent(offered["shipped policy with search"])
    make_agent(offered["shipped policy with search and inference"])
    sampling = make_agent(offered["shipped policy, sampling at temperature 0.5"])
    assert (sampling.deterministic, sampling.temperature) == (False, 0.5)
    monkeypatch.setattr(games, "shipped_path", lambda: tmp_path / "missing.pt")  # no file: not offered
    assert "shipped policy" not in [label for _, label in games.agent_menu()]


def test_an_extra_agent_on_the_menu_already_is_listed_once():
    from sevenrocks_env.web import games

    specs = [spec for spec, _ in games.agent_menu(("random", "search:samples=4", "random"))]
    assert specs.count("random") == 1 and specs.count("search:samples=4") == 1
    # one agent however spelt (agents.same_spec): listed once, under its first spelling
    extra = ("search:samples=8", "search:samples=08", "search: samples=8", "search:samples=64",
             "policy:shipped", "heuristic ")
    specs = [spec for spec, _ in games.agent_menu(extra)]
    assert specs[len(games.BUILTIN_AGENTS):].count("search:samples=8") == 1
    assert not {"search:samples=08", "search: samples=8", "search:samples=64", "heuristic "} \
        & set(specs)
    assert ("policy:shipped" in specs) != ("ckpt:shipped" in specs)  # ckpt:shipped if torch


def test_unknown_game_and_replay_ids(client):
    for url in ("/api/games/nope", "/api/games/nope/record"):
        response = client.get(url)
        assert response.status_code == 404 and "no game" in response.json()["error"]
    assert client.post("/api/games/nope/move", json={"ply": 0, "action": 0}).status_code == 404
    assert client.post("/api/games/nope/step", json={"ply": 0}).status_code == 404
    assert client.get("/api/replays/nope/0/0").status_code == 404
    assert client.get("/api/nothing").status_code == 404


@pytest.mark.parametrize("body, words", [
    ({"partner": "alphago"}, "unknown agent spec for partner"),
    ({"left": "ckpt:/etc/passwd"}, "unknown agent spec"),  # no arbitrary file loading
    ({"seat": 4}, "seat must be"), ({"seat": True}, "seat must be"),  # JSON true is no seat 1
    ({"target": 0}, "target must be"),
    ({"target": records.MAX_TARGET + 1}, "target must be"),  # its record would not load back
    ({"seed": -1}, "seed must be null or an int"),  # refused here, not by an agent's check
    ({"seed": "-1"}, "seed must be"), ({"seed": "1e3"}, "seed must be"),
    ({"seed": "9" * 20}, "seed must be"), ({"seed": "١٢"}, "seed must be"),  # Arabic-Indic digits
    ({"seed": str(2 ** 63)}, "seed must be"), ({"seed": 1.0}, "seed must be"),
    ({"seed": "9" * 5000}, "seed must be"),  # past int()'s digit limit: a 422, not a 500
    ({"colour": "red"}, "unknown fields"),
    ([], "JSON object"), (False, "JSON object"),  # empty, but not a missing body
])
def test_bad_setups(client, app, body, words):
    response = client.post("/api/games", json=body)
    assert response.status_code == 422 and words in response.json()["error"], response.text
    assert len(app.state.store) == 0


def test_an_integer_past_python_s_digit_limit_is_a_400_not_a_500(client):
    response = client.post("/api/games", content=b'{"seed": ' + b"9" * 5000 + b"}")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]


@pytest.mark.parametrize("body, words", [
    (b'{"seed": NaN}', "NaN"),
    (b"[" + b",".join([b"{}"] * 1_000_000) + b"]", "JSON values"),  # 3 MB: ~110 MB parsed
    (b'{"seed": "\xff"}', "not valid JSON"),
])
def test_bodies_are_parsed_as_records_are(client, body, words):
    response = client.post("/api/replays", content=body)
    assert response.status_code == 400 and words in response.json()["error"], response.text
    assert "game record" not in response.json()["error"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32-le"])
def test_bodies_in_any_json_encoding_are_read(client, encoding):
    """JSON may come as UTF-8 with a BOM, UTF-16 or UTF-32 (json.loads of bytes reads them)."""
    body = json.dumps({"seed": 12, "target": 30}).encode(encoding)
    assert client.post("/api/games", content=body).status_code == 201


def test_a_seed_comes_back_as_a_string_and_is_taken_back_as_one(client, app):
    """A view gives the seed as decimal digits (a JSON number past 2^53 is rounded in JS); a
    client sending those digits back gets the same deals."""
    seed = 2 ** 63 - 25
    as_number = client.post("/api/games", json={"seed": seed}).json()
    as_text = client.post("/api/games", json={"seed": str(seed)}).json()
    assert game_of(app, as_number).setup.seed == game_of(app, as_text).setup.seed == seed
    assert as_number["hand"] == as_text["hand"]


def test_bodies_are_parsed_off_the_event_loop(client, monkeypatch):
    """Parsing a 4 MB replay body takes tens of milliseconds: not on the loop serving games."""
    loops = []
    parse = records.parse

    def spy(text):
        try:
            loops.append(asyncio.get_running_loop())
        except RuntimeError:  # no loop in this thread: a worker thread
            loops.append(None)
        return parse(text)
    monkeypatch.setattr(records, "parse", spy)
    assert client.post("/api/games", json={"seed": 1}).status_code == 201
    assert loops == [None]


def test_a_long_match_record_replays_and_an_empty_setup_starts_a_game(client, app):
    """A match to 5000 against random bots (the page's largest target) downloads as ~1.4 MB:
    the page must be able to load it back.  POST /api/games with no body: all defaults."""
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(3, target=5000, max_rounds=1000)
    while not match.over:
        apply_action(match, legal_actions(match)[-1])
    text = json.dumps(records.game_record(match), indent=1).encode()
    assert MAX_BODY < len(text) < MAX_REPLAY_BODY
    assert client.post("/api/replays", content=text).status_code == 201
    created = client.post("/api/games")
    assert created.status_code == 201, created.json()
    assert created.json()["target"] == 250
    # the random seed is drawn from 2**63 values: one from 2**31 could be found by search from
    # a player's own hand, and then every hidden hand is known
    seeds = [app.state.store.get(client.post("/api/games").json()["id"]).setup.seed
             for _ in range(4)]
    assert max(seeds) >= 2 ** 32, seeds


def test_every_menu_agent_plays_at_the_largest_seed(client):
    """Bots are seeded from the deal seed (seed * 4 + seat); torch generators take seeds below
    2**64 only, so the shipped-policy bots refused every seed from 2**62 (half the seeds the
    server draws itself) before their seeds were folded."""
    from sevenrocks_env.web.games import MAX_SEED

    specs = [entry["spec"] for entry in client.get("/api/agents").json()["agents"]]
    assert "ckpt:shipped" in specs and any(s.startswith("search:policy") for s in specs)
    for spec in specs:
        response = client.post("/api/games", json={"seat": 0, "partner": spec, "left": spec,
                                                   "right": spec, "seed": MAX_SEED})
        assert response.status_code == 201, (spec, response.text)
