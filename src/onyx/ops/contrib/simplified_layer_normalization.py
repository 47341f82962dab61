"""SimplifiedLayerNormalization (onnxruntime's contrib op in the default domain): RMS normalisation
over the axes from ``axis`` on, times ``scale``; optional output inv_std_var."""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.norm import layer_norm_rows
from onyx.ops.contrib._common import back, threads_of, to_compute
from onyx.ops.nn._norm import spans
from onyx.ops.registry import op, shape_rule


@op("SimplifiedLayerNormalization", since=1)
def simplified_layer_normalization(
    X, scale, *, axis=-1, epsilon=1e-5, stash_type=1, _num_outputs=1, _ctx=None
):  # noqa: N803
    rank = max(X.ndim, 1)
    if not -rank <= axis < rank:
        raise InvalidArgument(f"SimplifiedLayerNormalization: axis {axis} out of range for rank {X.ndim}")
    ax = axis + rank if axis < 0 else axis
    ncols = int(np.prod(X.shape[ax:]))
    rows = int(np.prod(X.shape[:ax]))
    x = X.astype(np.float64 if X.dtype == np.float64 else np.float32, copy=False)
    inside = spans(scale, X.shape[ax:])
    y, _, _, inv = layer_norm_rows(
        x.reshape(rows, ncols),
        scale if inside else None,
        epsilon=epsilon,
        simplified=True,
        threads=threads_of(_ctx),
    )
    y = y.reshape(X.shape)
    if not inside:
        try:
            y *= to_compute(scale)
        except ValueError:
            raise InvalidArgument(
                f"SimplifiedLayerNormalization: scale {scale.shape} does not fit {X.shape}"
            ) from None
    y = back(y, X.dtype)
    if _num_outputs == 1:
        return y
    return y, inv.reshape(X.shape[:ax] + (1,) * (X.ndim - ax)).astype(np.float32)


@shape_rule("SimplifiedLayerNormalization")
def _shape(ctx):
    s = ctx.input_shape(0)
    ctx.set_output(0, ctx.input_elem(0), s)
    if ctx.num_outputs > 1 and s is not None:
        axis = int(ctx.attr("axis", -1))
        if not -max(len(s), 1) <= axis < max(len(s), 1):  # not a list of 2**31 ones below
            ctx.fail(f"axis {axis} out of range for rank {len(s)}")
        ax = axis + len(s) if axis < 0 else axis
        ctx.set_output(1, 1, s[:ax] + [1] * (len(s) - ax))
