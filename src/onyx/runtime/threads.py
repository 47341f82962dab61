"""Thread control: how many threads BLAS (and onyx's own parallel kernels) may use."""

from __future__ import annotations

import ctypes
import os
from functools import lru_cache


def physical_cores() -> int:
    """A best guess at the number of physical cores (the default thread count)."""
    try:
        with open("/proc/cpuinfo") as fh:
            pairs = set()
            phys = core = None
            for line in fh:
                if line.startswith("physical id"):
                    phys = line.split(":")[1].strip()
                elif line.startswith("core id"):
                    core = line.split(":")[1].strip()
                elif not line.strip():
                    if core is not None:
                        pairs.add((phys, core))
                    phys = core = None
            if pairs:
                return len(pairs)
    except OSError:
        pass
    return os.cpu_count() or 1


def _openblas_libs() -> list[ctypes.CDLL]:
    """The OpenBLAS libraries loaded in this process (numpy's first; scipy may bring another)."""
    import numpy as np

    try:
        with open("/proc/self/maps") as fh:
            paths = []
            for line in fh:
                path = line.split()[-1]
                if "openblas" in path.lower() and path.startswith("/") and path not in paths:
                    paths.append(path)
    except OSError:
        return []
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    paths.sort(key=lambda p: (0 if p.startswith(numpy_dir) and "numpy" in p else 1, p))
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


_SET = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GET = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def _functions(names: tuple[str, ...]) -> list:
    out = []
    for lib in _openblas_libs():
        fn = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
        if fn is not None:
            out.append(fn)
    return out


@lru_cache(maxsize=1)
def _setters() -> tuple:
    return tuple(_functions(_SET))


@lru_cache(maxsize=1)
def _getters() -> tuple:
    return tuple(_functions(_GET))


def set_blas_threads(n: int) -> bool:
    """Set the thread count of every loaded OpenBLAS (numpy's and scipy's); False if none offers it."""
    setters = _setters()
    for fn in setters:
        fn(int(max(1, n)))
    return bool(setters)


def get_blas_threads() -> int | None:
    """numpy's OpenBLAS thread count, or None where it cannot be read."""
    getters = _getters()
    return int(getters[0]()) if getters else None
