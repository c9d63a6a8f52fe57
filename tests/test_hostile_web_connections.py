"""The real ``sevenrocks serve`` on a socket (sevenrocks_env.web.connections): a connection
that never finishes its request head is closed (uvicorn set no timer before its first answer,
so a few hundred such sockets used up the server's file descriptors), a body sent slowly is
still read, a request malformed at the HTTP level is refused by uvicorn's parser in plain text
(as docs/web.md says), and the server raises its open-files limit and bounds its connections."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from web_client import BOTS

DOCS = Path(__file__).resolve().parents[1] / "docs"
HEAD_SECONDS = 0.5  # the server's deadlines in these tests (10 s and 35 s in use)
BODY_SECONDS = 3.0
WRITE_SECONDS = 1.0
SERVER = {}  # the server process's pid, to count its open files
STARTED = ("from sevenrocks_env.web import connections, server; connections.HEAD_SECONDS = {};"
           " connections.BODY_SECONDS = {}; connections.WRITE_SECONDS = {};"
           " raise SystemExit(server.main(['--port', '{}']))")


@pytest.fixture(scope="module")
def port():
    """The port of a real ``sevenrocks serve`` (in a process of its own) whose request heads
    must arrive within ``HEAD_SECONDS``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    started = STARTED.format(HEAD_SECONDS, BODY_SECONDS, WRITE_SECONDS, free)
    server = subprocess.Popen([sys.executable, "-c", started],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    SERVER["pid"] = server.pid
    try:
        assert "open http://127.0.0.1:" in server.stdout.readline()
        for _ in range(100):  # the socket is bound before the line: uvicorn may lag
            try:
                assert answer(free, "GET", "/api/agents")[0] == 200
                break
            except ConnectionError:
                time.sleep(0.1)
        yield free
    finally:
        server.terminate()
        server.communicate(timeout=30)


def answer(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body, headers={"Host": f"127.0.0.1:{port}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def read_answer(connection: socket.socket) -> http.client.HTTPResponse:
    """The answer the server sends on ``connection``, read to its end (``.body``)."""
    connection.settimeout(10)
    response = http.client.HTTPResponse(connection)
    response.begin()
    response.body = response.read()
    return response


def closed_by_the_server(connection: socket.socket) -> bool:
    """Whether the server closes ``connection`` without an answer (waiting up to 10 s)."""
    connection.settimeout(10)
    try:
        return connection.recv(1) == b""
    except TimeoutError:
        return False


def test_a_request_head_not_all_sent_is_closed(port):
    """``GET / HTTP/1.1``, a header and never the blank line, or nothing at all: such sockets
    were held for ever (a few hundred exhausted the file descriptors at ``ulimit -n 256``).
    Also on a kept-alive connection, once a first request was answered."""
    half = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    with socket.create_connection(("127.0.0.1", port)) as silent, \
            socket.create_connection(("127.0.0.1", port)) as halfway, \
            socket.create_connection(("127.0.0.1", port)) as kept:
        halfway.sendall(half)
        kept.sendall(half + b"\r\n")
        assert read_answer(kept).status == 200
        kept.sendall(half)  # the next request, half sent within uvicorn's keep-alive time
        assert closed_by_the_server(halfway), "a half-sent request head was never closed"
        assert closed_by_the_server(silent), "a connection that sent nothing was never closed"
        assert closed_by_the_server(kept), "a second half-sent request head was never closed"
    assert answer(port, "GET", "/api/agents")[0] == 200  # and the server goes on


def test_a_body_sent_slowly_is_still_read(port):
    """Only the head is timed: a body that takes longer than ``HEAD_SECONDS`` (a record on a
    slow link) is read (the app answers 408 once it has taken 30 s)."""
    body = json.dumps(BOTS).encode()
    head = (f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head + body[:-1])
        time.sleep(3 * HEAD_SECONDS)
        connection.sendall(body[-1:])
        assert read_answer(connection).status == 201


@pytest.mark.parametrize("request_head, status", [
    ("POST /api/games HTTP/1.1\r\nContent-Length: 100000", 413),   # refused before it is read
    ("GET /api/agents HTTP/1.1\r\nContent-Length: 99999999999", 200)])  # a body ignored
def test_a_body_trickling_after_its_answer_is_closed(port, request_head, status):
    """The answer went before the body was all there; uvicorn then times nothing, and one byte
    every few seconds held the connection for ever (511 such made every request a 503)."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(f"{request_head}\r\nHost: 127.0.0.1:{port}\r\n\r\n{{".encode())
        assert read_answer(connection).status == status
        deadline = time.monotonic() + BODY_SECONDS + 5
        try:
            while time.monotonic() < deadline:
                connection.sendall(b" ")
                time.sleep(0.3)
        except OSError:  # reset or broken pipe: the server closed it
            return
    pytest.fail("a connection sending its body a byte at a time was never closed")


def test_a_refused_request_s_body_timer_does_not_cut_the_next_request(port):
    """A 413 went before the body; the client sent the body all the same (browsers do) and its
    next request on the connection: that one was cut when the refused one's body time ran out,
    not its own."""
    body = json.dumps(BOTS).encode()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           "Content-Length: 100000\r\n\r\n".encode())
        assert read_answer(connection).status == 413
        for _ in range(4):  # the refused body, all of it within its time (2 s of 3)
            connection.sendall(b" " * 25000)
            time.sleep(BODY_SECONDS / 6)
        connection.sendall(f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-"
                           f"Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                           .encode() + body[:-1])
        time.sleep(BODY_SECONDS / 2)  # past the refused request's time, within its own
        connection.sendall(body[-1:])
        assert read_answer(connection).status == 201


def test_a_client_that_reads_no_answer_is_cut_off(port):
    """Requests pipelined and their answers never read: with the buffers full, the answer
    waited for ever and no timer ran (512 such made every request a 503)."""
    size = len(answer(port, "GET", "/static/app.js")[1])
    with socket.socket() as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        connection.connect(("127.0.0.1", port))
        connection.sendall(f"GET /static/app.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                           .encode() * 400)
        time.sleep(WRITE_SECONDS + 2)
        connection.settimeout(10)
        received = 0
        try:
            while chunk := connection.recv(1 << 16):
                received += len(chunk)
        except ConnectionResetError:
            pass
    assert received < 400 * size, "the server sent every answer: it never gave up on the reader"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts files in /proc")
def test_a_client_that_reads_few_answers_is_cut_off_too(port):
    """Under asyncio's 64 KiB of unsent answer nothing paused the writing, so no timer ran:
    uvicorn's keep-alive close then waited for ever for the client to read, and the server
    kept the connection's file (some of these pipelined counts did, for good)."""
    files = Path(f"/proc/{SERVER['pid']}/fd")
    before = len(list(files.iterdir()))
    request = f"GET /static/app.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    sockets = []
    try:
        for count in range(80, 101):
            connection = socket.socket()
            sockets.append(connection)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            connection.connect(("127.0.0.1", port))
            connection.sendall(request * count)
        time.sleep(WRITE_SECONDS + 7)  # past uvicorn's 5 s keep-alive close too
        held = len(list(files.iterdir())) - before
    finally:
        for connection in sockets:
            connection.close()
    assert held <= 0, f"the server still holds {held} of the unread connections"


@pytest.mark.parametrize("declared", ["-1", "x", "0" * 20 + "2"])
def test_a_malformed_content_length_is_refused_by_the_http_parser(port, declared):
    """On the real server h11 refuses such a header before the app sees it: a plain-text 400
    (not the app's JSON ``{"error"}``, test_web_failures.py), which docs/web.md quotes."""
    request = (f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: "
               f"{declared}\r\n\r\n{{}}").encode()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(request)
        response = read_answer(connection)
    body = response.body.decode()
    assert response.status == 400 and response.getheader("content-type").startswith("text/plain")
    assert body == "Invalid HTTP request received."
    assert f"`{body}`" in (DOCS / "web.md").read_text(encoding="utf-8")


def test_serve_raises_its_open_files_limit_and_bounds_its_connections(monkeypatch):
    """``ulimit -n 256`` (macOS starts processes at 256) let a few hundred connections stop
    the server; the soft limit goes up towards the hard one, and uvicorn serves at most
    ``connection_limit`` connections at once."""
    import resource

    import uvicorn

    from sevenrocks_env.web.connections import (MAX_CONNECTIONS, OPEN_FILES, HeadDeadline,
                                                connection_limit)
    from sevenrocks_env.web.server import main

    seen = {}
    monkeypatch.setattr(uvicorn.Server, "run",
                        lambda self, sockets=None: seen.update(config=self.config))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        assert main(["--port", str(free)]) == 0
        raised = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    assert raised == max(wanted, min(256, hard))
    config = seen["config"]
    assert config.http is HeadDeadline
    assert config.limit_concurrency == connection_limit(raised) == min(MAX_CONNECTIONS,
                                                                        raised // 2)
    assert connection_limit(256) == 128 and connection_limit(None) == MAX_CONNECTIONS
