"""A batch row that is entirely padding: the fused attention must give what the unfused graph gives
(its Where(IsNaN) guard turns the all -inf softmax row into zeros), never NaN."""

import warnings

import numpy as np
import pytest

import onyx
from tests.models import exporters


@pytest.mark.parametrize("variant", ["torchscript", "dynamo"])
def test_bert_with_a_fully_padded_row(variant):
    try:
        path, _ = exporters.build_torch("bert_tiny", variant)
    except exporters.ExportFailed as e:
        pytest.skip(str(e))
    ids = np.random.default_rng(0).integers(0, 1000, (2, 16)).astype(np.int64)
    mask = np.ones((2, 16), np.int64)
    mask[1, :] = 0
    feeds = {"input_ids": ids, "attention_mask": mask}
    so = onyx.SessionOptions()
    so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        plain = onyx.InferenceSession(str(path), so).run(None, feeds)
        fused = onyx.InferenceSession(str(path)).run(None, feeds)
    for a, b in zip(plain, fused):
        assert not np.isnan(b).any()
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4 * max(1.0, float(np.abs(a).max())))
