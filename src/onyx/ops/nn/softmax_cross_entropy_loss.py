"""SoftmaxCrossEntropyLoss (v12, v13): log-softmax over classes then weighted NLL; optional log_prob."""

from __future__ import annotations

import numpy as np

from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._loss import nll
from onyx.ops.nn._shapes import loss_rule
from onyx.ops.registry import op, shape_rule


@op("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(
    scores, labels, weights=None, *, ignore_index=None, reduction="mean", _num_outputs=1
):
    ct = compute_dtype(scores.dtype)
    x = scores.astype(ct, copy=False)
    m = x.max(axis=1, keepdims=True) if x.size else 0
    z = x - m
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = back(nll(logp, labels, weights, ignore_index, reduction, "SoftmaxCrossEntropyLoss"), scores.dtype)
    if _num_outputs > 1:
        return loss, back(logp, scores.dtype)
    return loss


shape_rule("SoftmaxCrossEntropyLoss")(loss_rule)
