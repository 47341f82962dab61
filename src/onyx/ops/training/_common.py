"""Helpers shared by the optimizer kernels of ai.onnx.preview.training."""

from __future__ import annotations

from typing import Any

import numpy as np

from onyx.errors import InvalidArgument


def scalar(value: Any, what: str) -> float:
    arr = np.asarray(value)
    if arr.size != 1:
        raise InvalidArgument(f"{what} must be a scalar, got shape {arr.shape}")
    return float(arr.reshape(-1)[0])


def groups(inputs: tuple, per_tensor: int, op_name: str) -> list[list[np.ndarray]]:
    """Split the variadic inputs into ``per_tensor`` groups of n tensors each (X..., G..., H...)."""
    if not inputs or len(inputs) % per_tensor:
        raise InvalidArgument(
            f"{op_name}: {len(inputs)} tensor inputs after R and T; "
            f"expected a positive multiple of {per_tensor}"
        )
    n = len(inputs) // per_tensor
    out = [[np.asarray(t) for t in inputs[k * n : (k + 1) * n]] for k in range(per_tensor)]
    for i in range(n):
        shapes = [g[i].shape for g in out]
        if any(s != shapes[0] for s in shapes):
            raise InvalidArgument(f"{op_name}: tensor {i} and its state have different shapes {shapes}")
    return out


def optimizer_shape_rule(per_tensor: int, per_output: int):
    """Adagrad (3 inputs per tensor: X, G, H; 2 outputs: X, H), Momentum (X, G, V; X, V) and Adam
    (X, G, V, H; X, V, H): inputs R, T, then each group of n tensors; output group k has the type of
    input group k (skipping the gradients G)."""

    def rule(ctx) -> None:
        n_groups = ctx.num_inputs - 2
        if n_groups < 0 or n_groups % per_tensor:
            ctx.fail(f"{ctx.num_inputs} inputs: expected R, T and {per_tensor} groups of tensors")
        n = n_groups // per_tensor
        if ctx.num_outputs > per_output * n:
            ctx.fail(f"{ctx.num_outputs} outputs for {n} tensors (at most {per_output * n})")
        groups = [0] + list(range(2, per_tensor))  # X, then V/H (G is group 1)
        for k, g in enumerate(groups):
            for i in range(n):
                ctx.same_as_input(2 + g * n + i, k * n + i)

    return rule
