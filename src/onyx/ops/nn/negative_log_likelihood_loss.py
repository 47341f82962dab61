"""NegativeLogLikelihoodLoss (v12, v13, v22): weighted NLL with ignore_index and reduction."""

from __future__ import annotations

from onyx.ops.nn._common import back, compute_dtype
from onyx.ops.nn._loss import nll
from onyx.ops.nn._shapes import loss_rule
from onyx.ops.registry import op, shape_rule


@op("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(input, target, weight=None, *, ignore_index=None, reduction="mean"):
    ct = compute_dtype(input.dtype)
    loss = nll(
        input.astype(ct, copy=False), target, weight, ignore_index, reduction, "NegativeLogLikelihoodLoss"
    )
    return back(loss, input.dtype)


shape_rule("NegativeLogLikelihoodLoss")(loss_rule)
