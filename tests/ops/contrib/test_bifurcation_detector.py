"""com.microsoft BifurcationDetector against onnxruntime on random token streams."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)


def _case(seed: int):
    r = np.random.default_rng(seed)
    src = r.integers(0, 4, r.integers(1, 12)).astype(np.int64)
    cur = r.integers(0, 4, r.integers(1, 6)).astype(np.int64)
    prev = np.array(int(r.integers(0, len(src) + 1)), np.int64)
    pred = None
    if seed % 3:
        n = len(src) + 1 - int(prev)
        pred = np.concatenate([src[int(prev) :], [9]])[:n].astype(np.int64)  # agrees to the end
        if seed % 2:
            pred = r.integers(0, 4, n).astype(np.int64)
    lo = int(r.integers(1, 3))
    return [src, cur, prev, pred], lo, lo + int(r.integers(0, 3))


@pytest.mark.parametrize("seed", range(60))
def test_against_onnxruntime(seed):
    ins, lo, hi = _case(seed)
    assert_equal_outputs(
        *both("BifurcationDetector", ins, [T.INT64, T.INT64], min_ngram_size=lo, max_ngram_size=hi)
    )


def test_bad_inputs():
    src, cur = np.arange(5, dtype=np.int64), np.arange(2, dtype=np.int64)
    attrs = dict(min_ngram_size=1, max_ngram_size=3)
    with pytest.raises(OnyxError, match="pred_tokens has 2 tokens, expected 4"):
        run_onyx("BifurcationDetector", [src, cur, np.array(2, np.int64), cur], [T.INT64, T.INT64], **attrs)
    with pytest.raises(OnyxError, match="prev_suffix_match_idx 6"):
        run_onyx("BifurcationDetector", [src, cur, np.array(6, np.int64), cur], [T.INT64, T.INT64], **attrs)
    with pytest.raises(OnyxError, match="min_ngram_size"):
        run_onyx(
            "BifurcationDetector",
            [src, cur, np.array(0, np.int64)],
            [T.INT64, T.INT64],
            min_ngram_size=3,
            max_ngram_size=2,
        )
