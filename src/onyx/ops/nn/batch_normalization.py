"""BatchNormalization (all versions): inference as one fused multiply-add per element, training stats."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, check_rank, compute_dtype
from onyx.ops.nn._shapes import batch_norm_rule
from onyx.ops.registry import op, shape_rule


def _param(p, x, ct, name):
    p = np.asarray(p).astype(ct, copy=False)
    if p.ndim == 0:
        return p
    if p.shape[0] != x.shape[1] or p.ndim > x.ndim - 1 or p.shape != x.shape[1 : 1 + p.ndim]:
        raise InvalidArgument(
            f"BatchNormalization: {name} of shape {p.shape} does not fit X of shape {x.shape}"
        )
    return p.reshape(p.shape + (1,) * (x.ndim - 1 - p.ndim))


def _affine(x, scale, bias, mean, var, epsilon, ct):
    a = scale / np.sqrt(var + ct.type(epsilon))
    b = bias - mean * a
    y = x * a
    y += b
    return y


def _infer(X, scale, B, mean, var, epsilon):
    if X.ndim < 2:
        raise InvalidArgument(f"BatchNormalization: X of shape {X.shape} needs rank >= 2")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    y = _affine(
        x,
        _param(scale, x, ct, "scale"),
        _param(B, x, ct, "B"),
        _param(mean, x, ct, "mean"),
        _param(var, x, ct, "var"),
        epsilon,
        ct,
    )
    return back(y, X.dtype)


def _train(X, scale, B, mean, var, epsilon, momentum, spatial=True):
    check_rank(X, 2, "BatchNormalization X")
    ct = compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    p = np.asarray(scale)
    axes = (0,) + tuple(range(2, x.ndim)) if spatial and p.ndim <= 1 else (0,)
    cur_mean = x.mean(axis=axes, keepdims=True)
    cur_var = x.var(axis=axes, keepdims=True)
    y = _affine(x, _param(scale, x, ct, "scale"), _param(B, x, ct, "B"), cur_mean, cur_var, epsilon, ct)
    mdt = np.asarray(mean).dtype
    vdt = np.asarray(var).dtype
    cm = cur_mean.reshape(np.shape(mean)) if np.size(mean) == cur_mean.size else cur_mean.squeeze(axes)
    cv = cur_var.reshape(np.shape(var)) if np.size(var) == cur_var.size else cur_var.squeeze(axes)
    mom = ct.type(momentum)
    run_mean = np.asarray(mean).astype(ct) * mom + cm * (1 - mom)
    run_var = np.asarray(var).astype(ct) * mom + cv * (1 - mom)
    return back(y, X.dtype), back(run_mean, mdt), back(run_var, vdt), back(cm, mdt), back(cv, vdt)


@op("BatchNormalization", since=1, until=6)
def batch_normalization_1(
    X,
    scale,
    B,
    mean,
    var,
    *,
    consumed_inputs=None,
    epsilon=1e-5,
    is_test=0,
    momentum=0.9,
    spatial=1,
    _num_outputs=1,
):
    if _num_outputs > 1 and not is_test:
        return _train(X, scale, B, mean, var, epsilon, momentum, bool(spatial))[:_num_outputs]
    return _infer(X, scale, B, mean, var, epsilon)


@op("BatchNormalization", since=6, until=7)
def batch_normalization_6(
    X, scale, B, mean, var, *, epsilon=1e-5, is_test=0, momentum=0.9, spatial=1, _num_outputs=1
):
    if _num_outputs > 1 and not is_test:
        return _train(X, scale, B, mean, var, epsilon, momentum, bool(spatial))[:_num_outputs]
    return _infer(X, scale, B, mean, var, epsilon)


@op("BatchNormalization", since=7, until=9)
def batch_normalization_7(X, scale, B, mean, var, *, epsilon=1e-5, momentum=0.9, spatial=1, _num_outputs=1):
    if _num_outputs > 1:
        return _train(X, scale, B, mean, var, epsilon, momentum, bool(spatial))[:_num_outputs]
    return _infer(X, scale, B, mean, var, epsilon)


@op("BatchNormalization", since=9, until=14)
def batch_normalization_9(X, scale, B, mean, var, *, epsilon=1e-5, momentum=0.9, _num_outputs=1):
    if _num_outputs > 1:
        return _train(X, scale, B, mean, var, epsilon, momentum)[:_num_outputs]
    return _infer(X, scale, B, mean, var, epsilon)


@op("BatchNormalization", since=14)
def batch_normalization_14(
    X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=0, _num_outputs=1
):
    if training_mode:
        y, rm, rv, _, _ = _train(X, scale, B, input_mean, input_var, epsilon, momentum)
        return (y, rm, rv)[: max(_num_outputs, 1)] if _num_outputs > 1 else y
    if _num_outputs > 1:
        raise InvalidArgument("BatchNormalization: running_mean/running_var outputs need training_mode=1")
    return _infer(X, scale, B, input_mean, input_var, epsilon)


shape_rule("BatchNormalization")(batch_norm_rule)
