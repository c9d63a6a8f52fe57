"""``examples/rllib_ppo.py`` as a module, loaded once per process, for the RLlib tests (they run
in ``.venv-rllib``: test_rllib.py, test_rllib_example.py)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rllib_ppo.py"


@functools.cache
def load_example():
    spec = importlib.util.spec_from_file_location("rllib_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rllib_ppo"] = module  # before exec: the module registers itself to pickle by value
    spec.loader.exec_module(module)
    return module
