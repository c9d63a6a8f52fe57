"""Requests that another web site makes the user's browser send are refused.

Any page the user visits can make their browser ``POST`` to ``http://127.0.0.1:8000`` (a form,
or a ``fetch`` in ``no-cors`` mode) without the server being asked first.  Such a page cannot
read the answers, but it could start games until the open-games cap refuses the user's own.  A
site whose name is made to resolve to 127.0.0.1 (DNS rebinding) could read the answers as well.
So, in front of every route:

* a request that may change something (any method but GET and HEAD) whose ``Origin`` header
  names another site than the ``Host`` it was sent to is refused with 403.  Browsers send
  ``Origin`` with every such request; other clients (curl, a script) send none and are not
  affected;
* when the server listens on a loopback address only (``sevenrocks serve`` without ``--host``,
  any ``127.x.x.x``, or a name resolving to one: the socket's bound address decides), a request
  whose ``Host`` is not a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``, ``--host`` as
  given, or the bound address) is refused with 400: a rebinding site's name is not one.  A
  server on a network address (``--host 0.0.0.0``) answers to any name.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from ..checks import shown

#: Names a loopback-only server answers to.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_SAFE_METHODS = frozenset({"GET", "HEAD"})


def host_name(host: str) -> str:
    """The name in a ``Host`` header, lower case, without the port (``[::1]:8000`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_names_for(address: str, bound: str | None = None) -> frozenset[str] | None:
    """The ``Host`` names a server listening on ``address`` answers to: for a loopback address,
    the loopback names, ``address`` as given and the address it is bound to (``localhost``,
    ``127.0.0.2``, ``127.1``, a host name that resolves to 127.0.1.1); ``None``, any name, for
    a network address (``0.0.0.0``, a LAN address), reached by names we cannot know.
    ``bound``: the socket's own address (``getsockname()[0]``), which decides; without it
    ``address`` must be ``localhost`` or a loopback address as ``ipaddress`` writes one."""
    name = host_name(address)
    try:
        loopback = ipaddress.ip_address(bound or name).is_loopback
    except ValueError:  # a host name, and no bound address to look at
        loopback = name == "localhost"
    return LOOPBACK_NAMES | {name, *([bound] if bound else [])} if loopback else None


def refusal(method: str, headers: Headers,
            host_names: frozenset[str] | None) -> tuple[int, str] | None:
    """``(status, message)`` if the request must be refused (see the module's docstring);
    ``host_names``: the names a ``Host`` header may give, ``None`` for any."""
    host = headers.get("host", "")
    if host_names is not None and host_name(host) not in host_names:
        names = ", ".join(f"[{n}]" if ":" in n else n for n in sorted(host_names))
        return 400, f"this server answers only at {names}, not at {shown(host)}"
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


__all__ = ["LOOPBACK_NAMES", "SameSiteOnly", "host_name", "host_names_for", "refusal"]
