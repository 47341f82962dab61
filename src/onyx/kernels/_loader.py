"""Finds the compiled kernel modules (``onyx.kernels._*``, built from C at install time).

A module that was not built (no compiler at install, ``ONYX_NO_COMPILE=1``), fails to import, or is
switched off by ``ONYX_NO_PERF=1`` is None here, and its callers run the numpy path.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from onyx import config


@cache
def _imported(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"onyx.kernels.{name}")
    except ImportError:
        return None


def compiled(name: str) -> ModuleType | None:
    """The compiled module ``onyx.kernels.<name>`` (e.g. ``"_conv"``), or None for the numpy path."""
    if config.switches().no_perf:
        return None
    return _imported(name)


def built(name: str) -> bool:
    """Whether the compiled module ``name`` was built and imports, switches aside."""
    return _imported(name) is not None
