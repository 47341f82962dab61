"""com.microsoft NGramRepeatBlock against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)
IDS = np.array([[1, 2, 3, 1, 2], [4, 4, 4, 4, 4], [0, 1, 2, 3, 0]], np.int64)


@pytest.mark.parametrize("ngram_size", [1, 2, 3, 4, 5, 6])
def test_against_onnxruntime(ngram_size):
    scores = R.standard_normal((3, 6)).astype(np.float32)
    assert_equal_outputs(*both("NGramRepeatBlock", [IDS, scores], [T.FLOAT], ngram_size=ngram_size))


def test_random_sequences():
    ids = R.integers(0, 4, (4, 30)).astype(np.int64)
    scores = R.standard_normal((4, 4)).astype(np.float32)
    assert_equal_outputs(*both("NGramRepeatBlock", [ids, scores], [T.FLOAT], ngram_size=2))


def test_bad_inputs():
    with pytest.raises(OnyxError, match="outside the vocabulary"):
        run_onyx("NGramRepeatBlock", [IDS, np.zeros((3, 2), np.float32)], [T.FLOAT], ngram_size=1)
    with pytest.raises(OnyxError, match=r"\(batch, sequence\)"):
        run_onyx("NGramRepeatBlock", [IDS[0], np.zeros((3, 6), np.float32)], [T.FLOAT], ngram_size=2)
