"""Round: elementwise rounding, halves to even."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Round", since=11)
def round_11(x):
    return np.rint(x, out=...)


shape_rule("Round")(same_shape_rule)
