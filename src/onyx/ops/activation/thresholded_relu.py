"""ThresholdedRelu: x where x > alpha, else 0."""

import numpy as np

from onyx.ops.activation._common import keep_where
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


@op("ThresholdedRelu", since=10)
def thresholded_relu_10(x, *, alpha=1.0):
    return keep_where(x, np.greater(x, alpha, out=...))


shape_rule("ThresholdedRelu")(same_shape_rule)
