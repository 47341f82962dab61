"""com.microsoft CDist against onnxruntime (float, double; sqeuclidean, euclidean) and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)


def _bound(a, b, metric):
    """|a|^2 + |b|^2 - 2ab summed in another order than onnxruntime's: about K * eps * (|a|^2 + |b|^2)."""
    eps = np.finfo(a.dtype).eps
    scale = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :]
    err = 4 * a.shape[1] * eps * scale
    return np.sqrt(err) if metric == "euclidean" else err  # sqrt(d + e) - sqrt(d) <= sqrt(e)


@pytest.mark.parametrize("dtype,elem", [(np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE)])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("n,m,k", [(50, 35, 7), (1, 1, 1), (3, 10, 64), (0, 4, 3)])
def test_against_onnxruntime(dtype, elem, metric, n, m, k):
    a = (R.standard_normal((n, k)) * 3).astype(dtype)
    b = np.concatenate([a[:2], R.standard_normal((m, k)).astype(dtype)])  # equal rows: distance 0
    (got,), (want,) = both("CDist", [a, b], [elem], metric=metric)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.all(got >= 0)
    assert np.all(np.abs(got - want) <= _bound(a, b, metric))


def test_default_metric_is_sqeuclidean():
    a = np.array([[0.0, 0.0], [1.0, 1.0]], np.float32)
    (got,) = run_onyx("CDist", [a, a], [TensorProto.FLOAT])
    np.testing.assert_allclose(got, [[0, 2], [2, 0]])


@pytest.mark.parametrize(
    "a,b,attrs,match",
    [
        (np.zeros((2, 3), "f"), np.zeros((2, 4), "f"), {}, r"\[N, K\] and B \[M, K\]"),
        (np.zeros((2, 3), "f"), np.zeros(3, "f"), {}, r"\[N, K\]"),
        (np.zeros((2, 3), "f"), np.zeros((2, 3)), {}, "float or double"),
        (np.zeros((2, 3), "i"), np.zeros((2, 3), "i"), {}, "float or double"),
        (np.zeros((2, 3), "f"), np.zeros((2, 3), "f"), {"metric": "cosine"}, "metric"),
    ],
)
def test_bad_inputs(a, b, attrs, match):
    with pytest.raises(OnyxError, match=match):
        run_onyx("CDist", [a, b], [TensorProto.FLOAT], **attrs)
