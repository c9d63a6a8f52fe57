"""``sevenrocks_env.rllib_env`` without Ray: one clear ImportError naming the extra (runs in the
main venv, which has no Ray; the env itself is tested in ``tests/test_rllib.py``)."""

import importlib
import sys

import pytest


def test_importing_the_rllib_env_without_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.rllib.env.multi_agent_env", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "sevenrocks_env.rllib_env", raising=False)
    with pytest.raises(ImportError, match=r"needs Ray RLlib .*\[rllib\]"):
        importlib.import_module("sevenrocks_env.rllib_env")

