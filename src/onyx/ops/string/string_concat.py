"""StringConcat: elementwise concatenation of two string tensors, with numpy broadcasting."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.string._common import as_strings


@op("StringConcat", since=20)
def string_concat(X, Y):
    x = as_strings(X, "StringConcat")
    y = as_strings(Y, "StringConcat")
    try:
        out = np.add(x, y, dtype=object)
    except ValueError:
        raise InvalidArgument(
            f"StringConcat: shapes {x.shape} and {y.shape} do not broadcast together"
        ) from None
    return np.asarray(out, dtype=object)
