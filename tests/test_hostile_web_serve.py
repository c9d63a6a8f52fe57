"""The web server as a process and on the network (sevenrocks_env.web.server, .origin): bad
settings and agents refused before it starts, a busy port, Ctrl-C, requests from other sites
(Origin) and other host names (Host: DNS rebinding) refused, on a loopback address (its names
by bound address) and on a network one (addresses, the machine's names, --allow-host), and the
protective headers on every answer."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from web_client import BOTS

from sevenrocks_env.web.origin import NetworkNames, host_names_for

#: This machine's names, as the tests below make ``socket.gethostname()`` give them.
MACHINE = frozenset({"box.lan", "box.lan.local", "box", "box.local"})


@pytest.fixture()
def box(monkeypatch):
    """This machine is called ``Box.lan`` (:data:`MACHINE`)."""
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "Box.lan")


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
    ("0.0.0.0", None), ("::", None), ("192.168.1.5", None), ("myhost.example", {"myhost.example"}),
])
def test_host_names_of_a_server_follow_its_address(address, names, box):
    """A server on any loopback address is guarded against rebinding (127.0.0.2 was not);
    one on a network address answers at IP addresses, localhost and this machine's names
    (and ``--host`` if it is a name): it answered to any name."""
    found = host_names_for(address)
    if names is None or "myhost.example" in names:
        assert isinstance(found, NetworkNames)
        assert found == {"localhost", *MACHINE, *(names or ())}
    else:
        assert found == frozenset(names) and not isinstance(found, NetworkNames)


@pytest.mark.parametrize("address, bound, extra", [
    ("127.1", "127.0.0.1", {"127.1"}), ("myhost", "127.0.1.1", {"myhost", "127.0.1.1"}),
    ("0.0.0.0", "0.0.0.0", None), ("myhost", "192.168.1.5", None),
])
def test_the_bound_address_decides_whether_a_server_is_loopback_only(address, bound, extra):
    """``--host 127.1`` (or a machine name resolving to 127.0.1.1) bound a loopback socket
    that answered to any Host name: the socket's own address decides."""
    found = host_names_for(address, bound)
    if extra is None:
        assert isinstance(found, NetworkNames) and "evil.example" not in found
    else:
        assert found == frozenset({"localhost", "127.0.0.1", "::1", *extra})


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


@pytest.mark.parametrize("host, status", [
    ("192.168.1.5:8455", 201), ("10.0.0.2", 201), ("[fe80::1]:8455", 201), ("[::1]", 201),
    ("localhost:8455", 201), ("box.lan:8455", 201), ("BOX.LAN", 201), ("box.local:8455", 201),
    ("box.lan.local", 201), ("box", 201), ("games.lan:8455", 201), ("Games.Lan", 201),
    ("box.lan.:8455", 201), ("localhost.", 201), ("games.lan.", 201),  # a final dot: the same
    ("evil.com:8455", 400), ("box.lan.evil.com", 400), ("192.168.1.5.nip.io", 400),
    ("localhost.evil.com", 400), ("games.lan.evil.com", 400), ("", 400),
])
def test_a_network_server_answers_only_at_addresses_and_its_own_names(host, status, box):
    """DNS rebinding on ``--host 0.0.0.0``: a page at evil.com:8455 whose name is made to
    resolve to the server sends ``Host`` and ``Origin`` both naming evil.com, so the Origin
    check passed, and it could fill the ``--max-games`` places (or play).  An IP address, this
    machine's names and ``--allow-host`` names are still answered."""
    from starlette.testclient import TestClient

    from sevenrocks_env.web.api import create_app
    from sevenrocks_env.web.games import GameStore

    store = GameStore(max_games=2)
    names = host_names_for("0.0.0.0", "0.0.0.0", ("games.lan",))
    with TestClient(create_app(store, host_names=names)) as network:
        answer = network.post("/api/games", json=BOTS,
                              headers={"host": host, "origin": f"http://{host}"})
        assert answer.status_code == status, answer.text
        assert len(store) == (status == 201)
        if status == 400:
            assert "answers only at an IP address, box, box.lan, box.lan.local, box.local, " \
                "games.lan, localhost, not at" in answer.json()["error"]
            assert "--allow-host NAME" in answer.json()["error"]


def test_serve_hands_allow_host_names_to_the_app(monkeypatch, capsys, box):
    import socket

    import uvicorn

    from sevenrocks_env.web.server import main

    seen = {}
    monkeypatch.setattr(uvicorn.Server, "run",
                        lambda self, sockets=None: seen.update(app=self.config.app))
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        port = probe.getsockname()[1]
    assert main(["--host", "0.0.0.0", "--port", str(port), "--allow-host", "Games.LAN",
                 "--allow-host", "play.example"]) == 0
    (middleware,) = [m for m in seen["app"].user_middleware if m.kwargs.get("host_names")]
    names = middleware.kwargs["host_names"]
    assert isinstance(names, NetworkNames)
    assert names == {"localhost", *MACHINE, "games.lan", "play.example"}
    out = capsys.readouterr().out
    assert "at an IP address of this computer or at box, box.lan, box.lan.local, box.local, " \
        "games.lan, localhost, play.example (--allow-host NAME for another name)" in out
    assert main(["--port", str(port), "--allow-host", "a.lan"]) == 0  # loopback: also named
    (middleware,) = [m for m in seen["app"].user_middleware if m.kwargs.get("host_names")]
    assert middleware.kwargs["host_names"] == {"localhost", "127.0.0.1", "::1", "a.lan"}


@pytest.mark.parametrize("name", ["", "evil/..", "a b", "http://x", ".lan", "a.lan:80",
                                  "caf\u00e9", "a..b", "1.2.3.999", "box.lan..", "0x7f",
                                  "box.0x10"])
def test_serve_refuses_an_allow_host_that_is_not_a_name(name, capsys):
    from sevenrocks_env.web.server import main

    assert main(["--allow-host", name, "--host", "192.0.2.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --allow-host must be a host name") and err.count("\n") == 1


PROTECTIVE = {"content-security-policy":
              "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
              "x-content-type-options": "nosniff"}


def test_every_answer_has_the_protective_headers(client):
    """A Content-Security-Policy (the page's scripts and styles from the server only; no
    framing by another site) and nosniff, on the page, its files, JSON answers and refusals
    (the Origin and Host ones come from the middleware in front of the routes)."""
    game = client.post("/api/games", json=BOTS)
    answers = [client.get("/"), client.get("/static/app.js"), client.get("/static/style.css"),
               client.get("/api/agents"), game, client.get("/api/games/nothing"),
               client.get("/nowhere"), client.post("/api/games", content=b"{"),
               client.delete(f"/api/games/{game.json()['id']}"),
               client.post("/api/games", json=BOTS, headers={"origin": "http://evil.example"})]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 201, 404, 404, 400, 204, 403]
    for answer in answers:
        for name, value in PROTECTIVE.items():
            assert answer.headers.get_list(name) == [value], (answer.request.url, name)


def test_allow_host_takes_a_final_dot_and_names_the_form_browsers_send():
    """``box.lan.`` (a fully qualified name) was refused; a name with letters outside a-z was
    refused without saying that browsers send its punycode form."""
    from sevenrocks_env.web.origin import allowed_name

    assert allowed_name("Box.LAN.") == "box.lan"
    with pytest.raises(ValueError, match=r"'B\u00fccher\.lan' \(a browser sends "
                                         r"xn--bcher-kva\.lan: give that\)$"):
        allowed_name("B\u00fccher.lan")
    assert allowed_name("xn--bcher-kva.lan") == "xn--bcher-kva.lan"
    with pytest.raises(ValueError, match=r"a browser sends xn--strae-oqa\.lan: give that"):
        allowed_name("stra\u00dfe.lan")  # IDNA 2003 said strasse.lan, which browsers never send


class _Bug(Exception):
    """A failure of a class no handler names."""


@pytest.mark.parametrize("failure", [RuntimeError, KeyError, _Bug])
def test_an_unexpected_failure_is_a_json_500_with_the_protective_headers(app, monkeypatch,
                                                                         failure):
    """Starlette answers an exception no handler takes from outside every middleware: its
    plain-text 500 had no Content-Security-Policy and no nosniff (any class of failure: a
    handler of RuntimeError alone would leave the others to it)."""
    from starlette.testclient import TestClient

    def broken(*args, **kwargs):
        raise failure("a bug")

    monkeypatch.setattr(app.state.store, "get", broken)
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/api/games/any")
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal server error: the server's log says more"}
    for name, value in PROTECTIVE.items():
        assert answer.headers.get_list(name) == [value], name
