"""com.microsoft WordConvEmbedding against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)
SEQ = np.array(
    [[3, 4, 5, 0, 0, 0], [2, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 1, 2, 0, 0, 0], [5, 0, 3, 0, 0, 0]],
    np.int32,
)


def _weights(window, filters=4, size=3, chars=7):
    w = R.standard_normal((filters, 1, window, size)).astype(np.float32)
    return (
        w,
        R.standard_normal(filters).astype(np.float32),
        R.standard_normal((chars, size)).astype(np.float32),
    )


@pytest.mark.parametrize("window", [1, 2, 3, 6])
def test_against_onnxruntime(window):
    w, b, c = _weights(window)
    (got,), (want,) = both("WordConvEmbedding", [SEQ, w, b, c], [T.FLOAT])
    assert got.shape == want.shape and got.dtype == want.dtype
    written = SEQ[:, 0] > 0  # onnxruntime leaves the rows of empty words unwritten; onyx writes zeros
    np.testing.assert_allclose(got[written], want[written], rtol=1e-5, atol=1e-6)
    assert (got[~written] == 0).all()


@pytest.mark.parametrize(
    "attrs,match",
    [(dict(embedding_size=5), "embedding_size"), (dict(conv_window_size=3), "conv_window_size"),
     (dict(char_embedding_size=2), "char_embedding_size")],
)  # fmt: skip
def test_bad_attributes(attrs, match):
    w, b, c = _weights(2)
    with pytest.raises(OnyxError, match=match):
        run_onyx("WordConvEmbedding", [SEQ, w, b, c], [T.FLOAT], **attrs)


def test_bad_ids():
    w, b, c = _weights(2)
    with pytest.raises(OnyxError, match="char ids"):
        run_onyx("WordConvEmbedding", [SEQ + 10, w, b, c], [T.FLOAT])
