"""runtime/allocator.py: the glibc tuning is idempotent and harmless where it does not apply."""

import sys

import numpy as np

from onyx.runtime.allocator import keep_freed_memory


def test_keep_freed_memory_idempotent():
    first = keep_freed_memory()
    assert isinstance(first, bool)
    assert keep_freed_memory() is first
    if sys.platform.startswith("linux") and first:
        a = np.ones(8 << 20, np.float32)  # big blocks still allocate, fill and free normally
        assert float(a.sum()) == 8 << 20
        del a
