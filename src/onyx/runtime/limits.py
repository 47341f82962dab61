"""Resource bounds of a session: how large one tensor may be before its node fails with onyx's error.

On Linux the system promises memory it does not have (overcommit) and kills the process when the pages
are touched, so a model asking for a terabyte (ConstantOfShape, Expand, Tile, Range, Resize to absurd
sizes, or a broadcast of two long vectors) must be refused at the request, not left to the OOM killer.
"""

from __future__ import annotations

import os

from onyx.errors import InvalidArgument

#: Session config entry (onyx's own key): the largest single tensor a run may allocate, in bytes; 0
#: turns the bound off.
MAX_TENSOR_BYTES_KEY = "session.max_tensor_bytes"


def physical_memory() -> int | None:
    """The machine's memory in bytes, where the system says (None elsewhere)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_max_tensor_bytes() -> int:
    """Half the machine's memory: no useful tensor is larger, and a run asking for more is a bomb."""
    memory = physical_memory()
    return memory // 2 if memory else 0


def max_tensor_bytes(options) -> int:
    """The bound a session applies: its config entry, or :func:`default_max_tensor_bytes`."""
    config = getattr(options, "_config", {})
    raw = config.get(MAX_TENSOR_BYTES_KEY)
    if raw is None:
        return default_max_tensor_bytes()
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgument(
            f"{MAX_TENSOR_BYTES_KEY} must be a whole number of bytes, got {raw!r}"
        ) from None
    if value < 0:
        raise InvalidArgument(f"{MAX_TENSOR_BYTES_KEY} must be >= 0 (0: no bound), got {value}")
    return value


#: The largest single array a fold may allocate: constant folding and shape inference run kernels on
#: constants while a model loads, outside any session's bound; a fold that needs more is not done (the
#: node then runs at run time, under the session's own bound). Resize by 1e6 or Range to 2**31 of a
#: few small constants must not allocate gigabytes before the session even exists.
FOLD_MAX_BYTES = 64 << 20

_fold_arena: list = []


def bounded_folding():
    """A context manager: numpy arrays allocated inside (this thread) may not exceed
    :data:`FOLD_MAX_BYTES` each (numpy raises MemoryError, the fold is skipped). Without the compiled
    arena (``ONYX_NO_PERF=1``) it bounds nothing: the folds' own size estimates remain."""
    if not _fold_arena:
        from onyx.kernels.arena import Arena

        arena = Arena(0, name="onyx_fold")  # caches nothing: only the bound matters
        arena.bound_requests(FOLD_MAX_BYTES)
        _fold_arena.append(arena)
    return _fold_arena[0].installed()
