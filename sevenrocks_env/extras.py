"""The optional packages: what a feature that needs one says when it is missing."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def needs_torch(what: str):
    """Imports inside the ``with`` that need PyTorch: a missing ``torch`` is an ``ImportError``
    saying ``what`` needs it and which extra to install (not a bare ``No module named
    'torch'``); any other missing module is raised as it is."""
    try:
        yield
    except ModuleNotFoundError as missing:
        if missing.name != "torch":
            raise
        raise ImportError(f"{what} needs PyTorch (torch is missing): "
                          "pip install -e \".[train]\"") from missing


__all__ = ["needs_torch"]
