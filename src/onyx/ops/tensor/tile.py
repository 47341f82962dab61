"""Tile: repeat the tensor along each axis (opset 1: ``tiles`` copies along one ``axis``)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule
from onyx.ops.tensor import _shapes as S
from onyx.ops.tensor._common import int_list, norm_axis, scalar_int
from onyx.shape_inference import ShapeContext


def tile(x, reps: list[int]) -> np.ndarray:
    x = np.asarray(x)
    if len(reps) != x.ndim:
        raise InvalidArgument(
            f"Tile: repeats has {len(reps)} entries, input shape {x.shape} has rank {x.ndim}"
        )
    if any(r < 0 for r in reps):
        raise InvalidArgument(f"Tile: repeats {reps} must be non-negative")
    if all(r == 1 for r in reps):
        return x
    return np.tile(x, reps)


@op("Tile", since=1, until=6)
def tile_1(input, tiles, axis):
    x = np.asarray(input)
    reps = [1] * x.ndim
    reps[norm_axis(scalar_int(axis, "Tile: axis"), x.ndim)] = scalar_int(tiles, "Tile: tiles")
    return tile(x, reps)


@op("Tile", since=6)
def tile_6(input, repeats):
    return tile(input, int_list(repeats, "Tile: repeats"))


# ---------------------------------------------------------------------------------------------------
# shape rule


@shape_rule("Tile")
@S.with_input_shape()
def _tile_shape(ctx: ShapeContext, elem: int | None, src: list) -> None:
    if ctx.opset < 6:
        tiles, axis = S.int_values(ctx, 1), S.int_values(ctx, 2)
        bad_tiles = tiles is not None and len(tiles) != 1
        if axis is None or S.plain_ints(axis) is None or len(axis) != 1 or bad_tiles:
            ctx.set_output(0, elem, S.fresh(ctx, len(src)))
            return
        a = S.norm_axis(ctx, axis[0], len(src), "Tile: axis")
        reps: list = [1] * len(src)
        reps[a] = ctx.new_dim() if tiles is None else tiles[0]
    else:
        reps = S.int_values(ctx, 1)
        if reps is None:
            ctx.set_output(0, elem, S.fresh(ctx, len(src)))
            return
        if len(reps) != len(src):
            ctx.fail(f"Tile: repeats has {len(reps)} entries, input shape {src} has rank {len(src)}")
    if any(S.is_int(r) and r < 0 for r in reps):
        ctx.fail(f"Tile: repeats {reps} must be non-negative")
    ctx.set_output(0, elem, [None if d is None else d * r for d, r in zip(src, reps)])
