"""Dropout (all versions).

Inference (the old versions, and v12+ without ``training_mode``) returns the input and an all-true
mask. In training mode the mask keeps each element with probability ``1 - ratio`` and the kept values
are scaled by ``1 / (1 - ratio)``. With a ``seed`` attribute the draw is deterministic: a legacy
``RandomState(seed).uniform`` stream, which reproduces the node suite's expected outputs; without a
seed the run's generator (``_ctx.rng()``) is used.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import compute_dtype
from onyx.ops.nn._shapes import dropout_rule
from onyx.ops.registry import op, shape_rule


def _inference(data, num_outputs, mask_dtype):
    if num_outputs > 1:
        return data, np.ones(data.shape, dtype=mask_dtype)
    return data


@op("Dropout", since=1, until=6, pure=False)
def dropout_1(data, *, consumed_inputs=None, is_test=0, ratio=0.5, _num_outputs=1):
    return _inference(data, _num_outputs, data.dtype)


@op("Dropout", since=6, until=7, pure=False)
def dropout_6(data, *, is_test=0, ratio=0.5, _num_outputs=1):
    return _inference(data, _num_outputs, data.dtype)


@op("Dropout", since=7, until=10, pure=False)
def dropout_7(data, *, ratio=0.5, _num_outputs=1):
    return _inference(data, _num_outputs, data.dtype)


@op("Dropout", since=10, until=12, pure=False)
def dropout_10(data, *, ratio=0.5, _num_outputs=1):
    return _inference(data, _num_outputs, np.bool_)


@op("Dropout", since=12, pure=False)
def dropout_12(data, ratio=None, training_mode=None, *, seed=None, _num_outputs=1, _ctx=None):
    training = training_mode is not None and bool(np.asarray(training_mode).reshape(()))
    r = 0.5 if ratio is None else float(np.asarray(ratio, dtype=np.float64).reshape(()))
    if not training or r == 0:
        return _inference(data, _num_outputs, np.bool_)
    if not 0 <= r < 1:
        raise InvalidArgument(f"Dropout: ratio {r} must be in [0, 1)")
    if seed is not None:
        u = np.random.RandomState(int(seed) & 0xFFFFFFFF).uniform(0, 1.0, data.shape)
    else:
        rng = _ctx.rng() if _ctx is not None else np.random.default_rng()
        u = rng.random(data.shape)
    mask = u >= r
    ct = compute_dtype(data.dtype)
    y = data.astype(ct) * mask * ct.type(1.0 / (1.0 - r))
    y = y.astype(data.dtype, copy=False)
    if _num_outputs > 1:
        return y, mask
    return y


shape_rule("Dropout")(dropout_rule)
