"""Helpers shared by the ai.onnx.ml operators: score post-transforms, 2-D views, string handling."""

from __future__ import annotations

import math

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.products import product

POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b``, on a single-threaded BLAS for the small products of these models (see
    onyx.kernels.products.product: BLAS's thread barriers stall on a busy machine)."""
    return product(a, b, a.size * (b.shape[-1] if b.ndim > 1 else 1))


def as_2d(X, name: str = "X") -> np.ndarray:
    """Rows x features: a 1-D input is one row, higher ranks keep the first axis."""
    X = np.asarray(X)
    if X.ndim == 0:
        return X.reshape(1, 1)
    if X.ndim == 1:
        return X.reshape(1, -1)
    if X.ndim > 2:
        return X.reshape(X.shape[0], -1)
    return X


def as_float(X) -> np.ndarray:
    """Numeric input as float32 (float64 kept)."""
    X = np.asarray(X)
    if X.dtype == np.float64:
        return X
    if X.dtype.kind not in "fiub":
        raise InvalidArgument(f"expected a numeric tensor, got element type {X.dtype}")
    return X.astype(np.float32, copy=False)


def to_str_list(v) -> list[str]:
    out = []
    for s in v:
        out.append(s.decode("utf-8", errors="surrogateescape") if isinstance(s, bytes) else str(s))
    return out


def str_array(values, shape=None) -> np.ndarray:
    a = np.empty(len(values), dtype=object)
    a[:] = list(values)
    return a if shape is None else a.reshape(shape)


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), stable for large |x|: exp(min(x, 0)) / (1 + exp(-|x|)), which is 1 / (1 +
    exp(-x)) for x >= 0 and exp(x) / (1 + exp(x)) below (the same values as a where() between the two,
    in in-place calls: half the time on the few scores of one row)."""
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += 1.0
    num = np.minimum(x, 0.0)
    np.exp(num, out=num)
    num /= e
    return num


def logistic_pair(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out[:, 0] = logistic(-x), out[:, 1] = logistic(x), each as :func:`logistic` computes it, sharing
    the exponential. One score (a binary model at batch 1) is computed in Python floats, rounded once
    into ``out``: the same values within two float32 ulps (the array path rounds each step) for a fifth
    of eight array calls' overhead, most of such a model's run."""
    if x.shape[0] == 1:
        v = float(x[0])
        e = math.exp(-abs(v))  # NaN stays NaN
        d = 1.0 + e
        a, b = 1.0 / d, e / d
        out[0, 1], out[0, 0] = (a, b) if v >= 0 else (b, a)
        return out
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = 1.0 + e
    a = 1.0 / d
    b = np.divide(e, d, out=e)
    pos = x >= 0
    out[:, 1] = np.where(pos, a, b)
    out[:, 0] = np.where(pos, b, a)
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    if not x.shape[1]:
        return np.exp(x)
    if x.shape[0] == 1 and x.shape[1] <= PY_ROW and x.dtype == np.float64:
        # one short row: Python floats (libm's exp, as numpy's), a third of five ufunc calls' overhead;
        # NaN or +inf anywhere makes the total NaN and so every value, as in numpy
        row = x[0].tolist()
        m = max(row)
        e = [math.exp(t - m) for t in row]
        total = sum(e)
        return np.array([[t / total for t in e]])
    if x.shape[0] == 1:  # one row: whole-array reductions, cheaper than per-row ones with keepdims
        e = x - x.max()
        np.exp(e, out=e)
        e /= e.sum()
        return e
    e = x - np.maximum.reduce(x, axis=1, keepdims=True)
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=1, keepdims=True)
    return e


#: longest row that :func:`softmax` computes with Python floats
PY_ROW = 64


def softmax_zero(x: np.ndarray) -> np.ndarray:
    """Softmax over the non-zero scores of each row; zero scores stay zero."""
    if x.shape[1] == 0:
        return x.copy()
    m = x.max(axis=1, keepdims=True)
    e = np.where(x != 0, np.exp(x - m), 0.0)
    s = e.sum(axis=1, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s != 0)


def erfinv_approx(x: np.ndarray) -> np.ndarray:
    """Winitzki's closed-form approximation of erfinv (a = 0.147), as onnxruntime's PROBIT uses."""
    a = 0.147
    sgn = np.where(x < 0, -1.0, 1.0)
    ln = np.log((1.0 - x) * (1.0 + x))
    t = 2.0 / (np.pi * a) + ln / 2.0
    return sgn * np.sqrt(np.sqrt(t * t - ln / a) - t)


def probit(x: np.ndarray) -> np.ndarray:
    return np.sqrt(2.0) * erfinv_approx(2.0 * x - 1.0)


def post_transform(scores: np.ndarray, name: str | int) -> np.ndarray:
    """Apply a post_transform (by name, or by the TreeEnsemble-5 enum) to (N, K) scores."""
    if isinstance(name, int | np.integer):
        if not 0 <= int(name) < len(POST_TRANSFORMS):
            raise InvalidArgument(f"post_transform {name} is not one of 0..4")
        name = POST_TRANSFORMS[int(name)]
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return logistic(scores)
    if name == "SOFTMAX":
        return softmax(scores)
    if name == "SOFTMAX_ZERO":
        return softmax_zero(scores)
    if name == "PROBIT":
        return probit(scores)
    raise InvalidArgument(f"unknown post_transform {name!r}; expected one of {POST_TRANSFORMS}")


def labels_of(classlabels_ints, classlabels_strings, what: str) -> tuple[np.ndarray, bool]:
    """(labels array, is_string). int64 labels unless string labels are given."""
    if classlabels_strings:
        return str_array(to_str_list(classlabels_strings)), True
    if classlabels_ints is not None and len(classlabels_ints):
        return np.asarray(classlabels_ints, dtype=np.int64), False
    raise InvalidArgument(f"{what}: classlabels_ints or classlabels_strings must be given")


# -- shape-rule helpers ------------------------------------------------------------------------
FLOAT, INT64, STRING, DOUBLE = 1, 7, 8, 11  # ONNX element type codes


def rows_of(dims: list | None):
    """The number of rows as_2d gives: 1 for rank 0 or 1, the first dim otherwise; None if unknown."""
    if dims is None:
        return None
    return 1 if len(dims) <= 1 else dims[0]


def features_of(dims: list | None):
    """The number of columns as_2d gives (product of the dims after the first); None if unknown."""
    if dims is None:
        return None
    if not dims:
        return 1
    rest = dims if len(dims) == 1 else dims[1:]
    total = 1
    for d in rest:
        if d is None:
            return None
        total = total * d
    return total


def label_elem(ctx, ints: str = "classlabels_ints", strings: str = "classlabels_strings") -> int | None:
    """string labels when the strings attribute is set, int64 when the ints one is."""
    if ctx.attr(strings):
        return STRING
    if ctx.attr(ints) is not None:
        return INT64
    return None


def num_labels(ctx, ints: str = "classlabels_ints", strings: str = "classlabels_strings") -> int | None:
    s = ctx.attr(strings)
    if s:
        return len(s)
    i = ctx.attr(ints)
    return len(i) if i is not None and len(i) else None


def elem_of_array(a) -> int | None:
    """The ONNX element type of an attribute tensor (strings: object arrays)."""
    import numpy as np

    from onyx.ir.dtypes import from_numpy

    if a is None:
        return None
    a = np.asarray(a)
    if a.dtype == object or a.dtype.kind in "US":
        return STRING
    return int(from_numpy(a.dtype))
