"""Play Seven Rocks against the bots in a web page: ``sevenrocks serve`` (see ``docs/web.md``).

:mod:`.games` keeps the matches (the engine is the only authority), :mod:`.moves` says why a
move is refused, :mod:`.views` builds what the page may see, :mod:`.api` is the Starlette app and
:mod:`.server` the command line.  ``static/`` holds the page: plain JavaScript, SVG and CSS, no
build step and nothing fetched from elsewhere.
"""

from .server import main

__all__ = ["main"]
