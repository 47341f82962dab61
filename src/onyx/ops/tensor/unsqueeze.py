"""Unsqueeze: insert size-1 dimensions at ``axes`` of the output
(an attribute before opset 13, an input from 13)."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op
from onyx.ops.tensor._common import int_list, norm_axes


def unsqueeze(x, axes: list[int]) -> np.ndarray:
    x = np.asarray(x)
    r = x.ndim + len(axes)
    ax = set(norm_axes(axes, r, "Unsqueeze: axes"))
    it = iter(x.shape)
    return x.reshape([1 if i in ax else next(it) for i in range(r)])


@op("Unsqueeze", since=1, until=13)
def unsqueeze_1(data, *, axes):
    return unsqueeze(data, list(axes))


@op("Unsqueeze", since=13)
def unsqueeze_13(data, axes):
    return unsqueeze(data, int_list(axes, "Unsqueeze: axes"))
