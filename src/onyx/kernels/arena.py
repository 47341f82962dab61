"""A per-session CPU memory arena for numpy's array data, like onnxruntime's ``enable_cpu_mem_arena``.

A session allocates and frees the same large intermediates on every run; served by glibc they come
from fresh mmap()s each time, and every page written pays a fault. An ``Arena`` keeps freed blocks of
256 KiB and more for the next run (up to ``limit_bytes``), and applies only inside
``with arena.installed():`` in the current thread/context: the process's allocator and numpy's
default handler stay as they were (numpy's NEP 49 data memory handler, in ``_arena.c``). Arrays
allocated inside keep working after the scope and give their memory back to the arena when freed.

Where the compiled module was not built (or ``ONYX_NO_PERF=1``), ``Arena`` does nothing, with the
same API: arrays then come from numpy's default allocator.
"""

from __future__ import annotations

import weakref
from types import ModuleType, TracebackType

from onyx.kernels._loader import compiled

#: The cache bound when none is given (onnxruntime's arena grows without one; this keeps it finite).
DEFAULT_LIMIT = 1 << 30
#: The name numpy reports for arrays allocated inside an arena (``get_handler_name``).
HANDLER_NAME = "onyx_arena"

_EMPTY_STATS = {
    "cached_bytes": 0, "cached_blocks": 0, "limit": 0, "hits": 0, "misses": 0, "evictions": 0,
    "max_request": 0, "refused": 0,
}


class _Installed:
    """The scope of one ``installed()``: sets the handler on entry, puts the previous one back on exit."""

    __slots__ = ("_module", "_handler", "_previous")

    def __init__(self, module: ModuleType | None, handler: object) -> None:
        self._module = module
        self._handler = handler
        self._previous: object = None

    def __enter__(self) -> None:
        if self._module is not None:
            self._previous = self._module.install(self._handler)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._module is not None:
            previous, self._previous = self._previous, None
            self._module.restore(previous)


class Arena:
    """One cache of freed array memory (one per session), bounded by ``limit_bytes``."""

    def __init__(
        self, limit_bytes: int = DEFAULT_LIMIT, name: str = HANDLER_NAME, enabled: bool = True
    ) -> None:
        if limit_bytes < 0:
            raise ValueError(f"an arena's limit must be >= 0 bytes, got {limit_bytes}")
        # disabled (SessionOptions.enable_cpu_mem_arena = False) it is the no-op one
        self._module = compiled("_arena") if enabled else None
        self._handler = self._module.new(int(limit_bytes), name) if self._module is not None else None
        if self._module is not None:
            # the cache goes when the arena does; the handler itself lives on while arrays it
            # allocated do (numpy holds a reference), freeing their blocks to the system after this
            weakref.finalize(self, _close, self._module, self._handler)

    @property
    def active(self) -> bool:
        """Whether this arena really caches (the compiled module is there)."""
        return self._module is not None

    def installed(self) -> _Installed:
        """A context manager: numpy arrays allocated inside (this thread/context) use this arena."""
        return _Installed(self._module, self._handler)

    def hooks(self) -> tuple | None:
        """:meth:`installed` taken apart for a hot path (a session's run): ``(install, restore, handler)``
        where ``previous = install(handler)`` installs the arena for this thread/context and
        ``restore(previous)`` puts numpy's handler back; None for the no-op arena."""
        if self._module is None:
            return None
        return self._module.install, self._module.restore, self._handler

    def used(self) -> bool:
        """Whether the arena has been asked for a block big enough to cache (256 KiB and more)."""
        st = self.stats()
        return st["hits"] + st["misses"] > 0

    def bound_requests(self, max_bytes: int) -> None:
        """Refuse single allocations larger than ``max_bytes`` inside this arena (0: no bound): numpy
        then raises MemoryError at once, where the system would promise the memory and the process be
        killed when it is touched. A no-op where the compiled module is missing."""
        if max_bytes < 0:
            raise ValueError(f"a request bound must be >= 0 bytes, got {max_bytes}")
        if self._module is not None:
            self._module.set_max_request(self._handler, int(max_bytes))

    def stats(self) -> dict[str, int]:
        """The cache's state: cached_bytes, cached_blocks, limit, hits, misses, evictions, and the
        request bound (max_request) with the number of requests it refused."""
        if self._module is None:
            return dict(_EMPTY_STATS)
        return self._module.stats(self._handler)

    def release(self) -> None:
        """Give every cached block back to the system (the arena stays usable)."""
        if self._module is not None:
            self._module.release(self._handler)

    def close(self) -> None:
        """Empty the cache and keep nothing more: blocks freed later go straight to the system."""
        if self._module is not None:
            _close(self._module, self._handler)


def _close(module: ModuleType, handler: object) -> None:
    module.set_limit(handler, 0)
