"""Tests from a mutation audit of what session 56 changed: ``sevenrocks serve``'s connection
timers (web/connections.py, driven here at the protocol level, without sockets: the real-socket
checks are test_hostile_web_connections.py), the Host and ``--allow-host`` checks
(web/origin.py), the optional-package message (extras.py), ``sevenrocks play``'s answers
(play_answers.py), the trainer's hider (cli.py) and the shipped policy's path (policy_file.py).
(render/geometry.py's ``_outward`` and ``_options``: all 18 mutants were killed by
test_render_line_bends.py and test_session53_mutants.py.)"""

from __future__ import annotations

import asyncio
import sys
import types

import pytest

# --- web/connections.py: HeadDeadline's timers, without a socket ---------------------------


class _Transport(asyncio.Transport):
    """What a protocol is given: records what it was told (written, aborted, closed)."""

    def __init__(self):
        super().__init__()
        self.closing = self.aborted = False
        self.limits, self.written = None, b""

    def get_extra_info(self, name, default=None):
        return default

    def set_write_buffer_limits(self, high=None, low=None):
        self.limits = (high, low)

    def is_closing(self):
        return self.closing

    def abort(self):
        self.closing = self.aborted = True

    def close(self):
        self.closing = True

    def write(self, data):
        self.written += data

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


async def _ok(scope, receive, send):
    """An app that answers 200 at once, reading no body."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture()
def wired(monkeypatch):
    """``(protocol, transport, loop)``: a :class:`HeadDeadline` on a transport that records
    what it is told, its timers on a loop that runs only when told (:func:`_run`); the
    deadlines are 10, 20 and 30 s (head, body, write) so each timer tells which it is."""
    import uvicorn
    from uvicorn.server import ServerState

    from sevenrocks_env.web import connections

    for name, seconds in (("HEAD_SECONDS", 10.0), ("BODY_SECONDS", 20.0),
                          ("WRITE_SECONDS", 30.0)):
        monkeypatch.setattr(connections, name, seconds)
    loop = asyncio.new_event_loop()
    config = uvicorn.Config(app=_ok, log_level="critical", lifespan="off")
    protocol = connections.HeadDeadline(config, ServerState(), {}, _loop=loop)
    transport = _Transport()
    protocol.connection_made(transport)
    yield protocol, transport, loop
    protocol.connection_lost(None)
    _run(loop)
    loop.close()


def _run(loop) -> None:
    """Let the loop run what is ready (the app's answer), a few rounds."""
    for _ in range(5):
        loop.run_until_complete(asyncio.sleep(0))


def _delay(protocol, loop, timer="timer") -> int:
    """Seconds from now until the protocol's ``timer`` (or ``write_timer``) goes off."""
    return round(getattr(protocol, timer).when() - loop.time())


def test_a_head_sent_a_byte_at_a_time_keeps_the_deadline_of_its_first_byte(wired):
    """A head's 10 s are not restarted by its bytes (else a head trickled a byte every 9 s
    would hold the connection for ever)."""
    protocol, transport, loop = wired
    assert transport.limits[0] == 0  # paused as soon as an answer waits to be sent
    first = protocol.timer
    assert protocol.timing == "head" and _delay(protocol, loop) == 10
    for byte in b"GET / HTTP/1.1\r\nHost: x\r\n":
        protocol.data_received(bytes([byte]))
    assert protocol.timer is first and not first.cancelled()


def test_a_body_is_timed_from_its_head_s_end_once(wired):
    """The body's 20 s start when its head is all there (the head's timer ends) and are not
    restarted by its bytes; the whole request in, the answer is the app's: no timer."""
    protocol, transport, loop = wired
    head = protocol.timer
    protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab")
    body = protocol.timer
    assert head.cancelled() and protocol.timing is protocol.cycle and _delay(protocol, loop) == 20
    protocol.data_received(b"cd")
    assert protocol.timer is body and not body.cancelled()
    protocol.data_received(b"ef")
    assert protocol.timer is None and protocol.timing is None and body.cancelled()


def test_the_next_request_on_a_kept_connection_has_its_own_head_deadline(wired):
    protocol, transport, loop = wired
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert protocol.timer is None  # the app's turn
    _run(loop)
    assert transport.written.startswith(b"HTTP/1.1 200 ")
    protocol.data_received(b"GET / HT")
    assert protocol.timing == "head" and _delay(protocol, loop) == 10


def test_a_timer_that_runs_out_aborts_the_connection(wired):
    """Aborted, not closed: a close waits for the unsent answer a slow client never reads."""
    protocol, transport, loop = wired
    protocol.data_received(b"GET / HT")
    protocol.timer._run()
    assert transport.aborted


def test_an_answer_waiting_to_be_sent_has_the_write_deadline(wired):
    """Paused writing starts 30 s, after which the connection is aborted; resumed writing
    cancels them, and a later pause starts 30 s again."""
    protocol, transport, loop = wired
    protocol.pause_writing()
    first = protocol.write_timer
    assert _delay(protocol, loop, "write_timer") == 30
    protocol.resume_writing()
    assert first.cancelled() and protocol.write_timer is None
    protocol.pause_writing()
    second = protocol.write_timer
    assert second is not None and second is not first and not second.cancelled()
    second._run()
    assert transport.aborted


def test_a_lost_connection_leaves_no_timer_running(wired):
    """Both timers end with the connection (a timer left running holds the protocol and its
    buffers until it goes off)."""
    protocol, transport, loop = wired
    head = protocol.timer
    protocol.pause_writing()
    write = protocol.write_timer
    protocol.connection_lost(None)
    assert head.cancelled() and write.cancelled()


def _fake_resource(monkeypatch, soft, hard, refuse=None):
    """A ``resource`` module whose RLIMIT_NOFILE is ``(soft, hard)``; ``setrlimit`` raises
    ``refuse`` if given (macOS refuses past kern.maxfilesperproc with ValueError or OSError)."""
    infinity = -1

    def setrlimit(which, limits):
        if refuse is not None:
            raise refuse
        fake.limits = limits

    fake = types.SimpleNamespace(RLIMIT_NOFILE=7, RLIM_INFINITY=infinity, limits=(soft, hard),
                                 getrlimit=lambda which: fake.limits, setrlimit=setrlimit)
    monkeypatch.setitem(sys.modules, "resource", fake)
    return fake


@pytest.mark.parametrize("soft, hard, raised", [
    (256, 20000, 8192),     # up to OPEN_FILES
    (256, 1000, 1000),      # up to the hard limit when it is lower
    (256, -1, 8192),        # an unlimited hard limit: OPEN_FILES
    (10000, 20000, 10000),  # already above: left as it is
])
def test_the_open_files_limit_is_raised_towards_the_hard_one(monkeypatch, soft, hard, raised):
    from sevenrocks_env.web.connections import OPEN_FILES, raise_open_files_limit

    assert OPEN_FILES == 8192
    fake = _fake_resource(monkeypatch, soft, hard)
    assert raise_open_files_limit() == raised
    assert fake.limits == (raised, hard)


def test_an_unlimited_soft_limit_is_none_and_left_alone(monkeypatch):
    from sevenrocks_env.web.connections import connection_limit, raise_open_files_limit

    fake = _fake_resource(monkeypatch, -1, -1)
    assert raise_open_files_limit() is None and fake.limits == (-1, -1)
    assert connection_limit(None) == 512


@pytest.mark.parametrize("refusal", [ValueError("too many"), OSError(1, "not permitted")])
def test_a_refused_raise_keeps_the_soft_limit(monkeypatch, refusal):
    from sevenrocks_env.web.connections import raise_open_files_limit

    _fake_resource(monkeypatch, 256, 100000, refuse=refusal)
    assert raise_open_files_limit() == 256


def test_the_connection_limit_is_half_the_open_files_and_at_least_one():
    from sevenrocks_env.web.connections import connection_limit

    assert [connection_limit(n) for n in (1, 2, 3, 5, 1023, 1024, 1026, 8192)] == \
        [1, 1, 1, 2, 511, 512, 512, 512]


def test_the_deadlines_are_the_documented_ones():
    """docs/web.md and docs/security.md: 10 s for a head, 35 s more for its body (the app's own
    408 comes at 30 s, first), 30 s for a waiting answer, 512 connections."""
    from sevenrocks_env.web import api, connections

    assert api.BODY_SECONDS == 30
    assert (connections.HEAD_SECONDS, connections.BODY_SECONDS, connections.WRITE_SECONDS,
            connections.MAX_CONNECTIONS) == (10, 35, 30, 512)


# --- web/origin.py: --allow-host names, this machine's names, the headers --------------------

@pytest.mark.parametrize("given", ["-box.lan", "box-.lan", "box.-lan", "box.0x", "box.0X1F",
                                   "[::1", "::1]"])
def test_allow_host_refuses_a_label_edged_with_a_hyphen_or_a_hex_number_last(given):
    """A label neither starts nor ends with a hyphen; a last label ``0x`` or ``0x1f`` is a
    number to a browser (the URL standard's ends-in-a-number), as ``999`` is; a bracket
    unmatched is no IPv6 address."""
    from sevenrocks_env.web.origin import allowed_name

    with pytest.raises(ValueError, match="^--allow-host must be a host name such as box.lan"):
        allowed_name(given)


@pytest.mark.parametrize("given, name", [
    ("games.3com", "games.3com"), ("box.x0", "box.x0"), ("box.0xg", "box.0xg"),
    ("a-b.c_d", "a-b.c_d"), ("[::1]", "::1"), ("[FE80::1]", "fe80::1"), ("::1", "::1"),
    ("192.168.1.5", "192.168.1.5"), ("  Box.Lan.  ", "box.lan")])
def test_allow_host_takes_names_whose_last_label_is_no_number_and_addresses(given, name):
    from sevenrocks_env.web.origin import allowed_name

    assert allowed_name(given) == name


def test_allow_host_names_the_form_browsers_send_only_when_it_is_a_name():
    """The hint is for the name as given, whatever its case and final dot, and only when the
    form browsers send would itself be taken (``b\u00fccher.999`` ends in a number either
    way)."""
    from sevenrocks_env.web.origin import allowed_name

    with pytest.raises(ValueError, match=r"\(a browser sends xn--bcher-kva\.lan: give that\)$"):
        allowed_name(" B\u00fcCHER.Lan. ")
    with pytest.raises(ValueError) as refused:
        allowed_name("b\u00fccher.999")
    assert "browser" not in str(refused.value)
    with pytest.raises(ValueError, match="^--allow-host must be a host name"):
        allowed_name("xn--bcher-kva.999")


@pytest.mark.parametrize("machine, names", [
    ("Box.local", {"box", "box.local"}),
    ("box.lan.local.", {"box.lan", "box.lan.local", "box", "box.local"}),
    ("", set()), (".", set()),
])
def test_this_machine_s_names(monkeypatch, machine, names):
    """A host name ending in ``.local`` (macOS's) gives no ``box.local.local``; an empty one
    (a machine with no name set) no ``""`` or ``.local``."""
    import socket

    from sevenrocks_env.web.origin import machine_names

    monkeypatch.setattr(socket, "gethostname", lambda: machine)
    assert machine_names() == names


def test_origin_is_compared_with_the_host_header_without_its_spaces():
    from starlette.datastructures import Headers

    from sevenrocks_env.web.origin import refusal

    spaced = Headers({"host": " LocalHost:8000 ", "origin": " http://localhost:8000 "})
    assert refusal("POST", spaced, frozenset({"localhost"})) is None


def test_an_answer_s_own_protective_header_is_kept():
    """The middleware adds a header only where the answer has none of that name."""
    from sevenrocks_env.web.origin import ProtectiveHeaders

    async def own(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-security-policy", b"default-src 'none'")]})
        await send({"type": "http.response.body", "body": b""})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/", "headers": []}
    asyncio.run(ProtectiveHeaders(own)(scope, receive, send))
    headers = dict(sent[0]["headers"])
    assert headers == {b"content-security-policy": b"default-src 'none'",
                       b"x-content-type-options": b"nosniff"}


# --- extras.py ---------------------------------------------------------------------------------

def test_a_missing_optional_package_s_error_chains_the_original():
    """The ``ImportError`` names the extra, and its cause is the ``ModuleNotFoundError`` (a
    traceback shows where the import was)."""
    from sevenrocks_env.extras import needs_package

    missing = ModuleNotFoundError("No module named 'pyspiel'", name="pyspiel")
    with pytest.raises(ImportError, match=r"^x needs OpenSpiel \(pyspiel is missing\): pip "
                                          r"install -e \"\.\[openspiel\]\" \(note\)$") as error:
        with needs_package("pyspiel", "x", "OpenSpiel", "openspiel", " (note)"):
            raise missing
    assert error.value.__cause__ is missing


# --- play_answers.py ---------------------------------------------------------------------------

def _position_a():
    """Worked example A after 4 steps: seat 0 on turn holding 1|2 1|3 4|5 4|6 5|6 6|6, the
    spinner 1 at the west end, east showing 3."""
    from rules_examples import EXAMPLES, example_match

    match = example_match(EXAMPLES["A"], steps=4)
    assert match.turn == 0
    return match


def test_a_double_s_two_digits_are_both_a_move_and_the_tile():
    """'11' spells 1|1 whichever half comes first (R1): with 11 moves listed it is refused as
    both, as '01' is; '10' is only move 10."""
    from sevenrocks_env.play_answers import parse_answer
    from sevenrocks_env.tiles import EAST, encode_action, parse_tile

    match = _position_a()
    match.hands[0] |= 1 << parse_tile("1|1")
    moves = [encode_action(parse_tile("3|5"), EAST)] * 11
    with pytest.raises(ValueError, match=r"^11 is both move 11 on the list .* your tile 1\|1"):
        parse_answer("11", match, moves)


def test_the_tile_on_a_knock_s_number_is_refused_as_both_saying_k():
    """Nothing fits, and '01' spells the held 0|1: move 1 (the knock) or that tile; the
    refusal says 'k' for the knock."""
    from sevenrocks_env.play_answers import parse_answer
    from sevenrocks_env.tiles import KNOCK, parse_tile

    match = _position_a()
    match.hands[0] |= 1 << parse_tile("0|1")
    with pytest.raises(ValueError, match=r"^01 is both move 1 on the list \(.*\) and your tile "
                                         r"0\|1: answer 'k' for the move, or '0-1'"):
        parse_answer("01", match, [KNOCK])
    assert parse_answer("1", match, [KNOCK]) == KNOCK


def test_the_tile_spelled_by_a_number_is_looked_up_in_the_hand_of_the_seat_on_turn():
    from sevenrocks_env.play_answers import parse_answer
    from sevenrocks_env.tiles import EAST, encode_action, parse_tile

    match = _position_a()
    match.turn = 2
    match.hands[2] = 1 << parse_tile("0|2") | 1 << parse_tile("3|5")
    assert not match.hands[0] >> parse_tile("0|2") & 1
    moves = [encode_action(parse_tile("3|5"), EAST)] * 2
    with pytest.raises(ValueError, match=r"^02 is both move 2 on the list"):
        parse_answer("02", match, moves)


@pytest.mark.parametrize("answer, reason", [
    ("1-2 x w", r"^'x' is not an end: name one as w, e, n or s"),  # a word, then an end
    ("1-2 3", r"^not understood: '1-2 3'"),                         # a number is no end
])
def test_what_follows_a_tile_is_an_end_word_or_not_understood(answer, reason):
    from sevenrocks_env.play_answers import parse_answer
    from sevenrocks_env.rules import legal_actions

    match = _position_a()
    with pytest.raises(ValueError, match=reason):
        parse_answer(answer, match, legal_actions(match))


def test_a_branch_named_when_the_spinner_is_0_0_is_not_open_yet_not_missing():
    """The spinner is the first double's number: 0 (the double blank) is a spinner too."""
    from sevenrocks_env.play_answers import branch_closed_text, parse_answer
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from sevenrocks_env.tiles import KNOCK, tile_name

    for seed in range(200):
        match = Match.new(seed)
        for _ in range(40):
            if match.spinner >= 0:
                break
            legal = legal_actions(match)
            double_blank = [a for a in legal if a != KNOCK and a >> 2 == 0]
            apply_action(match, (double_blank or legal)[0])
        legal = legal_actions(match)
        if match.spinner == 0 and match.ends[2] < 0 and legal != [KNOCK]:
            break
    else:
        pytest.fail("no round with the double blank as its spinner")
    assert branch_closed_text(match).startswith("the spinner's branches open only once")
    with pytest.raises(ValueError, match=r"^the north end is not open \(the spinner's branches"):
        parse_answer(f"{tile_name(legal[0] >> 2)} n", match, legal)


# --- cli.py: the trainer's hider ---------------------------------------------------------------

def test_a_training_module_with_no_file_hides_nothing_it_can_name(monkeypatch):
    """A ``training`` module with neither ``__path__`` nor ``__file__`` (made in memory) has no
    place to name: the missing-extra message, not a crash."""
    from sevenrocks_env.cli import hiding_package

    monkeypatch.setitem(sys.modules, "training", types.ModuleType("training"))
    assert hiding_package("training") is None


def test_our_trainer_reached_through_a_symbolic_link_is_ours(monkeypatch, tmp_path):
    """The checkout opened through a linked folder: its ``training`` package is still ours."""
    import os

    import training as ours
    from sevenrocks_env.cli import hiding_package

    link = tmp_path / "linked_training"
    os.symlink(os.path.dirname(ours.__file__), link, target_is_directory=True)
    theirs = types.ModuleType("training")
    theirs.__path__ = [str(link)]
    monkeypatch.setitem(sys.modules, "training", theirs)
    assert hiding_package("training") is None
    theirs.__path__ = [str(tmp_path)]
    assert hiding_package("training") == os.path.realpath(tmp_path)


# --- policy_file.py: the shipped policy's path, a checkpoint path ------------------------------

def test_the_shipped_policy_is_the_package_s_own_copy():
    """Package data first (``sevenrocks_env/shipped/``: an installed wheel has no
    ``checkpoints/``), the checkout's ``checkpoints/shipped/`` only where that is missing."""
    from pathlib import Path

    import sevenrocks_env
    from sevenrocks_env.policy_file import resolve_path, shipped_path

    package = Path(sevenrocks_env.__file__).parent
    assert shipped_path() == package / "shipped" / "sevenrocks_ppo.pt"
    assert resolve_path("shipped") == shipped_path()


def test_without_package_data_the_shipped_policy_is_the_checkout_s(monkeypatch, tmp_path):
    from pathlib import Path

    import sevenrocks_env
    from sevenrocks_env import policy_file

    monkeypatch.setattr(policy_file.resources, "files", lambda package: tmp_path)
    checkout = Path(sevenrocks_env.__file__).resolve().parents[1]
    assert policy_file.shipped_path() == checkout / "checkpoints" / "shipped" / "sevenrocks_ppo.pt"


def test_a_missing_shipped_policy_names_its_whole_path(monkeypatch, tmp_path):
    from sevenrocks_env import policy_file

    where = tmp_path / "site-packages" / "sevenrocks_ppo.pt"
    monkeypatch.setattr(policy_file, "shipped_path", lambda: where)
    with pytest.raises(policy_file.CheckpointError) as error:
        policy_file.resolve_path("shipped")
    assert f"(no file {where})" in str(error.value)


def test_a_checkpoint_path_expands_a_leading_tilde(monkeypatch, tmp_path):
    """``ckpt:~/x.pt``: no shell expands the ``~`` there."""
    from sevenrocks_env.policy_file import resolve_path

    (tmp_path / "x.pt").write_bytes(b"")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_path("~/x.pt") == tmp_path / "x.pt"


@pytest.mark.parametrize("spec", ["ckpt:model.pt", "policy:model.pt"])
def test_an_agent_spec_given_as_a_checkpoint_path_is_named_one(spec):
    """``search:policy=ckpt:shipped`` takes a path or 'shipped', not a spec."""
    from sevenrocks_env.policy_file import CheckpointError, resolve_path

    with pytest.raises(CheckpointError, match=f"^no such file: '?{spec}'? .*; a path or "
                                              "'shipped' is expected here, not an agent spec$"):
        resolve_path(spec)


def test_a_checkpoint_path_with_a_nul_is_a_checkpoint_error_saying_so():
    from sevenrocks_env.policy_file import CheckpointError, resolve_path

    with pytest.raises(CheckpointError, match=r"contains a NUL character \(\\x00\): no file"):
        resolve_path("policy\x00.pt")
