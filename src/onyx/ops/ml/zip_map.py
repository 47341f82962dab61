"""ZipMap: each row of a float tensor to a map from class label to score; a sequence of maps."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.types import MapType, SequenceType, TensorType
from onyx.ops.ml._common import FLOAT, INT64, STRING, to_str_list
from onyx.ops.registry import op, shape_rule


def _prepare(*, classlabels_int64s=None, classlabels_strings=None):
    """The labels converted once: ``X -> [ {label: score} per row ]``."""
    if classlabels_strings:
        labels = to_str_list(classlabels_strings)
    elif classlabels_int64s:
        labels = [int(v) for v in classlabels_int64s]
    else:
        raise InvalidArgument("ZipMap: classlabels_int64s or classlabels_strings must be given")
    k = len(labels)

    def run(X):
        X = np.asarray(X, dtype=np.float32)
        x = X.reshape(1, -1) if X.ndim == 1 else X
        if x.ndim != 2 or x.shape[1] != k:
            raise InvalidArgument(f"ZipMap: input shape {X.shape} does not match {k} class labels")
        return [dict(zip(labels, row)) for row in x.tolist()]

    return run


@op("ZipMap", domain="ai.onnx.ml", since=1, prepare=_prepare)
def zip_map_1(X, *, classlabels_int64s=None, classlabels_strings=None):
    return _prepare(classlabels_int64s=classlabels_int64s, classlabels_strings=classlabels_strings)(X)


@shape_rule("ZipMap", domain="ai.onnx.ml")
def _zip_map_shape(ctx) -> None:
    """seq(map(string or int64, float)), the key type by the labels attribute that is set."""
    if ctx.attr("classlabels_strings"):
        key = STRING
    elif ctx.attr("classlabels_int64s"):
        key = INT64
    else:
        ctx.fail("classlabels_int64s or classlabels_strings must be given")
    x = ctx.input_shape(0)
    k = len(ctx.attr("classlabels_strings") or ctx.attr("classlabels_int64s"))
    if x is not None and len(x) == 2 and isinstance(x[1], int) and x[1] != k:
        ctx.fail(f"input shape {x} does not match {k} class labels")
    ctx.set_output_type(0, SequenceType(MapType(key, TensorType(FLOAT, []))))
