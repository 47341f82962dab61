"""Optional: wrap a tensor or sequence as an optional value, or make an empty one (None)."""

from __future__ import annotations

from onyx.ir.types import OptionalType, TypeBase
from onyx.ops.registry import op, shape_rule


@op("Optional", since=15)
def optional(input=None, *, type=None):  # noqa: A002 - ONNX names
    # An optional holding a value is represented by the value itself; an empty optional is None. The
    # ``type`` attribute only matters for type inference. Version 28 only adds element types.
    return input


@shape_rule("Optional")
def _optional_shape(ctx) -> None:
    """optional(the input's type), or optional(the ``type`` attribute) for an empty optional."""
    if ctx.has_input(0):
        t = ctx.input_type(0)
        if isinstance(t, OptionalType):
            ctx.fail(f"the input is already an optional: {t}")
        declared = ctx.attr("type")
        if t is None:
            t = declared if isinstance(declared, TypeBase) else None
        if t is not None:
            ctx.set_output_type(0, OptionalType(t))
        return
    t = ctx.attr("type")
    if not isinstance(t, TypeBase):
        ctx.fail("an empty Optional needs the type attribute")
    ctx.set_output_type(0, OptionalType(t))
