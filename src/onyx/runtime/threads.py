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


@lru_cache(maxsize=1)
def _openblas_setter():
    """Find openblas_set_num_threads in the BLAS library numpy loaded, if any."""
    try:
        import numpy as np  # noqa: F401
    except ImportError:  # pragma: no cover
        return None
    names = (
        "scipy_openblas_set_num_threads64_",
        "scipy_openblas_set_num_threads",
        "openblas_set_num_threads64_",
        "openblas_set_num_threads",
    )
    try:
        with open("/proc/self/maps") as fh:
            libs = {line.split()[-1] for line in fh if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:
        libs = set()
    for lib in libs:
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for n in names:
            fn = getattr(handle, n, None)
            if fn is not None:
                return fn
    return None


def set_blas_threads(n: int) -> bool:
    """Set BLAS's thread count; returns False where the BLAS library offers no control."""
    fn = _openblas_setter()
    if fn is None:
        return False
    fn(int(max(1, n)))
    return True
