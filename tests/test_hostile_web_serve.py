"""The web server as a process and on the network (sevenrocks_env.web.server, .origin): bad
settings and agents refused before it starts, a busy port, Ctrl-C, requests from other sites
(Origin) and other host names (Host: DNS rebinding) refused, loopback names by bound address."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from web_client import BOTS

from sevenrocks_env.web.origin import host_names_for


@pytest.mark.parametrize("argv", [["--idle-minutes", "nan"], ["--idle-minutes", "inf"],
                                  ["--idle-minutes", "0"], ["--port", "0"], ["--max-games", "0"],
                                  ["--port", "65536"]])  # (an OverflowError from the socket)
def test_serve_refuses_bad_settings_before_starting(argv, capsys, monkeypatch):
    """nan idle minutes would never expire a game: the store would answer 429 for good.  The
    error names the option and the value given (``--max-games 0`` said "--port must be").  A
    server that starts is a failure here, not a test that never returns."""
    import uvicorn

    from sevenrocks_env.web.server import main

    def started(*args, **kwargs):
        raise AssertionError(f"the server started with {argv}")

    monkeypatch.setattr(uvicorn.Server, "run", started)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {argv[0]} must be") and err.strip().endswith(f"got {argv[1]}")


def test_serve_refuses_an_agent_it_cannot_build_before_starting(capsys):
    from sevenrocks_env.web.server import main

    # (a documentation address, never this machine's: a server never starts, even unchecked)
    assert main(["--agent", "bogus", "--host", "192.0.2.1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: --agent bogus: ")
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://testserver.evil",
                                    "https://testserver:8443", ""])
def test_a_post_from_another_site_is_refused(client, app, origin):
    """A page elsewhere can make the browser post here (a form, a no-cors fetch): browsers name
    that page in ``Origin``, and it is not this server."""
    refused = client.post("/api/games", json=BOTS, headers={"origin": origin})
    assert refused.status_code == 403 and "another site" in refused.json()["error"]
    assert len(app.state.store) == 0
    assert client.post("/api/games", json=BOTS, headers={"origin": "http://testserver"}) \
        .status_code == 201  # the page itself
    assert client.post("/api/games", json=BOTS, headers={"origin": "HTTP://TestServer"}) \
        .status_code == 201  # host names are case-insensitive
    assert client.post("/api/games", json=BOTS).status_code == 201  # curl, scripts: no Origin
    assert client.get("/api/agents", headers={"origin": origin}).status_code == 200
    game = client.post("/api/games", json=BOTS).json()["id"]  # a DELETE changes something too
    refused = client.delete(f"/api/games/{game}", headers={"origin": origin})
    assert refused.status_code == 403 and client.get(f"/api/games/{game}").status_code == 200


@pytest.mark.parametrize("host, status", [
    ("127.0.0.1:8000", 200), ("localhost", 200), ("LocalHost:80", 200), ("[::1]:8000", 200),
    ("evil.example", 400), ("evil.example:8000", 400), ("127.0.0.1.evil.example", 400),
    ("[::2]:8000", 400), ("", 400), ("[::1", 400),
])
def test_a_loopback_server_answers_only_to_loopback_names(host, status):
    """DNS rebinding: a site whose name resolves to 127.0.0.1 sends its own name as Host."""
    from starlette.testclient import TestClient

    from sevenrocks_env.web.api import create_app
    from sevenrocks_env.web.games import GameStore

    with TestClient(create_app(GameStore(max_games=2),
                                  host_names=host_names_for("127.0.0.1"))) as local:
        answer = local.get("/api/agents", headers={"host": host})
        assert answer.status_code == status, answer.text
        if status == 400:
            assert "answers only at 127.0.0.1, [::1], localhost, not at" in answer.json()["error"]


@pytest.mark.parametrize("address, names", [
    ("127.0.0.1", {"localhost", "127.0.0.1", "::1"}),
    ("127.0.0.2", {"localhost", "127.0.0.1", "::1", "127.0.0.2"}),
    ("::1", {"localhost", "127.0.0.1", "::1"}), ("LocalHost", {"localhost", "127.0.0.1", "::1"}),
    ("0.0.0.0", None), ("::", None), ("192.168.1.5", None), ("myhost.example", None),
])
def test_host_names_of_a_server_follow_its_address(address, names):
    """A server on any loopback address is guarded against rebinding (127.0.0.2 was not);
    one on a network address answers to any name."""
    assert host_names_for(address) == (None if names is None else frozenset(names))


@pytest.mark.parametrize("address, bound, extra", [
    ("127.1", "127.0.0.1", {"127.1"}), ("myhost", "127.0.1.1", {"myhost", "127.0.1.1"}),
    ("0.0.0.0", "0.0.0.0", None), ("myhost", "192.168.1.5", None),
])
def test_the_bound_address_decides_whether_a_server_is_loopback_only(address, bound, extra):
    """``--host 127.1`` (or a machine name resolving to 127.0.1.1) bound a loopback socket
    that answered to any Host name: the socket's own address decides."""
    expected = None if extra is None else frozenset({"localhost", "127.0.0.1", "::1", *extra})
    assert host_names_for(address, bound) == expected


def test_serve_on_127_1_refuses_another_host_name():
    """The real server: ``--host 127.1`` answers at 127.1 and refuses a rebinding name."""
    import http.client
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "sevenrocks_env.web", "--host", "127.1", "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "open http://127.1:" in server.stdout.readline()
        answers = {}
        for host in ("127.1", "evil.example"):
            for _ in range(100):  # the socket is bound before the line: uvicorn may lag
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    connection.request("GET", "/api/agents", headers={"Host": f"{host}:{port}"})
                    answers[host] = connection.getresponse().status
                    break
                except ConnectionError:
                    time.sleep(0.1)
        assert answers == {"127.1": 200, "evil.example": 400}
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_server_on_another_loopback_address_answers_to_it():
    from starlette.testclient import TestClient

    from sevenrocks_env.web.api import create_app
    from sevenrocks_env.web.games import GameStore

    with TestClient(create_app(GameStore(max_games=2),
                               host_names=host_names_for("127.0.0.2"))) as local:
        assert local.get("/api/agents", headers={"host": "127.0.0.2:8000"}).status_code == 200
        assert local.get("/api/agents", headers={"host": "evil.example"}).status_code == 400


def test_serve_on_a_busy_port_is_one_line_before_the_address(capsys):
    """A busy port printed the page's address, then uvicorn's error, and exited 3."""
    import socket

    from sevenrocks_env.web.server import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--port", str(port)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no address printed for a server that never ran
    assert captured.err.startswith(f"error: cannot listen on 127.0.0.1 port {port}: ")
    assert "in use" in captured.err and captured.err.count("\n") == 1


def test_ctrl_c_stops_the_server_quietly(tmp_path):
    """The real ``sevenrocks serve`` (its own socket, handed to uvicorn's Server, which raises
    Ctrl-C again once it has shut down): after Ctrl-C it exits 0 with nothing on stderr."""
    import signal
    import socket
    import subprocess
    import sys
    import urllib.request

    from test_hostile_cli import default_sigint

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "sevenrocks_env.cli", "serve", "--port",
                                str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=tmp_path, preexec_fn=default_sigint, text=True)
    try:
        assert "open http://127.0.0.1" in process.stdout.readline()
        for _ in range(100):  # the address is printed just before uvicorn starts serving
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    assert page.status == 200
                break
            except OSError:
                import time
                time.sleep(0.1)
        else:  # never served: the Ctrl-C below would test a server that had not started
            pytest.fail("the server did not answer within 10 s")
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGINT)  # an impatient second Ctrl-C
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0 and err == "", err
