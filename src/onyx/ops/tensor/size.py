"""Size: the number of elements of the input, as an int64 scalar."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op


@op("Size", since=1)
def size_1(data):
    return np.array(np.size(data), dtype=np.int64)
