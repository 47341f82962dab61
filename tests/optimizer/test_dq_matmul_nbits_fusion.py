"""Blockwise int4 DequantizeLinear + MatMul -> MatMulNBits: outputs before and after the pass agree
(int4 and uint4, with and without zero points, K not a multiple of the block), and what must not fuse
stays as it was."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest

import onyx
from onyx.ir.builder import GraphBuilder
from onyx.optimizer.dq_matmul_nbits_fusion import fuse_dq_matmul_nbits
from tests.optimizer._helpers import check_pass, ops, rand


def _qdq_model(k=100, n=24, block=32, signed=False, with_zp=True, extra_use=False, axis=0, fp16=False):
    rng = np.random.default_rng(k + n + block)
    kb = -(-k // block)
    pshape = (kb, n) if axis == 0 else (k, -(-n // block))
    fdt = np.float16 if fp16 else np.float32
    qtype = ml_dtypes.int4 if signed else ml_dtypes.uint4
    lo, hi = (-8, 8) if signed else (0, 16)
    b = GraphBuilder(opset=21)
    x = b.input("x", fdt, ["n", k])
    q = b.initializer("Wq", rng.integers(lo, hi, (k, n)).astype(qtype))
    s = b.initializer("Ws", (rng.random(pshape) * 0.1 + 0.01).astype(fdt))
    ins = [q, s]
    if with_zp:
        ins.append(b.initializer("Wz", rng.integers(lo, hi, pshape).astype(qtype)))
    w = b.DequantizeLinear(*ins, axis=axis, block_size=block)
    y = b.MatMul(x, w)
    b.output(y, "y", fdt, ["n", n])
    if extra_use:
        b.output(w, "w", fdt, [k, n])
    return b.model()


CASES = [
    dict(signed=False, with_zp=True),
    dict(signed=False, with_zp=False),
    dict(signed=True, with_zp=False),
    dict(signed=True, with_zp=True),
    dict(k=64, block=16, signed=True, with_zp=False),
    dict(k=300, n=8, block=128),
]


@pytest.mark.parametrize("case", CASES)
def test_fuses_and_agrees(case):
    feeds = {"x": rand(3, case.get("k", 100), seed=1)}
    model = check_pass(lambda: _qdq_model(**case), fuse_dq_matmul_nbits, feeds, rtol=1e-5, atol=1e-5)
    assert ops(model)["MatMulNBits"] == 1 and "DequantizeLinear" not in ops(model)
    assert not any(v.name in ("Wq", "Ws", "Wz") for v in model.graph.initializers.values())


def test_agrees_with_onnxruntime_unfused():
    """The fused model run by onyx against the QDQ model run by onnxruntime without its optimizer
    (onnxruntime's own fusion would quantize A to int8 at accuracy_level 4)."""
    model = _qdq_model(signed=True, with_zp=True)
    data = onyx.serialize(model)
    onyx.infer_shapes(model)
    assert fuse_dq_matmul_nbits(model)
    x = rand(4, 100, seed=2)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(data, so).run(None, {"x": x})[0]
    got = onyx.InferenceSession(onyx.serialize(model)).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    fused = [n for n in model.graph.nodes if n.op_type == "MatMulNBits"][0]
    assert fused.attr("accuracy_level") == 4 and fused.attr("K") == 100 and fused.attr("N") == 24


def test_float16():
    feeds = {"x": rand(2, 64, dtype=np.float16, seed=3)}
    check_pass(
        lambda: _qdq_model(k=64, block=32, fp16=True), fuse_dq_matmul_nbits, feeds, rtol=2e-3, atol=2e-3
    )


@pytest.mark.parametrize(
    "case",
    [
        dict(extra_use=True),  # the dequantized weight is also a graph output
        dict(axis=1, k=32, n=96, block=32),  # blocks along N
        dict(block=8, k=32),  # below MatMulNBits's smallest block
    ],
)
def test_leaves_alone(case):
    feeds = {"x": rand(3, case.get("k", 100), seed=4)}
    model = check_pass(lambda: _qdq_model(**case), fuse_dq_matmul_nbits, feeds, changed=False)
    assert "MatMulNBits" not in ops(model)


def test_in_extended_level():
    """A session at the extended level runs the fused model (the other passes leave the pattern to it);
    the basic level keeps the DequantizeLinear."""
    from onyx.optimizer.levels import passes_for

    assert fuse_dq_matmul_nbits in passes_for(2) and fuse_dq_matmul_nbits not in passes_for(1)
    for level, want in ((1, "DequantizeLinear"), (2, "MatMulNBits")):
        model = _qdq_model(signed=True, with_zp=False)
        onyx.optimize(model, level)
        assert want in ops(model)
    x = rand(2, 100, seed=6)
    plain = onyx.SessionOptions()
    plain.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = onyx.serialize(_qdq_model(signed=True, with_zp=False))
    want = onyx.InferenceSession(data, plain).run(None, {"x": x})[0]
    got = onyx.InferenceSession(data).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
