"""Where: elementwise select ``x`` where ``condition`` else ``y``, with broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.registry import op


@op("Where", since=9)
def where_9(condition, x, y):
    try:
        return np.where(condition, x, y)
    except ValueError:
        raise broadcast_error("Where", condition, x, y) from None
