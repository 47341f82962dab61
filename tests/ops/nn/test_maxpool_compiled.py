"""2-D MaxPool: the compiled loop (onyx.kernels._pool) gives what the numpy path gives bit for bit (NaNs
included) and what onnxruntime gives, over kernels, strides, dilations, pads and ceil mode."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from tests.ops.nn._conv_util import run_both

CASES = [
    # (H, W, kernel, strides, pads, dilations, ceil_mode)
    (112, 112, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0),  # ResNet's stem pool
    (8, 9, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (13, 11, (3, 2), (2, 3), (1, 0, 1, 1), (1, 2), 1),
    (7, 9, (5, 5), (1, 1), (2, 2, 2, 2), (2, 1), 0),
    (12, 13, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1),
]


def _model(case, dtype):
    h, w, k, s, pads, d, ceil = case
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    node = helper.make_node(
        "MaxPool",
        ["X"],
        ["Y"],
        kernel_shape=list(k),
        strides=list(s),
        pads=list(pads),
        dilations=list(d),
        ceil_mode=ceil,
    )
    g = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("X", elem, [2, 3, h, w])],
        [helper.make_tensor_value_info("Y", elem, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    x = np.random.default_rng(h * w).normal(size=(2, 3, h, w)).astype(dtype)
    return m.SerializeToString(), {"X": x}


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_max_pool_compiled_matches_numpy_and_onnxruntime(case, monkeypatch):
    model, feeds = _model(case, np.float32)
    fast, plain = run_both(model, feeds, monkeypatch)
    np.testing.assert_array_equal(fast[0], plain[0])
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(fast[0], want)


@pytest.mark.parametrize("case", [CASES[0], CASES[2]], ids=["stem", "odd"])
def test_max_pool_compiled_nans_and_float64(case, monkeypatch):
    model, feeds = _model(case, np.float64)
    feeds["X"].flat[::7] = np.nan
    feeds["X"][0, 0, :3] = np.nan  # whole windows of NaN
    fast, plain = run_both(model, feeds, monkeypatch)
    assert fast[0].dtype == np.float64
    np.testing.assert_array_equal(fast[0], plain[0])
    assert np.isnan(fast[0]).any()
