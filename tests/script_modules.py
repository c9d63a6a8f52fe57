"""The repository's scripts (``benchmarks/``, ``examples/``) loaded as modules, for the tests
that call their functions: one loader, not one per test file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_module(path: Path, name: str, register: bool = False):
    """The Python file at ``path`` as a module named ``name``; ``register`` puts it in
    ``sys.modules`` before running it (a module that pickles its own classes by reference)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def benchmark(name: str):
    """``benchmarks/<name>.py`` as the module ``bench_<name>``."""
    return load_module(ROOT / "benchmarks" / f"{name}.py", f"bench_{name}")


def example(name: str, register: bool = False):
    """``examples/<name>.py`` as the module ``<name>``."""
    return load_module(ROOT / "examples" / f"{name}.py", name, register)
