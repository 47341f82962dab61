"""GroupNormalization: standardise each (n, group) block; v18 scales per group, v21 per channel."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import back, check_rank
from onyx.ops.nn._norm import standardize_rows, stash_dtype
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import same_shape_rule


def _normalized(X, num_groups, epsilon, stash_type):
    check_rank(X, 2, "GroupNormalization X")
    n, c = X.shape[:2]
    g = int(num_groups)
    if g <= 0 or c % g:
        raise InvalidArgument(
            f"GroupNormalization: {c} channels of X {X.shape} not divisible by num_groups={g}"
        )
    st = stash_dtype(stash_type, X.dtype)
    x2 = X.astype(st, copy=False).reshape(n * g, -1)
    if x2.size == 0:
        return X.astype(st)
    y, _, _ = standardize_rows(x2, epsilon)
    return y.reshape(X.shape)


@op("GroupNormalization", since=18, until=21)
def group_normalization_18(X, scale, bias, *, epsilon=1e-5, num_groups):
    y = _normalized(X, num_groups, epsilon, 1)
    n, c = X.shape[:2]
    g = int(num_groups)
    if scale.shape != (g,) or bias.shape != (g,):
        raise InvalidArgument(
            f"GroupNormalization-18: scale {scale.shape} and bias {bias.shape} must be ({g},)"
        )
    yg = y.reshape(n, g, -1)
    yg *= scale.astype(y.dtype).reshape(g, 1)
    yg += bias.astype(y.dtype).reshape(g, 1)
    return back(y, X.dtype)


@op("GroupNormalization", since=21)
def group_normalization_21(X, scale, bias, *, epsilon=1e-5, num_groups, stash_type=1):
    c = X.shape[1]
    if scale.shape != (c,) or bias.shape != (c,):
        raise InvalidArgument(f"GroupNormalization: scale {scale.shape} and bias {bias.shape} must be ({c},)")
    y = _normalized(X, num_groups, epsilon, stash_type)
    shp = (c,) + (1,) * (X.ndim - 2)
    y *= scale.astype(y.dtype, copy=False).reshape(shp)
    y += bias.astype(y.dtype, copy=False).reshape(shp)
    return back(y, X.dtype)


shape_rule("GroupNormalization")(same_shape_rule)
