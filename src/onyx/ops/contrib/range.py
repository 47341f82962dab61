"""com.microsoft Range: onnxruntime's contrib Range (before ONNX's Range-11): ``delta`` is optional (1)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor.range import _range, _range_shape


@op("Range", domain="com.microsoft", since=1)
def range_(start, limit, delta=None):
    if delta is None:
        delta = np.ones((), dtype=np.asarray(start).dtype)
    return _range(np.asarray(start).reshape(()), np.asarray(limit).reshape(()), np.asarray(delta).reshape(()))


shape_rule("Range", domain="com.microsoft")(_range_shape)
