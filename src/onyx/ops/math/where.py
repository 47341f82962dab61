"""Where: elementwise select ``x`` where ``condition`` else ``y``, with broadcasting."""

import numpy as np

from onyx.ops.math._common import broadcast_error
from onyx.ops.math._shape import broadcast
from onyx.ops.registry import op, shape_rule
from onyx.shape_inference import ShapeContext


@op("Where", since=9)
def where_9(condition, x, y):
    try:
        return np.where(condition, x, y)
    except ValueError:
        raise broadcast_error("Where", condition, x, y) from None


@shape_rule("Where")
def _where_shape(ctx: ShapeContext) -> None:
    """The three inputs broadcast together; the element type is X's (or Y's when X's is unknown)."""
    elem = ctx.input_elem(1) if ctx.input_elem(1) is not None else ctx.input_elem(2)
    ctx.set_output(0, elem, broadcast(ctx, [ctx.input_shape(i) for i in range(3)]))
