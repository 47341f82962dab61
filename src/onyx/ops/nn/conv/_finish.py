"""How a convolution's output is finished: bias, the residual ``z`` (FusedConv's Z) and the activation,
in one pass by the kernels where they apply the activation, else by numpy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from onyx.kernels.conv import NO_ACTIVATION, Activation


@dataclass(frozen=True)
class Finish:
    """``activation``: the activation a kernel applies (NO_ACTIVATION for none), or None when numpy
    applies ``post`` (an in-place function of a block) after the bias and ``z``."""

    activation: Activation | None
    post: Callable[[np.ndarray], np.ndarray | None] | None

    @classmethod
    def of(cls, act, post) -> Finish:
        """From an op's activation as (ONNX op name, params) and its numpy ``post``."""
        if post is None:
            return cls(NO_ACTIVATION, None)
        kact = Activation.from_onnx(*act) if act is not None else None
        return cls(kact, None if kact is not None else post)

    @property
    def fused(self) -> bool:
        """Whether the kernels apply the whole activation."""
        return self.activation is not None

    def numpy_post(self, y: np.ndarray) -> np.ndarray:
        """``y`` with the activation applied by numpy (kernel activations included), in place."""
        if self.activation is not None:
            self.activation.apply_(y)
            return y
        if self.post is None:
            return y
        r = self.post(y)
        return y if r is None else r


def threads_of(ctx) -> int:
    """The thread count a session asks its kernels for (0: the default)."""
    return int(getattr(ctx, "intra_op_num_threads", 0) or 0) if ctx is not None else 0
