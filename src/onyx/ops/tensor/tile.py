"""Tile: repeat the tensor along each axis (opset 1: ``tiles`` copies along one ``axis``)."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list, norm_axis, scalar_int


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
