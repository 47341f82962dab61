"""Arrays derived once from a session's weights (a dtype conversion, a transposed copy ...)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable

import numpy as np

_CACHE: dict[tuple[int, Hashable], tuple] = {}
#: arrays smaller than this are derived afresh each time (cheaper than the bookkeeping)
MIN_SIZE = 4096


def derived(w: np.ndarray, tag: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()``, cached per read-only source array ``w`` (a session's frozen weights) and ``tag``.

    The cache holds a weak reference to ``w`` and drops the entry when it dies, so a reused id()
    never returns a stale result; writeable (or small) arrays are derived afresh every call. The
    result is frozen (read-only): callers must not write into it.
    """
    if w.flags.writeable or w.size < MIN_SIZE:
        return make()
    key = (id(w), tag)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is w:
        return hit[1]
    out = make()
    out.flags.writeable = False
    try:
        ref = weakref.ref(w, lambda _r, k=key: _CACHE.pop(k, None))
    except TypeError:
        return out
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (ref, out)
    return out
