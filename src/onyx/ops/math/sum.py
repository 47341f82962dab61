"""Sum: elementwise sum of one or more tensors, with numpy-style broadcasting (opset 8 on; the
equal-shape opsets 1-6 are served by the same rule)."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import broadcast_error
from onyx.ops.registry import op


def sum_n(xs):
    if len(xs) == 2:
        a, b = xs
        try:
            return np.add(a, b, out=...)
        except ValueError:
            raise broadcast_error("Sum", a, b) from None
    if not xs:
        raise InvalidArgument("Sum: needs at least one input")
    if len(xs) == 1:
        return xs[0].copy()
    try:
        out = np.add(xs[0], xs[1], out=...)
        for x in xs[2:]:
            if np.broadcast_shapes(out.shape, x.shape) == out.shape:
                np.add(out, x, out=out)
            else:
                out = np.add(out, x)
        return out
    except ValueError:
        raise broadcast_error("Sum", *xs) from None


@op("Sum", since=1, until=6)
def sum_1(*data_0, consumed_inputs=None):
    return sum_n(data_0)


@op("Sum", since=6)
def sum_6(*data_0):
    return sum_n(data_0)
