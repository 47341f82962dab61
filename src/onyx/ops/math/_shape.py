"""Shape-rule helpers shared by the math, activation and linalg families (not auto-imported)."""

from __future__ import annotations

from onyx.ir.dtypes import DataType
from onyx.ir.symbolic import DimLike
from onyx.shape_inference import ShapeContext, broadcast_dims

BOOL = int(DataType.BOOL)


def broadcast(ctx: ShapeContext, shapes: list) -> list | None:
    """:func:`broadcast_dims`, failing through ``ctx.fail`` so that the message names the node (the
    driver's helper raises without it)."""
    try:
        return broadcast_dims(shapes)
    except Exception as e:  # noqa: BLE001 - the driver's private _RuleFailure
        ctx.fail(f"inputs {shapes} do not broadcast: {e}")
        raise


def elementwise_rule(ctx: ShapeContext) -> None:
    """Output 0: the broadcast of all inputs, element type of input 0."""
    ctx.set_output(0, ctx.input_elem(0), broadcast(ctx, _present_shapes(ctx)))


def compare_rule(ctx: ShapeContext) -> None:
    """Broadcast shape, boolean output."""
    ctx.set_output(0, BOOL, broadcast(ctx, _present_shapes(ctx)))


def _present_shapes(ctx: ShapeContext) -> list:
    return [ctx.input_shape(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]


def legacy_elementwise_rule(ctx: ShapeContext) -> None:
    """Binary ops with the opset<7 ``broadcast``/``axis`` form: there B is broadcast into A, so the
    output has A's shape; from opset 7 numpy broadcasting. Element type of input 0."""
    _legacy(ctx, ctx.input_elem(0))


def legacy_compare_rule(ctx: ShapeContext) -> None:
    """As :func:`legacy_elementwise_rule`, with a boolean output (comparisons, And/Or/Xor)."""
    _legacy(ctx, BOOL)


def _legacy(ctx: ShapeContext, elem: int | None) -> None:
    if ctx.opset < 7:
        ctx.set_output(0, elem, ctx.input_shape(0))
    else:
        ctx.set_output(0, elem, broadcast(ctx, [ctx.input_shape(0), ctx.input_shape(1)]))


def merge_dim(ctx: ShapeContext, a: DimLike | None, b: DimLike | None, what: str) -> DimLike | None:
    """Two dims that must be equal: the more specific one; static dims that differ fail."""
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            ctx.fail(f"{what}: dims {a} and {b} differ")
        return a
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return a if a is not None else b


def merge_shapes(ctx: ShapeContext, a: list | None, b: list | None, what: str) -> list | None:
    """Two shapes that must be identical (no broadcasting)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        ctx.fail(f"{what}: ranks {len(a)} and {len(b)} differ ({a} vs {b})")
    return [merge_dim(ctx, x, y, what) for x, y in zip(a, b)]


def check_axis(ctx: ShapeContext, axis: int, rank: int | None, what: str) -> None:
    """Fail on an axis outside [-rank, rank) (a 0-d input accepts 0 and -1, as the kernels do)."""
    if rank is None:
        return
    if not -rank <= axis < rank and not (rank == 0 and axis in (0, -1)):
        ctx.fail(f"{what}: axis {axis} out of range for rank {rank}")
