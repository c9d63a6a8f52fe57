"""The optional packages: what a feature that needs one says when it is missing."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def needs_package(module: str, what: str, package: str, extra: str, note: str = ""):
    """Imports inside the ``with`` that need the optional ``module``: its absence is an
    ``ImportError`` saying ``what`` needs ``package`` and which extra to install (not a bare
    ``No module named 'torch'``); any other missing module is raised as it is."""
    try:
        yield
    except ModuleNotFoundError as missing:
        if missing.name != module:
            raise
        raise ImportError(f"{what} needs {package} ({module} is missing): "
                          f"pip install -e \".[{extra}]\"{note}") from missing


def needs_torch(what: str):
    """:func:`needs_package` for PyTorch (the ``[train]`` extra)."""
    return needs_package("torch", what, "PyTorch", "train")


__all__ = ["needs_package", "needs_torch"]
