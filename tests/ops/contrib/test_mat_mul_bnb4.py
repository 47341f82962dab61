"""com.microsoft MatMulBnb4 (FP4 and NF4 weights) against onnxruntime, constant and fed weights."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import both, run_onyx

R = np.random.default_rng(0)


def _weights(n, k, block):
    b = R.integers(0, 256, (n * k + 1) // 2).astype(np.uint8)
    absmax = (R.random((n * k + block - 1) // block) + 0.5).astype(np.float32)
    return b, absmax


@pytest.mark.parametrize("quant_type", [0, 1])
@pytest.mark.parametrize("n,k,block", [(8, 32, 16), (5, 7, 16), (16, 64, 32), (3, 100, 64)])
@pytest.mark.parametrize("a_shape", [(3,), (2, 3)])
def test_against_onnxruntime(quant_type, n, k, block, a_shape):
    a = R.standard_normal((*a_shape, k)).astype(np.float32)
    b, absmax = _weights(n, k, block)
    (got,), (want,) = both(
        "MatMulBnb4", [a, b, absmax], [T.FLOAT], K=k, N=n, block_size=block, quant_type=quant_type
    )
    assert got.shape == want.shape and got.dtype == want.dtype
    # K products of |a| * |w| <= |a| * absmax summed in another order
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=k * 1.5 * 4 * np.finfo(np.float32).eps * 4)


def test_float16():
    a = R.standard_normal((4, 32)).astype(np.float16)
    b, absmax = _weights(8, 32, 16)
    (got,), (want,) = both(
        "MatMulBnb4", [a, b, absmax.astype(np.float16)], [T.FLOAT16], K=32, N=8, block_size=16, quant_type=1
    )
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize(
    "attrs,match",
    [
        (dict(block_size=24), "power of 2"),
        (dict(quant_type=2), "quant_type"),
        (dict(N=9), "B must be uint8"),
        (dict(transB=0), "transB=0"),
    ],
)
def test_bad_inputs(attrs, match):
    a = R.standard_normal((2, 32)).astype(np.float32)
    b, absmax = _weights(8, 32, 16)
    base = dict(K=32, N=8, block_size=16, quant_type=1)
    base.update(attrs)
    with pytest.raises(OnyxError, match=match):
        run_onyx("MatMulBnb4", [a, b, absmax], [T.FLOAT], **base)


def test_constant_weights_are_dequantized_once_and_match():
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    import onyx

    b, absmax = _weights(16, 64, 32)
    node = helper.make_node("MatMulBnb4", ["a", "b", "m"], ["y"], domain="com.microsoft", K=64, N=16,
                            block_size=32, quant_type=1)  # fmt: skip
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("a", T.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", T.FLOAT, [None, 16])],
        initializer=[numpy_helper.from_array(b, "b"), numpy_helper.from_array(absmax, "m")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    data = helper.make_model(graph, opset_imports=opsets).SerializeToString()
    a = R.standard_normal((5, 64)).astype(np.float32)
    s = onyx.InferenceSession(data)
    got = [s.run(None, {"a": a})[0] for _ in range(2)]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-4)
