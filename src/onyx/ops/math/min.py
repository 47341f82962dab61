"""Min: elementwise minimum of one or more tensors, with numpy-style broadcasting (opset 8 on; the
equal-shape opsets 1-6 are served by the same rule)."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import broadcast_error
from onyx.ops.registry import op


def min_n(xs):
    if len(xs) == 2:
        a, b = xs
        try:
            return np.minimum(a, b, out=...)
        except ValueError:
            raise broadcast_error("Min", a, b) from None
    if not xs:
        raise InvalidArgument("Min: needs at least one input")
    if len(xs) == 1:
        return xs[0].copy()
    try:
        out = np.minimum(xs[0], xs[1], out=...)
        for x in xs[2:]:
            if np.broadcast_shapes(out.shape, x.shape) == out.shape:
                np.minimum(out, x, out=out)
            else:
                out = np.minimum(out, x)
        return out
    except ValueError:
        raise broadcast_error("Min", *xs) from None


@op("Min", since=1, until=6)
def min_1(*data_0, consumed_inputs=None):
    return min_n(data_0)


@op("Min", since=6)
def min_6(*data_0):
    return min_n(data_0)
