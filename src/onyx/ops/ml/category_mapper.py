"""CategoryMapper: strings to int64 (or back) through two parallel lists; unknowns get the default."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.ml._common import INT64, STRING, str_array, to_str_list
from onyx.ops.registry import op, shape_rule


@op("CategoryMapper", domain="ai.onnx.ml", since=1)
def category_mapper_1(X, *, cats_int64s=None, cats_strings=None, default_int64=-1, default_string="_Unused"):
    X = np.asarray(X)
    ints = list(cats_int64s or [])
    strs = to_str_list(cats_strings or [])
    if len(ints) != len(strs):
        raise InvalidArgument(
            f"CategoryMapper: cats_int64s ({len(ints)}) and cats_strings ({len(strs)}) differ in length"
        )
    uniq, inv = np.unique(X.reshape(-1), return_inverse=True)
    if X.dtype == object or X.dtype.kind in "US":
        table = dict(zip(strs, ints))
        mapped = np.asarray([table.get(str(u), default_int64) for u in uniq], dtype=np.int64)
        return mapped[inv].reshape(X.shape)
    if X.dtype.kind in "iu":
        table = dict(zip(ints, strs))
        mapped = str_array([table.get(int(u), default_string) for u in uniq])
        return mapped[inv].reshape(X.shape) if X.size else str_array([], X.shape)
    raise InvalidArgument(f"CategoryMapper: X must be string or int64, got {X.dtype}")


@shape_rule("CategoryMapper", domain="ai.onnx.ml")
def _category_mapper_shape(ctx) -> None:
    """X's shape; strings become int64 and int64 become strings."""
    x = ctx.input_elem(0)
    elem = None if x is None else (INT64 if x == STRING else STRING)
    ctx.set_output(0, elem, ctx.input_shape(0))
