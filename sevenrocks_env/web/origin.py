"""Requests that another web site makes the user's browser send are refused.

Any page the user visits can make their browser ``POST`` to ``http://127.0.0.1:8000`` (a form,
or a ``fetch`` in ``no-cors`` mode) without the server being asked first.  Such a page cannot
read the answers, but it could start games until the open-games cap refuses the user's own.  A
site whose name is made to resolve to this server's address (DNS rebinding) could read the
answers as well, and send an ``Origin`` that matches its ``Host``.  So, in front of every route:

* a request that may change something (any method but GET and HEAD) whose ``Origin`` header
  names another site than the ``Host`` it was sent to is refused with 403.  Browsers send
  ``Origin`` with every such request; other clients (curl, a script) send none and are not
  affected;
* a request whose ``Host`` is not a name of this server is refused with 400: a rebinding
  site's name is not one.  A server on a loopback address only (``sevenrocks serve`` without
  ``--host``, any ``127.x.x.x``, or a name resolving to one: the socket's bound address
  decides) answers at ``localhost``, ``127.0.0.1``, ``[::1]``, ``--host`` as given and the
  bound address; a server on a network address (``--host 0.0.0.0``) at any IP address (a
  browser that is sent there by a rebinding name sends that name, never an address), at
  ``localhost`` and at this machine's host name (:func:`machine_names`).  Both also answer at
  the names given with ``--allow-host``.

:class:`ProtectiveHeaders` adds :data:`PROTECTIVE_HEADERS` to every answer: the page runs only
its own files and cannot be framed by another site, and no answer is sniffed as another type.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse

from ..checks import shown

#: Names a loopback-only server answers to.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_SAFE_METHODS = frozenset({"GET", "HEAD"})
_LABEL = r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?"
#: A host name: dot-separated labels, the last one not a number (``1.2.3.999``, ``box.0x10``:
#: browsers read such a name as an IPv4 address, or refuse it).
_NAME = re.compile(rf"({_LABEL}\.)*(?![0-9]+$|0x[0-9a-f]*$){_LABEL}")
#: Headers on every answer: the page loads scripts, styles and everything else from this
#: server only (it has no inline script or style; its icon is a ``data:`` URL), no other site
#: may show it in a frame, and no answer is read as another type than it says.
PROTECTIVE_HEADERS = (
    ("content-security-policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    ("x-content-type-options", "nosniff"),
)


class NetworkNames(frozenset):
    """The ``Host`` names of a server on a network address: these, and any IP address."""

    def __contains__(self, name) -> bool:
        return frozenset.__contains__(self, name) or is_address(name)


def is_address(name: str) -> bool:
    """Whether ``name`` (as :func:`host_name` gives it) is an IPv4 or IPv6 address."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_name(host: str) -> str:
    """The name in a ``Host`` header, lower case, without the port or a final dot
    (``[::1]:8000`` -> ``::1``, ``box.lan.:8000`` -> ``box.lan``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host
    return (host.rsplit(":", 1)[0] if host.count(":") == 1 else host).removesuffix(".")


def allowed_name(given: str) -> str:
    """A name for ``--allow-host``, in lower case without a final dot (``Box.LAN.`` ->
    ``box.lan``, ``[::1]`` -> ``::1``); ``ValueError`` for one that is not a host name or an
    address (a port, a URL, an empty label), naming the form browsers send for a name with
    letters outside a-z (``bücher.lan`` -> ``xn--bcher-kva.lan``)."""
    name = given.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    else:
        name = name.removesuffix(".")
    if not (_NAME.fullmatch(name) or is_address(name)):
        try:  # as browsers map it (UTS 46, non-transitional: straße -> xn--strae-oqa)
            import idna  # starlette's dependency (anyio's)
            ascii_name = idna.encode(name, uts46=True, transitional=False).decode("ascii")
        except (ImportError, UnicodeError, ValueError):
            ascii_name = None
        hint = (f" (a browser sends {ascii_name}: give that)"
                if ascii_name and ascii_name != name and _NAME.fullmatch(ascii_name) else "")
        raise ValueError(f"--allow-host must be a host name such as box.lan, got "
                         f"{shown(given)}{hint}")
    return name


def machine_names() -> set[str]:
    """This machine's host name (``socket.gethostname()``, lower case) and its first label,
    each with and without ``.local`` (mDNS): ``Box.lan`` -> box.lan, box.lan.local, box,
    box.local."""
    name = socket.gethostname().strip().lower().rstrip(".").removesuffix(".local")
    names = {name, name.split(".")[0]} - {""}
    return names | {f"{n}.local" for n in names}


def host_names_for(address: str, bound: str | None = None,
                   allowed: tuple[str, ...] = ()) -> frozenset[str]:
    """The ``Host`` names a server listening on ``address`` answers to, and ``allowed`` (names
    as :func:`allowed_name` gives them): for a loopback address, the loopback names,
    ``address`` as given and the address it is bound to (``localhost``, ``127.0.0.2``,
    ``127.1``, a host name that resolves to 127.0.1.1); for a network address (``0.0.0.0``, a
    LAN address), :class:`NetworkNames`: any IP address, ``localhost``, ``address`` if it is a
    name, and :func:`machine_names`.  ``bound``: the socket's own address
    (``getsockname()[0]``), which decides; without it ``address`` must be ``localhost`` or a
    loopback address as ``ipaddress`` writes one."""
    name = host_name(address)
    try:
        loopback = ipaddress.ip_address(bound or name).is_loopback
    except ValueError:  # a host name, and no bound address to look at
        loopback = name == "localhost"
    if loopback:
        return LOOPBACK_NAMES | {name, *([bound] if bound else []), *allowed}
    names = {"localhost", name, *machine_names(), *allowed}
    return NetworkNames(n for n in names if not is_address(n))


def refusal(method: str, headers: Headers,
            host_names: frozenset[str] | None) -> tuple[int, str] | None:
    """``(status, message)`` if the request must be refused (see the module's docstring);
    ``host_names``: the names a ``Host`` header may give, ``None`` for any."""
    host = headers.get("host", "")
    if host_names is not None and host_name(host) not in host_names:
        names = ", ".join(f"[{n}]" if ":" in n else n for n in sorted(host_names))
        if isinstance(host_names, NetworkNames):
            names = f"an IP address, {names}"
        return 400, (f"this server answers only at {names}, not at {shown(host)} (to open it "
                     "at another name, start it with --allow-host NAME)")
    origin = headers.get("origin")
    if method not in _SAFE_METHODS and origin is not None and \
            urlsplit(origin.strip()).netloc.lower() != host.strip().lower():
        return 403, (f"refused: a request from another site ({shown(origin)}); open the page "
                     "from this server itself")
    return None


class SameSiteOnly:
    """ASGI middleware: :func:`refusal` for every HTTP request, as a JSON ``{"error"}``."""

    def __init__(self, app, host_names: frozenset[str] | None = None):
        self.app, self.host_names = app, host_names

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            refused = refusal(scope["method"], Headers(scope=scope), self.host_names)
            if refused is not None:
                status, message = refused
                await JSONResponse({"error": message}, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ProtectiveHeaders:
    """ASGI middleware: :data:`PROTECTIVE_HEADERS` on every HTTP answer (a header the answer
    sets itself is left as it is)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_protected(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in PROTECTIVE_HEADERS:
                    headers.setdefault(name, value)
            await send(message)
        await self.app(scope, receive, send_protected)


__all__ = ["LOOPBACK_NAMES", "NetworkNames", "PROTECTIVE_HEADERS", "ProtectiveHeaders",
           "SameSiteOnly", "allowed_name", "host_name", "host_names_for", "is_address",
           "machine_names", "refusal"]
