"""Erf: elementwise error function (onyx's own vectorised approximation: onyx.kernels.activation)."""

import numpy as np

from onyx.kernels import activation
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Erf", since=9)
def erf_9(x, *, _ctx=None):
    threads = _ctx.intra_op_num_threads if _ctx is not None else 0
    if x.dtype.kind in "iu":  # opset 9 also listed integer types
        return activation.erf(x.astype(np.float64), threads=threads).astype(x.dtype)
    return activation.erf(x, threads=threads)


shape_rule("Erf")(same_shape_rule)
