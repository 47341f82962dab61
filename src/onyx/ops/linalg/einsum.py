"""Einsum: Einstein summation over an equation such as ``"bij,bjk->bik"``.

The implicit form (no ``->``) gets its output term spelled out here by the ONNX rule (indices that
occur once, sorted by ASCII value, after the ellipsis if any), so numpy never applies its own. Paths
from ``numpy.einsum_path`` (BLAS contractions) are cached per equation and shapes.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.math._common import F32, NATIVE_FLOATS
from onyx.ops.math._shape import broadcast, merge_dim
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext

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


@shape_rule("Einsum")
def _einsum_shape(ctx: ShapeContext) -> None:
    """Output dims from the input labels: a label's dim is the broadcast of its dims over the operands
    (the same label twice in one operand must agree); ``...`` dims broadcast right-aligned."""
    n = sum(1 for i in range(ctx.num_inputs) if ctx.has_input(i))
    equation = ctx.attr("equation")
    if not isinstance(equation, str):
        ctx.fail("attribute 'equation' is required")
    try:
        eq = explicit(equation, n)
    except InvalidArgument as e:
        ctx.fail(str(e))
    lhs, rhs = eq.split("->")
    terms = lhs.split(",")
    for t in [*terms, rhs]:
        letters = t.replace("...", "", 1)
        if "." in letters or not all(ch.isascii() and ch.isalpha() for ch in letters):
            ctx.fail(f"equation {equation!r}: bad term {t!r}")
    seen = {ch for t in terms for ch in t if ch != "."}
    labels: dict[str, list] = {}
    ellipses: list[list | None] = []
    for i, term in enumerate(terms):
        shape = ctx.input_shape(i)
        letters = term.replace("...", "")
        if "..." in term:
            pre, post = term.split("...")
            if shape is None:
                ellipses.append(None)
                continue
            k = len(shape) - len(letters)
            if k < 0:
                ctx.fail(f"term {term!r} has more labels than input {i}'s rank {len(shape)}")
            ellipses.append(shape[len(pre) : len(pre) + k])
            pairs = list(zip(pre, shape[: len(pre)])) + list(zip(post, shape[len(pre) + k :]))
        else:
            if shape is None:
                continue
            if len(shape) != len(letters):
                ctx.fail(f"term {term!r} has {len(letters)} labels for input {i} of rank {len(shape)}")
            pairs = list(zip(letters, shape))
        mine: dict[str, object] = {}
        for ch, d in pairs:
            if ch in mine:
                mine[ch] = merge_dim(ctx, mine[ch], d, f"label {ch!r} repeated in term {term!r}")
            else:
                mine[ch] = d
        for ch, d in mine.items():
            labels.setdefault(ch, []).append([d])
    # every label and the ellipsis dims are checked, also those summed away
    dim_of = {ch: (broadcast(ctx, ds) or [None])[0] for ch, ds in labels.items()}
    ell = broadcast(ctx, [e for e in ellipses if e is not None]) or []
    pre, dots, post = rhs.partition("...")
    if not dots and ell:
        ctx.fail(f"equation {equation!r}: the output must keep the '...' dims")
    for ch in pre + post:
        if ch not in seen:
            ctx.fail(f"equation {equation!r}: output label {ch!r} is not in any input")
    out: list | None = [dim_of.get(ch) for ch in pre]
    if dots:
        out = None if any(e is None for e in ellipses) else out + ell  # type: ignore[operator]
    if out is not None:
        out += [dim_of.get(ch) for ch in post]
    ctx.set_output(0, ctx.input_elem(0), out)
