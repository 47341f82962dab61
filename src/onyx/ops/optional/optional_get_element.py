"""OptionalGetElement: the value held by an optional (a tensor or sequence input is returned as is)."""

from __future__ import annotations

from onyx.errors import InvalidArgument
from onyx.ir.types import OptionalType, TensorType
from onyx.ops.registry import op, shape_rule


@op("OptionalGetElement", since=15)
def optional_get_element(input):  # noqa: A002
    # Version 18 also accepts plain tensors and sequences, returned unchanged; an optional holding a
    # value is the value itself here, so one kernel covers 15, 18 and 28 (new element types).
    if input is None:
        raise InvalidArgument("OptionalGetElement: the optional input is empty")
    return input


@shape_rule("OptionalGetElement")
def _optional_get_element_shape(ctx) -> None:
    """The optional's element type (from 18 a tensor or sequence input passes through)."""
    t = ctx.input_type(0)
    if isinstance(t, OptionalType):
        if t.elem is not None:
            ctx.set_output_type(0, t.elem)
        return
    if t is None:
        return
    if ctx.opset < 18:
        ctx.fail(f"the input must be an optional, got {t}")
    if isinstance(t, TensorType):
        ctx.same_as_input(0)
    else:
        ctx.set_output_type(0, t)
