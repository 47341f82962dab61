"""Sigmoid: elementwise logistic function 1 / (1 + exp(-x))."""

from onyx.ops.activation._common import float_kernel, sigmoid
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule

_sigmoid = float_kernel(sigmoid)


@op("Sigmoid", since=1, until=6)
def sigmoid_1(x, *, consumed_inputs=None):
    return _sigmoid(x)


@op("Sigmoid", since=6)
def sigmoid_6(x):
    return _sigmoid(x)


shape_rule("Sigmoid")(same_shape_rule)
