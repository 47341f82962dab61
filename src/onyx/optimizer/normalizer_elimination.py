"""Normalizer elimination: an L1 ``Normalizer`` of class probabilities that already sum to one per row
does nothing but divide by a sum within a few float32 ulps of 1, so readers of its output read its
input (graph outputs keep their names). skl2onnx writes one after the LinearClassifier of a multinomial
LogisticRegression (post_transform SOFTMAX); the Normalizer after a one-vs-rest LOGISTIC stays, as
does one after a binary classifier (one coefficient row: its two columns are 1 - s and s of the raw
score s under SOFTMAX, not probabilities).

An EXTENDED-level pass: the probabilities can differ from the unoptimised graph's in their last bits.
"""

from __future__ import annotations

from onyx.ir.model import Model, Node, Value
from onyx.optimizer._pattern import attr
from onyx.optimizer._util import Scope

ML = "ai.onnx.ml"
_NORMALISED = ("SOFTMAX", "SOFTMAX_ZERO")


def _sums_to_one(v: Value) -> bool:
    """``v`` is the probabilities output of a multi-row LinearClassifier under a softmax post-transform."""
    p: Node | None = v.producer
    if p is None or p.op_type != "LinearClassifier" or p.domain != ML or v.index != 1:
        return False
    try:
        post = attr(p, "post_transform", "NONE")
        intercepts = attr(p, "intercepts")
    except LookupError:  # attribute references (function bodies): not known here
        return False
    # the intercepts give the number of coefficient rows: two or more rows are softmax-normalised
    return post in _NORMALISED and intercepts is not None and len(intercepts) >= 2


def eliminate_softmax_normalizer(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        for node in sc.nodes(entry):
            if node.op_type != "Normalizer" or node.domain != ML or len(node.inputs) != 1:
                continue
            x = node.inputs[0]
            try:
                norm = attr(node, "norm", "MAX")
            except LookupError:
                continue
            if x is None or norm != "L1" or not _sums_to_one(x):
                continue
            changed |= sc.bypass(node, node.outputs[0], x)
    sc.flush()
    return changed
