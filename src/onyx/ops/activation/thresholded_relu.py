"""ThresholdedRelu: x where x > alpha, else 0."""

from onyx.ops.registry import op


@op("ThresholdedRelu", since=10)
def thresholded_relu_10(x, *, alpha=1.0):
    y = x.copy()
    y[~(x > alpha)] = 0
    return y
