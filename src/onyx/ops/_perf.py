"""The optional ``perf`` extra: numba-compiled loops, loaded on first use.

Every compiled loop has a numpy twin in the kernel that calls it, and the two give the same results
(tests/perf compares them). Set ONYX_NO_PERF=1 to run the numpy paths even where numba is installed.
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache
from types import ModuleType

_FLAG = "ONYX_NO_PERF"
# os.environ.get encodes the key on every call (~5 us; kernels ask on every run, a CNN ~50-100 times);
# CPython's os.environ keeps its entries in ``_data`` under encoded keys, kept in step by every write
# through os.environ (monkeypatch.setenv included), so a lookup there sees the same value
_ENV = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey(_FLAG) if _ENV is not None and hasattr(os.environ, "encodekey") else None


def perf_disabled() -> bool:
    """True when ONYX_NO_PERF is set (to anything but "" or "0")."""
    if _ENV_KEY is None:
        return os.environ.get(_FLAG, "") not in ("", "0")
    raw = _ENV.get(_ENV_KEY)
    return raw is not None and os.environ.decodevalue(raw) not in ("", "0")


@cache
def _load(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def jit_module(name: str, *, if_loaded: bool = False) -> ModuleType | None:
    """The numba-compiled module ``name`` (for example ``onyx.ops.nn._jit``), or None: numba is not
    installed or ONYX_NO_PERF is set. Imported on the first call, so that only the sessions whose
    kernels use it pay numba's import time.

    ``if_loaded``: None unless numba is already loaded in this process. For loops that save little
    next to their numpy twin: numba and its compiler cost ~130 MB of memory and a fraction of a
    second when first loaded, worth paying for a kernel that is several times faster (depthwise
    convolution, tree ensembles), not for one that saves a few percent of a model's run."""
    if perf_disabled() or (if_loaded and "numba" not in sys.modules):
        return None
    return _load(name)
