"""Optimization levels: each is an ordered list of passes run to a fixed point."""

from __future__ import annotations

from collections.abc import Callable

from onyx.ir.model import Model

Pass = Callable[[Model], bool]

# level -> passes. Empty until the optimizer issue lands: optimize() is then the identity.
LEVELS: dict[int, list[Pass]] = {0: [], 1: [], 2: [], 3: [], 99: []}


def passes_for(level: int) -> list[Pass]:
    """The passes of a level (levels are cumulative)."""
    out: list[Pass] = []
    for lvl in sorted(LEVELS):
        if lvl <= level:
            out.extend(LEVELS[lvl])
    return out


def optimize(model: Model, level: int = 99, max_iterations: int = 10) -> Model:
    """Run the passes of ``level`` on ``model`` (in place) until none changes it; return the model."""
    passes = passes_for(int(level))
    for _ in range(max_iterations):
        changed = False
        for p in passes:
            changed |= bool(p(model))
        if not changed:
            break
    return model
