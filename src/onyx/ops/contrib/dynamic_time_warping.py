"""com.microsoft DynamicTimeWarping: the cheapest monotone path through a cost matrix (Whisper's word
timestamps): moves go down, right or diagonally; the output is the path's (row, column) pairs as an
int32 [2, length] tensor. Ties go as in Whisper's and onnxruntime's loops: the diagonal only when it
is strictly cheapest, then the step down when strictly cheapest, else the step right.

The accumulated costs are computed one anti-diagonal at a time (each depends on the two before it),
so the loop runs M + N times over vectors instead of M * N times over numbers.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.registry import op, shape_rule

INT32 = 6
DIAGONAL, DOWN, RIGHT = 0, 1, 2


def _trace(x: np.ndarray) -> np.ndarray:
    """(M + 1, N + 1) moves that reach each cell at the least cost (row and column 0: the border)."""
    m, n = x.shape
    cost = np.full((m + 1, n + 1), np.inf, dtype=x.dtype)
    cost[0, 0] = 0
    trace = np.full((m + 1, n + 1), RIGHT, dtype=np.int8)
    trace[1:, 0] = DOWN
    for k in range(2, m + n + 1):  # cells with i + j == k, 1 <= i <= m, 1 <= j <= n
        i = np.arange(max(1, k - n), min(m, k - 1) + 1)
        j = k - i
        c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
        take0 = (c0 < c1) & (c0 < c2)
        take1 = ~take0 & (c1 < c0) & (c1 < c2)
        best = np.where(take0, c0, np.where(take1, c1, c2))
        cost[i, j] = x[i - 1, j - 1] + best
        trace[i, j] = np.where(take0, DIAGONAL, np.where(take1, DOWN, RIGHT))
    return trace


def _path(trace: np.ndarray) -> np.ndarray:
    i, j = trace.shape[0] - 1, trace.shape[1] - 1
    rows, cols = [], []
    while i > 0 or j > 0:
        rows.append(i - 1)
        cols.append(j - 1)
        t = trace[i, j]
        if t == DIAGONAL:
            i, j = i - 1, j - 1
        elif t == DOWN:
            i -= 1
        else:
            j -= 1
    return np.array([rows[::-1], cols[::-1]], dtype=np.int32)


@op("DynamicTimeWarping", domain="com.microsoft", since=1)
def dynamic_time_warping(input):  # noqa: A002 - the input's name
    x = np.asarray(input)
    if x.ndim == 3 and x.shape[0] == 1:
        x = x[0]
    if x.ndim != 2:
        raise InvalidArgument(f"DynamicTimeWarping: input must be [M, N] or [1, M, N], got shape {x.shape}")
    if x.dtype != np.float32:
        raise InvalidArgument(f"DynamicTimeWarping: input must be float, got {x.dtype}")
    if 0 in x.shape:
        return np.zeros((2, 0), np.int32)
    return _path(_trace(x))


@shape_rule("DynamicTimeWarping", domain="com.microsoft")
def _shape(ctx) -> None:
    ctx.set_output(0, INT32, [2, ctx.new_dim()])
