"""onyx's environment switches, read in one place.

Read once when first asked and again by :func:`reload` (a session reads them when it is created, so a
switch set before a session applies to that session's plan). Nothing else in onyx reads
``os.environ`` for its own switches.

``ONYX_NO_PERF=1``       the numpy path for every kernel, numpy's BLAS for every product
``ONYX_BLAS=openblas``   numpy's BLAS even where the ``perf`` extra installed MKL
``ONYX_MALLOPT=1``       let onyx tune glibc's allocator for large buffers (off unless asked)
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def _on(name: str) -> bool:
    return os.environ.get(name, "").strip() not in ("", "0")


@dataclass(frozen=True)
class Switches:
    """The switches in force."""

    no_perf: bool
    blas: str
    mallopt: bool


_current: list[Switches] = []


def reload() -> Switches:
    """Read the switches from the environment again and return them."""
    switches = Switches(
        no_perf=_on("ONYX_NO_PERF"),
        blas=os.environ.get("ONYX_BLAS", "").strip().lower(),
        mallopt=_on("ONYX_MALLOPT"),
    )
    _current[:] = [switches]
    return switches


def switches() -> Switches:
    """The switches in force (read on first use)."""
    return _current[0] if _current else reload()
