"""Helpers shared by the shape rules of the tensor and reduce families.

Dims are ``int``, :class:`~onyx.ir.symbolic.Sym` or ``None`` (unknown). These helpers never raise
anything but through ``ctx.fail`` (a contradiction in the model), so a rule built on them cannot crash
inference on a symbolic or unknown dim.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from onyx.ir.dtypes import DataType, from_numpy
from onyx.ir.symbolic import DimLike, Sym

Dim = DimLike | None
INT64 = int(DataType.INT64)
BOOL = int(DataType.BOOL)
FLOAT = int(DataType.FLOAT)
#: ends at or beyond this (INT64_MAX, INT_MAX, 2**62...) mean "to the end of the axis"
HUGE = 1 << 30
#: numpy's largest rank: a shape vector or rank past it (a declared length of 2**40) describes no tensor
MAX_RANK = 64


def with_input_shape(*, elem_from: int = 0, index_outputs: tuple[int, ...] = ()) -> Callable:
    """Decorator for a shape rule that can say nothing until input 0's shape is known: meanwhile
    output 0 gets the element type of input ``elem_from`` (the outputs in ``index_outputs``: int64)
    and no shape; once it is known the rule runs as ``rule(ctx, elem, shape)``."""

    def deco(rule: Callable[[Any, int | None, list], None]) -> Callable[[Any], None]:
        @functools.wraps(rule)
        def checked(ctx) -> None:
            elem = ctx.input_elem(elem_from)
            src = ctx.input_shape(0)
            if src is None:
                ctx.set_output(0, elem, None)
                for i in index_outputs:
                    ctx.set_output(i, INT64, None)
                return
            rule(ctx, elem, src)

        return checked

    return deco


def known(d: Any) -> bool:
    """A dim that is an int or a symbol (not None)."""
    return d is not None


def is_int(d: Any) -> bool:
    return isinstance(d, int | np.integer) and not isinstance(d, bool)


def sign(d: Dim) -> int | None:
    """+1 when ``d`` is certainly >= 0, -1 when certainly < 0 (ints), or a symbol whose every
    coefficient is negative; None when it cannot be told."""
    if d is None:
        return None
    if is_int(d):
        return 1 if d >= 0 else -1
    if isinstance(d, Sym):
        coefs = list(d.terms.values())
        if all(c >= 0 for c in coefs):
            return 1
        if all(c <= 0 for c in coefs):
            return -1
    return None


def prod(dims: list[Dim] | None) -> Dim:
    """The product of the dims (1 for none), None if one is unknown."""
    if dims is None:
        return None
    total: DimLike = 1
    for d in dims:
        if d is None:
            return None
        total = total * d
    return total


def div_exact(a: Dim, b: Dim) -> Dim:
    """``a // b`` for dims: exact ints, exact symbolic quotients, otherwise an opaque symbol."""
    if a is None or b is None:
        return None
    if is_int(b) and b == 0:
        return None
    if is_int(a) and is_int(b):
        return a // b
    if is_int(a) and isinstance(b, Sym):
        return None  # an int divided by a symbol: not expressible
    return a // b


def ceil_div(a: Dim, b: int) -> Dim:
    """ceil(a / b) for a positive int ``b``."""
    if a is None:
        return None
    if b == 1:
        return a
    if is_int(a):
        return -(-a // b)
    return (a + (b - 1)) // b


def merge(a: Dim, b: Dim) -> Dim:
    """Two descriptions of one dim (must be equal at run time): the more specific one."""
    if is_int(a):
        return a
    if is_int(b):
        return b
    return a if a is not None else b


def same(a: Dim, b: Dim) -> bool | None:
    """True/False when the two dims are certainly equal/different; None when it cannot be told."""
    if a is None or b is None:
        return None
    if is_int(a) and is_int(b):
        return a == b
    if a == b:
        return True
    return None


def required(ctx, name: str) -> Any:
    """A required attribute's value; its absence is a contradiction (ctx.fail)."""
    v = ctx.attr(name, None)
    if v is None:
        ctx.fail(f"{ctx.node.op_type}: required attribute {name!r} is missing")
    return v


def norm_axis(ctx, axis: Any, rank: int, what: str = "axis") -> int:
    """``axis`` in [-rank, rank) made non-negative; out of range is a contradiction (ctx.fail)."""
    a = int(axis)
    if not -rank <= a < rank:
        ctx.fail(f"{what} {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def norm_axes(ctx, axes: list[Any], rank: int, what: str = "axes") -> list[int]:
    out = [norm_axis(ctx, a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        ctx.fail(f"{what} {list(axes)} has repeated entries (rank {rank})")
    return out


def int_values(ctx, i: int) -> list[DimLike] | None:
    """Input ``i``'s known value as a flat list of ints/symbols, or None when unknown or absent."""
    if not ctx.has_input(i):
        return None
    try:
        return ctx.input_ints(i)
    except (TypeError, ValueError, OverflowError):
        return None


def plain_ints(vals: list[DimLike] | None) -> list[int] | None:
    """The list when every entry is an int, else None."""
    if vals is None or not all(is_int(v) for v in vals):
        return None
    return [int(v) for v in vals]


def vector_length(ctx, i: int) -> int | None:
    """The length of 1-D input ``i`` when its shape is known (for shape-like inputs of unknown value)."""
    s = ctx.input_shape(i)
    if s is None:
        return None
    if len(s) == 0:
        return 1
    if len(s) == 1 and is_int(s[0]):
        n = int(s[0])
        if n > MAX_RANK:
            ctx.fail(f"input {i} is a shape-like vector of length {n}, past the largest rank ({MAX_RANK})")
        return n
    return None


def axes_arg(ctx, input_index: int, attr: str = "axes") -> tuple[bool, list[DimLike] | None]:
    """Axes given as an attribute (old opsets) or an optional input (new ones).

    Returns ``(given, axes)``: given is False when neither is present; axes is None when the input is
    present but its value is not known at load time.
    """
    a = ctx.attr(attr, None)
    if a is not None:
        return True, [int(x) for x in a]
    if ctx.has_input(input_index):
        return True, int_values(ctx, input_index)
    return False, None


def elem_of_array(value: Any) -> int | None:
    """The ONNX element type of a numpy array (an attribute's tensor)."""
    if value is None:
        return None
    try:
        return int(from_numpy(np.asarray(value).dtype))
    except Exception:  # noqa: BLE001 - an exotic dtype: leave the type unknown
        return None


def elem_code(to: Any) -> int | None:
    """An element type given as a DataType code or (Cast-1) its name."""
    if to is None:
        return None
    if isinstance(to, str):
        try:
            return int(DataType[to.strip().upper()])
        except KeyError:
            return None
    try:
        return int(DataType(int(to)))
    except ValueError:
        return None


def dims_array(dims: Any) -> np.ndarray:
    """A value holding dims (a list or one dim): int64 when all are ints, else an object array."""
    flat = dims if isinstance(dims, list) else [dims]
    if all(is_int(d) for d in flat):
        return np.array(dims, dtype=np.int64)
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr if isinstance(dims, list) else arr.reshape(())


def value_array(arr: np.ndarray) -> np.ndarray:
    """A symbolic (object) value normalised: int64 when no symbol is left."""
    arr = np.asarray(arr)
    if arr.dtype == object and not any(isinstance(x, Sym) for x in arr.reshape(-1).tolist()):
        return arr.astype(np.int64)
    return arr


def fresh(ctx, n: int) -> list:
    """``n`` fresh symbols: dims fixed at run time by values not known now (an unknown shape input,
    unknown axes or pads). Dims unknown because an input's dims are unknown stay None."""
    if n > MAX_RANK:
        ctx.fail(f"a rank of {n} is past the largest rank ({MAX_RANK})")
    return [ctx.new_dim() for _ in range(n)]


def nchw_and_blocksize(ctx, what: str) -> tuple | None:
    """(n, c, h, w, blocksize) of the 4-D input whose blocks DepthToSpace / SpaceToDepth move; None (the
    output set to rank 4 of unknown sizes) when the input's shape is not known."""
    s = ctx.input_shape(0)
    if s is None:
        ctx.set_output(0, ctx.input_elem(0), [None] * 4)
        return None
    if len(s) != 4:
        ctx.fail(f"{what}: input must be 4-D (N, C, H, W), got shape {s}")
    return (*s, int(required(ctx, "blocksize")))
