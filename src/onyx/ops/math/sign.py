"""Sign: elementwise sign: -1, 0 or 1 (NaN stays NaN)."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Sign", since=9)
def sign_9(x):
    return np.sign(x, out=...)


shape_rule("Sign")(same_shape_rule)
