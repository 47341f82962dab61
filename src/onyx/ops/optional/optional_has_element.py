"""OptionalHasElement: whether an optional holds a value (a tensor or sequence input always does)."""

from __future__ import annotations

import numpy as np

from onyx.ir.dtypes import DataType
from onyx.ir.types import OptionalType
from onyx.ops.registry import op, shape_rule


@op("OptionalHasElement", since=15, until=18)
def optional_has_element_15(input):  # noqa: A002
    return np.array(input is not None)


@op("OptionalHasElement", since=18)
def optional_has_element_18(input=None):  # noqa: A002
    # From 18 the input may be absent (false) or a plain tensor/sequence (true). 28 adds element types.
    return np.array(input is not None)


@shape_rule("OptionalHasElement")
def _optional_has_element_shape(ctx) -> None:
    """A bool scalar."""
    t = ctx.input_type(0)
    if ctx.opset < 18 and t is not None and not isinstance(t, OptionalType):
        ctx.fail(f"the input must be an optional, got {t}")
    ctx.set_output(0, int(DataType.BOOL), [])
