"""Shared negative-log-likelihood computation for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument


def nll(logp, target, weight, ignore_index, reduction, what):
    """Loss from log-probabilities ``logp`` (N, C, *d) and labels ``target`` (N, *d)."""
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in ("none", "sum", "mean"):
        raise InvalidArgument(f"{what}: reduction {reduction!r} must be none, sum or mean")
    if logp.ndim < 2 or target.shape != (logp.shape[0],) + logp.shape[2:]:
        raise InvalidArgument(f"{what}: input {logp.shape} and target {target.shape} do not agree")
    c = logp.shape[1]
    t = target.astype(np.int64)
    ignored = None
    if ignore_index is not None:
        ignored = t == ignore_index
        t = np.where(ignored, 0, t)
    if t.size and (t.min() < 0 or t.max() >= c):
        raise InvalidArgument(f"{what}: target values must be in [0, {c})")
    picked = np.take_along_axis(logp, t[:, None], axis=1)[:, 0]
    loss = -picked
    if weight is not None:
        if weight.shape != (c,):
            raise InvalidArgument(f"{what}: weight of shape {weight.shape}, expected ({c},)")
        w = weight.astype(logp.dtype)[t]
    else:
        w = None
    if ignored is not None:
        keep = (~ignored).astype(logp.dtype)
        w = keep if w is None else w * keep
    if w is not None:
        loss = loss * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum(), dtype=logp.dtype)
    if w is None:
        return np.asarray(loss.mean(), dtype=logp.dtype)
    den = w.sum()
    return np.asarray(loss.sum() / den if den != 0 else loss.sum() * 0, dtype=logp.dtype)
