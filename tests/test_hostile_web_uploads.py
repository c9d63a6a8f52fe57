"""Record uploads to the web API under load and abuse (sevenrocks_env.web.api): at most a few
checked at once, stalled or abandoned bodies time out or end quietly, and a full server refuses
before it builds agents or parses a record."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from web_client import BOTS, one_round_record

from sevenrocks_env import record as records


def test_uploads_past_two_at_a_time_are_refused_before_their_body_is_parsed(client, monkeypatch):
    """Each upload being checked holds its body, text and parsed objects (up to ~80 MB): a third
    one at the same time is a 429, not one more in memory."""
    from sevenrocks_env.web.api import REPLAYS_AT_ONCE

    release, checking, parsed = threading.Event(), [], []
    validate, parse = records.validate, records.parse

    def slow_validate(record):
        checking.append(1)
        release.wait(10)
        return validate(record)

    def counted_parse(text):
        parsed.append(1)
        return parse(text)
    monkeypatch.setattr(records, "validate", slow_validate)
    monkeypatch.setattr(records, "parse", counted_parse)
    body = json.dumps(one_round_record())
    answers = []
    uploads = [threading.Thread(target=lambda: answers.append(
        client.post("/api/replays", content=body))) for _ in range(REPLAYS_AT_ONCE)]
    for upload in uploads:
        upload.start()
    started = time.monotonic()
    while len(checking) < REPLAYS_AT_ONCE and time.monotonic() - started < 10:
        time.sleep(0.01)
    refused = client.post("/api/replays", content=body)
    release.set()
    for upload in uploads:
        upload.join(10)
    assert refused.status_code == 429 and "already checking" in refused.json()["error"]
    assert len(parsed) == REPLAYS_AT_ONCE
    assert [answer.status_code for answer in answers] == [201] * REPLAYS_AT_ONCE
    assert client.post("/api/replays", content=body).status_code == 201  # room again


def test_a_full_server_refuses_before_loading_agents_or_parsing_a_record(client, app,
                                                                        monkeypatch):
    from sevenrocks_env.web import games

    store = app.state.store
    for _ in range(store.max_games):
        assert client.post("/api/games", json=BOTS).status_code == 201
    built, parsed = [], []
    make_agent, parse = games.make_agent, records.parse
    monkeypatch.setattr(games, "make_agent", lambda *a, **k: built.append(1) or make_agent(*a, **k))
    monkeypatch.setattr(records, "parse", lambda text: parsed.append(1) or parse(text))
    assert client.post("/api/games", json=BOTS).status_code == 429
    assert built == []
    parsed.clear()  # the setup's few bytes were parsed; a record is not
    answer = client.post("/api/replays", content=json.dumps(one_round_record()))
    assert answer.status_code == 429 and "open games" in answer.json()["error"]
    assert parsed == []


async def _post_raw(app, path: str, chunks: list[bytes], then: str, declared: int) -> dict:
    """``POST path`` straight through the ASGI app: ``chunks`` of the body, then the client
    ``"stalls"`` (sends nothing more), ``"leaves"`` (disconnects) or ``"ends"`` (that was the
    whole body); the status, headers and answer the app sent."""
    pending = [{"type": "http.request", "body": chunk, "more_body": True} for chunk in chunks]
    if then == "ends":
        pending[-1]["more_body"] = False
    sent = {}

    async def receive():
        if pending:
            return pending.pop(0)
        if then == "leaves":
            return {"type": "http.disconnect"}
        await asyncio.sleep(3600)

    async def send(message):
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]
            sent["headers"] = dict(message["headers"])
        elif message["type"] == "http.response.body":
            sent["body"] = sent.get("body", b"") + message.get("body", b"")

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("testserver", 80),
             "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                         (b"content-length", str(declared).encode())]}
    await app(scope, receive, send)
    return sent


def test_stalled_uploads_time_out_and_do_not_hold_the_checking_places(app, client, monkeypatch):
    """Two uploads that stop sending after one byte held both checking places for as long as
    their sockets stayed open (every other upload: 429); now a body has BODY_SECONDS to arrive
    (408), and the places count the records being checked, not the bodies on their way."""
    from sevenrocks_env.web import api

    monkeypatch.setattr(api, "BODY_SECONDS", 0.5)
    good = json.dumps(one_round_record()).encode()

    async def scenario():
        stalled = [asyncio.create_task(_post_raw(app, "/api/replays", [b"{"], "stalls", 10**6))
                   for _ in range(api.REPLAYS_AT_ONCE)]
        await asyncio.sleep(0.1)
        upload = await _post_raw(app, "/api/replays", [good], "ends", len(good))
        return upload, await asyncio.gather(*stalled)

    upload, stalled = asyncio.run(scenario())
    assert upload["status"] == 201, upload
    for answer in stalled:
        assert answer["status"] == 408 and b"did not arrive within" in answer["body"], answer


def test_uploads_arriving_past_the_bound_are_a_429_with_retry_after(app, monkeypatch):
    from sevenrocks_env.web import api

    monkeypatch.setattr(api, "BODY_SECONDS", 0.5)
    monkeypatch.setattr(api, "REPLAYS_ARRIVING", 1)

    async def scenario():
        stalled = asyncio.create_task(_post_raw(app, "/api/replays", [b"{"], "stalls", 100))
        await asyncio.sleep(0.1)
        second = await _post_raw(app, "/api/replays", [b"{}"], "ends", 2)
        return second, await stalled

    second, stalled = asyncio.run(scenario())
    assert second["status"] == 429 and b"arriving already" in second["body"], second
    assert second["headers"][b"retry-after"] == b"1" and stalled["status"] == 408  # whole seconds


@pytest.mark.parametrize("path", ["/api/replays", "/api/games"])
def test_a_client_that_leaves_mid_body_gets_a_quiet_400_not_a_traceback(app, path):
    """A tab closed during an upload: the app answers (to nobody) instead of raising
    ClientDisconnect into the server's log."""
    answer = asyncio.run(_post_raw(app, path, [b'{"se'], "leaves", 100))
    assert answer["status"] == 400 and b"closed the connection" in answer["body"], answer
