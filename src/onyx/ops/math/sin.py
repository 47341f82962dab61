"""Sin: elementwise sine."""

import numpy as np

from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("Sin", since=7)
def sin_7(x):
    return np.sin(x, out=...)


shape_rule("Sin")(same_shape_rule)
