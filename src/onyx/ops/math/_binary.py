"""Registration of the broadcasting elementwise operators (Add, And, Equal, Max, ...).

Their op files differ only in the numpy function applied; what they share -- the opset-7+ kernel
that reports shapes that do not broadcast, the opset<7 ``broadcast``/``axis`` forms, the
``consumed_inputs`` attribute of the first opsets and the shape rule -- is built here, once.
Each op keeps its own file (the registry finds an op by its file name) and calls one function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onyx.ops.math._common import broadcast_error, legacy_broadcast, named, variadic
from onyx.ops.math._shape import compare_rule, elementwise_rule, legacy_compare_rule, legacy_elementwise_rule
from onyx.ops.registry import register, shape_rule

Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: The opset<7 versions of Add, Sub, Mul, Div as (since, has ``consumed_inputs``): opsets 1 and 6.
LEGACY_V1_V6 = ((1, True), (6, False))
#: The opset<7 version of And, Or, Xor, Equal, Greater, Less, Pow: opset 1, without ``consumed_inputs``.
LEGACY_V1 = ((1, False),)


def binary_op(
    op_type: str,
    compute: np.ufunc | Binary,
    *,
    since: int = 7,
    legacy: tuple[tuple[int, bool], ...] = (),
    bool_output: bool = False,
) -> Binary:
    """Register ``op_type`` as ``compute(a, b)`` with numpy broadcasting from opset ``since``, and, in
    the opsets listed in ``legacy`` (each up to the next, the last up to ``since``), as the opset<7
    form in which B is broadcast into A by the ``broadcast``/``axis`` attributes. A ufunc writes a new
    array (``out=...``, never a numpy scalar); another callable must return one itself. Returns the
    modern kernel."""
    if isinstance(compute, np.ufunc):
        ufunc = compute

        def kernel(a, b):
            try:
                return ufunc(a, b, out=...)
            except ValueError:
                raise broadcast_error(op_type, a, b) from None
    else:

        def kernel(a, b):
            try:
                return compute(a, b)
            except ValueError:
                raise broadcast_error(op_type, a, b) from None

    register(op_type, named(kernel, op_type, since), since=since)
    for i, (start, consumed_inputs) in enumerate(legacy):
        until = legacy[i + 1][0] if i + 1 < len(legacy) else since
        form = _legacy_with_consumed_inputs if consumed_inputs else _legacy
        register(op_type, named(form(op_type, kernel), op_type, start), since=start, until=until)
    if legacy:
        rule = legacy_compare_rule if bool_output else legacy_elementwise_rule
    else:
        rule = compare_rule if bool_output else elementwise_rule
    shape_rule(op_type)(rule)
    return kernel


def _legacy(op_type: str, kernel: Binary) -> Binary:
    def legacy_kernel(a, b, *, axis=None, broadcast=0):
        return kernel(a, legacy_broadcast(op_type, a, b, broadcast, axis))

    return legacy_kernel


def _legacy_with_consumed_inputs(op_type: str, kernel: Binary) -> Binary:
    def legacy_kernel(a, b, *, axis=None, broadcast=0, consumed_inputs=None):
        return kernel(a, legacy_broadcast(op_type, a, b, broadcast, axis))

    return legacy_kernel


def variadic_op(op_type: str, ufunc: np.ufunc, *, divide_by_count: bool = False) -> Callable[..., np.ndarray]:
    """Register ``op_type`` as ``ufunc`` folded over one or more broadcasting inputs (Max, Min, Sum;
    Mean with ``divide_by_count``): opset 1 with its ``consumed_inputs`` attribute, opset 6 on without.
    Returns the opset-6 kernel."""

    def kernel(*data_0):
        out = variadic(op_type, ufunc, data_0)
        if divide_by_count and len(data_0) > 1:
            np.true_divide(out, len(data_0), out=out)
        return out

    def kernel_1(*data_0, consumed_inputs=None):
        return kernel(*data_0)

    register(op_type, named(kernel_1, op_type, 1), since=1, until=6)
    register(op_type, named(kernel, op_type, 6), since=6)
    shape_rule(op_type)(elementwise_rule)
    return kernel
