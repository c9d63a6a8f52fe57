"""``sevenrocks serve``: start the web page on a local address and print it.

    sevenrocks serve                     # http://127.0.0.1:8000/, this computer only
    sevenrocks serve --host 0.0.0.0      # anyone on the network can open it and play
    sevenrocks serve --host 0.0.0.0 --allow-host games.lan   # ... also at http://games.lan:8000/

A connection that does not send a whole request head within a few seconds is closed, and at
most a few hundred are served at once (:mod:`.connections`).
"""

from __future__ import annotations

import argparse
import socket
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sevenrocks serve",
                                     description="Play Seven Rocks against the bots in a browser.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this computer only; "
                             "0.0.0.0 means anyone on the network can open the page and play)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--max-games", type=int, default=64,
                        help="open games and replays at most (default 64); when full, a new "
                             "one takes the place of the finished game or replay touched "
                             "longest ago")
    parser.add_argument("--idle-minutes", type=float, default=30.0,
                        help="a game or replay without a request for this long is dropped (default 30)")
    parser.add_argument("--agent", action="append", default=[], metavar="SPEC",
                        help="offer one more agent spec on the start panel, e.g. "
                             "ckpt:checkpoints/RUN/latest.pt or search:samples=128 (repeatable)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="one more host name the page may be opened at, e.g. games.lan "
                             "(repeatable); by default only this computer's own names and IP "
                             "addresses: other names are refused (DNS rebinding)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the server until interrupted; 2 for bad arguments or a missing ``[web]`` extra."""
    try:
        args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    # not (0 < idle <= a week) also refuses nan, which compares false with everything
    for bad, rule, value in ((not 0 < args.port < 65536, "--port must be 1-65535", args.port),
                             (args.max_games < 1, "--max-games must be positive", args.max_games),
                             (not 0 < args.idle_minutes <= 7 * 24 * 60,
                              "--idle-minutes must be in (0, 10080]", f"{args.idle_minutes:g}")):
        if bad:  # the option that is wrong, not all three (--max-games 0 said "--port must be")
            print(f"error: {rule}, got {value}", file=sys.stderr)
            return 2
    try:
        import uvicorn

        from ..agents import make_agent
        from .api import create_app
        from .connections import HeadDeadline, connection_limit, raise_open_files_limit
        from .games import GameStore
        from .origin import NetworkNames, allowed_name, host_names_for
    except ImportError as problem:
        print(f"error: the web page needs the [web] extra (pip install -e '.[web]'): {problem}",
              file=sys.stderr)
        return 2
    try:
        allowed = tuple(allowed_name(name) for name in args.allow_host)
    except ValueError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    for spec in args.agent:
        try:
            make_agent(spec)
        except ValueError as problem:
            print(f"error: --agent {spec}: {problem}", file=sys.stderr)
            return 2
    try:  # bound before the address is printed: a busy port is one line and exit 2
        listening = listening_socket(args.host, args.port)
    except OSError as problem:
        print(f"error: cannot listen on {args.host} port {args.port}: "
              f"{problem.strerror or problem}", file=sys.stderr)
        return 2
    store = GameStore(max_games=args.max_games, idle_seconds=60 * args.idle_minutes,
                      extra_agents=tuple(args.agent))
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Seven Rocks: open http://{shown}:{args.port}/ in a browser (Ctrl-C stops)", flush=True)
    host_names = host_names_for(args.host, listening.getsockname()[0], allowed)
    if isinstance(host_names, NetworkNames):
        print(f"note: listening on {args.host}: anyone on the network can open the page and play"
              f", at an IP address of this computer or at {', '.join(sorted(host_names))} "
              "(--allow-host NAME for another name)", flush=True)
    # lifespan "off": no start-up work (a Ctrl-C sent twice at once made "on" log a 30-line
    # traceback); log_config None: uvicorn's own config (logging.config.dictConfig) closes every
    # logging handler of the process, a caller's log file's too -- its warnings reach stderr
    # through logging's last-resort handler instead.  HeadDeadline, limit_concurrency: a client
    # holding many connections open cannot use up the process's files (connections.py)
    config = uvicorn.Config(create_app(store, host_names=host_names), log_level="warning",
                            lifespan="off", log_config=None, http=HeadDeadline,
                            limit_concurrency=connection_limit(raise_open_files_limit()))
    with listening:
        try:
            uvicorn.Server(config).run(sockets=[listening])
        except KeyboardInterrupt:  # uvicorn raises Ctrl-C again once it has shut down
            pass
    return 0


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (as uvicorn binds one: ``SO_REUSEADDR``, IPv6
    for an address with ``:``); ``OSError`` if the port is taken or the host is not local."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
    except OSError:
        listening.close()
        raise
    return listening


__all__ = ["listening_socket", "main"]
