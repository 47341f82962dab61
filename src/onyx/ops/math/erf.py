"""Erf: elementwise error function (own vectorised approximation, see ``_erf``)."""

import numpy as np

from onyx.ops.math._erf import erf
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Erf", since=9)
def erf_9(x):
    if x.dtype.kind in "iu":  # opset 9 also listed integer types
        return erf(x.astype(np.float64)).astype(x.dtype)
    return erf(x)


shape_rule("Erf")(same_shape_rule)
