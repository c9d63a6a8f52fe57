"""Seven Rocks in OpenSpiel: the game registered with pyspiel, and pyspiel bots as agents.

Needs the optional ``open-spiel`` package (``pip install -e ".[openspiel]"``)::

    import pyspiel
    import sevenrocks_env.openspiel  # registers "python_sevenrocks"
    game = pyspiel.load_game("python_sevenrocks", {"rounds": 1})

:mod:`.game` is the game (it wraps :class:`sevenrocks_env.rules.Match`: no second copy of any
rule), :mod:`.observer` what a player knows of it, :mod:`.hidden` the hands a player does not
see, dealt again (``resample_from_infostate``) or given (:func:`state_from_view`); :mod:`.bots`
wraps OpenSpiel's IS-MCTS and MCTS bots as agents with the project's ``act(observation,
action_mask)`` interface (agent specs ``openspiel:ismcts:sims=N``, ``openspiel:mcts``);
:mod:`.agent_bot` is the reverse, the project's agents as OpenSpiel bots (``agent_bot(game,
player, "ckpt:shipped")``, a ``pyspiel.Bot``).  See ``docs/openspiel.md``.
"""

import importlib

from ..extras import needs_package

with needs_package("pyspiel", "sevenrocks_env.openspiel", "OpenSpiel", "openspiel",
                   " (the open-spiel package)"):  # the optional package: which extra
    importlib.import_module("pyspiel")

from .game import GAME_NAME, SevenRocksGame, SevenRocksState  # noqa: E402
from .hidden import state_from_view

__all__ = ["GAME_NAME", "SevenRocksGame", "SevenRocksState", "state_from_view"]
