"""Small models and data for the Ray batch-inference tests, built with onyx's GraphBuilder."""

from __future__ import annotations

import os

import numpy as np

from onyx.ir.builder import GraphBuilder
from onyx.model_io import serialize
from onyx.ray import OnyxPredictor

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def dense() -> bytes:
    """float32 [N, 4] -> scores [N, 3] = x @ W + b and label int64 [N] = argmax (a dynamic batch)."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 4])
    s = b.Add(b.MatMul(x, b.const(W)), b.const(B))
    b.output(s, "scores", np.float32, ["N", 3])
    b.output(b.ArgMax(s, axis=1, keepdims=0), "label", np.int64, ["N"])
    return serialize(b.model())


def text() -> bytes:
    """string [N] -> upper-cased string [N] (a text model)."""
    b = GraphBuilder(opset=17)
    s = b.input("text", "STRING", ["N"])
    b.output(b.StringNormalizer(s, case_change_action="UPPER"), "upper", "STRING", ["N"])
    return serialize(b.model())


def image() -> bytes:
    """float32 [N, 2, 3, 3] images -> doubled [N, 2, 3, 3] and per-channel sums [N, 2]."""
    b = GraphBuilder(opset=17)
    x = b.input("image", np.float32, ["N", 2, 3, 3])
    b.output(b.Mul(x, b.const(np.array(2, np.float32))), "doubled", np.float32, ["N", 2, 3, 3])
    sums = b.ReduceSum(x, b.const(np.array([2, 3], np.int64)), keepdims=0)
    b.output(sums, "sums", np.float32, ["N", 2])
    return serialize(b.model())


def mixed() -> bytes:
    """Numeric, string and tensor columns at once: x [N, 4] -> y = 2x - 1; text [N] -> upper-cased;
    image [N, 2, 3, 3] -> per-channel sums [N, 2] (elementwise and small sums: exact in any batch)."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 4])
    s = b.input("text", "STRING", ["N"])
    img = b.input("image", np.float32, ["N", 2, 3, 3])
    y = b.Sub(b.Mul(x, b.const(np.array(2, np.float32))), b.const(np.array(1, np.float32)))
    b.output(y, "y", np.float32, ["N", 4])
    b.output(b.StringNormalizer(s, case_change_action="UPPER"), "upper", "STRING", ["N"])
    sums = b.ReduceSum(img, b.const(np.array([2, 3], np.int64)), keepdims=0)
    b.output(sums, "sums", np.float32, ["N", 2])
    return serialize(b.model())


def mixed_data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n rows for :func:`mixed`, with an id column; images hold small integers (exact sums)."""
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "épée", ""], dtype=object)
    return {
        "id": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal((n, 4)).astype(np.float32),
        "text": words[rng.integers(0, len(words), n)],
        "image": rng.integers(0, 9, (n, 2, 3, 3)).astype(np.float32),
    }


def fixed(batch: int) -> bytes:
    """float32 [batch, 4] -> [batch, 4] * 3 + 1: a model whose batch dimension is fixed."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [batch, 4])
    y = b.Add(b.Mul(x, b.const(np.array(3, np.float32))), b.const(np.array(1, np.float32)))
    b.output(y, "y", np.float32, [batch, 4])
    return serialize(b.model())


def lookup() -> bytes:
    """int64 [N] -> float32 [N] = table[i] for a table of 10: an index past 9 fails that row."""
    b = GraphBuilder(opset=17)
    i = b.input("i", np.int64, ["N"])
    table = np.arange(10, dtype=np.float32) * 1.5
    b.output(b.Gather(b.const(table), i, axis=0), "value", np.float32, ["N"])
    return serialize(b.model())


def features(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n rows: an id column and the dense model's x."""
    rng = np.random.default_rng(seed)
    return {"id": np.arange(n, dtype=np.int64), "x": rng.standard_normal((n, 4)).astype(np.float32)}


class DiesOnce(OnyxPredictor):
    """Kills its own process (as a crash would) on the batch holding row id ``DIE_AT``, the first time only.

    A marker file, created just before dying, lets the restarted actor score that batch normally. The
    marker's directory comes from the ONYX_TEST_MARKER_DIR environment variable of the Ray workers.
    """

    DIE_AT = 1234

    def __call__(self, batch):
        marker = os.path.join(os.environ["ONYX_TEST_MARKER_DIR"], "died")
        if self.DIE_AT in batch["id"] and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(1)
        return super().__call__(batch)
