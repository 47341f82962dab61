"""Decompositions of activations newer than the target opset: Gelu (20), HardSwish (14), Mish (18),
Celu (12), written with older elementwise operators (the formulas of their spec pages)."""

from __future__ import annotations

import math

import numpy as np

from onyx.ir.model import Node
from onyx.version_converter._core import WRITTEN_AT, Converter, Emitter, Replacement, adapter


def _gelu_down(node: Node, cx: Converter) -> Replacement:
    x, (y,) = node.inputs[0], node.outputs
    dtype = cx.numpy_dtype(node, x)
    e = Emitter(cx, node)
    c = lambda v: e.const(np.asarray(v, dtype))  # noqa: E731
    approximate = node.attr("approximate", b"none")
    if approximate in (b"tanh", "tanh"):
        cube = e("Mul", e("Mul", x, x), x)
        inner = e("Mul", e("Add", x, e("Mul", cube, c(0.044715))), c(math.sqrt(2.0 / math.pi)))
        core = e("Tanh", inner)
    else:
        core = e("Erf", e("Mul", x, c(1.0 / math.sqrt(2.0))))
    e("Mul", e("Mul", x, c(0.5)), e("Add", core, c(1.0)), out=y)
    return cx.replace(node, e.nodes, WRITTEN_AT)


def _hardswish_down(node: Node, cx: Converter) -> Replacement:
    e = Emitter(cx, node)
    x = node.inputs[0]
    e("Mul", x, e("HardSigmoid", x, alpha=1.0 / 6.0, beta=0.5), out=node.outputs[0])
    return cx.replace(node, e.nodes, WRITTEN_AT)


def _mish_down(node: Node, cx: Converter) -> Replacement:
    e = Emitter(cx, node)
    x = node.inputs[0]
    e("Mul", x, e("Tanh", e("Softplus", x)), out=node.outputs[0])
    return cx.replace(node, e.nodes, WRITTEN_AT)


def _celu_down(node: Node, cx: Converter) -> Replacement:
    x = node.inputs[0]
    dtype = cx.numpy_dtype(node, x)
    alpha = float(node.attr("alpha", 1.0))
    e = Emitter(cx, node)
    zero = e.const(np.asarray(0, dtype))
    a = e.const(np.asarray(alpha, dtype))
    neg = e("Mul", a, e("Sub", e("Exp", e("Div", x, a)), e.const(np.asarray(1, dtype))))
    e("Add", e("Max", zero, x), e("Min", zero, neg), out=node.outputs[0])
    return cx.replace(node, e.nodes, WRITTEN_AT)


adapter("Gelu", 20, down=_gelu_down)
adapter("HardSwish", 14, down=_hardswish_down)
adapter("Mish", 18, down=_mish_down)
adapter("Celu", 12, down=_celu_down)
