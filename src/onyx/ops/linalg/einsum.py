"""Einsum: Einstein summation over an equation such as ``"bij,bjk->bik"``.

The implicit form (no ``->``) gets its output term spelled out here by the ONNX rule (indices that
occur once, sorted by ASCII value, after the ellipsis if any), so numpy never applies its own. Paths
from ``numpy.einsum_path`` (BLAS contractions) are cached per equation and shapes.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.registry import op

_paths: dict = {}
_MAX_CACHED = 512


def explicit(equation: str, n_inputs: int) -> str:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_inputs:
        raise InvalidArgument(f"Einsum: equation {equation!r} has {len(terms)} terms for {n_inputs} inputs")
    if arrow:
        return eq
    letters = [ch for t in terms for ch in t.replace("...", "")]
    once = sorted(ch for ch in set(letters) if letters.count(ch) == 1)
    out = ("..." if "..." in lhs else "") + "".join(once)
    return f"{lhs}->{out}"


@op("Einsum", since=12)
def einsum_12(*inputs, equation):
    eq = explicit(equation, len(inputs))
    dt = inputs[0].dtype if inputs else None
    xs = inputs if dt in NATIVE_FLOATS or dt.kind in "iu" else [x.astype(F32) for x in inputs]
    try:
        if len(xs) <= 2 and all(x.size < 4096 for x in xs):
            y = np.einsum(eq, *xs)
        else:
            key = (eq, tuple(x.shape for x in xs))
            path = _paths.get(key)
            if path is None:
                path = np.einsum_path(eq, *xs, optimize="greedy")[0]
                if len(_paths) >= _MAX_CACHED:
                    _paths.clear()
                _paths[key] = path
            y = np.einsum(eq, *xs, optimize=path)
    except ValueError as e:
        shapes = ", ".join(str(x.shape) for x in inputs)
        raise InvalidArgument(f"Einsum: equation {equation!r} does not fit inputs {shapes}: {e}") from None
    y = np.asarray(y)
    return y if y.dtype == dt else y.astype(dt)
