"""Phase-plane convolution with one BLAS GEMM per kernel offset reading the planes in place (enough
input channels) against the column-matrix GEMM and onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onyx
from onyx.kernels import blas, conv_gemm
from onyx.kernels import conv as kernels
from onyx.ops.nn.conv import im2col
from onyx.ops.nn.conv import planes as conv_mod
from tests.ops.nn.test_conv_epilogue import _model

pytestmark = pytest.mark.skipif(not blas.available(np.float32), reason="numpy has no OpenBLAS here")

CASES = [
    # (batch, C, M, spatial, kernel, stride, dilation, pads, group)
    (1, 32, 16, (20, 18), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),  # a ResNet 3x3 layer
    (2, 40, 24, (21, 22), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1),  # stride 2: four phase planes
    (1, 33, 8, (25, 19), (5, 3), (2, 1), (2, 1), (2, 0, 1, 3), 1),  # dilated, asymmetric everything
    (1, 4, 6, (16, 16), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), 1),  # few channels: forced below
]


def _onyx(model, feeds, min_channels, monkeypatch, min_span=0):
    monkeypatch.setattr(conv_mod, "DIRECT_MIN_CHANNELS", min_channels)
    monkeypatch.setattr(conv_mod, "DIRECT_MIN_SPAN", min_span)
    return onyx.InferenceSession(model).run(None, feeds)[0]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("act", [("", []), ("Relu", []), ("Clip", [0.0, 6.0])], ids=["none", "Relu", "Clip"])
@pytest.mark.parametrize("with_z", [False, True], ids=["noZ", "Z"])
def test_direct_matches_columns_and_onnxruntime(case, act, with_z, monkeypatch):
    model, feeds = _model(case, act, np.float32, with_z=with_z)
    direct = _onyx(model, feeds, 1, monkeypatch)
    columns = _onyx(model, feeds, 1 << 30, monkeypatch)
    # float32 sums of K = C*kh*kw products of N(0, 1) values in another order: a few eps * K apart
    k = case[1] * int(np.prod(case[4]))
    np.testing.assert_allclose(direct, columns, rtol=1e-5, atol=2 * np.finfo(np.float32).eps * k)
    if not with_z or act[0]:  # onnxruntime's FusedConv wants an activation
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        np.testing.assert_allclose(direct, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bias", [True, False])
def test_direct_float64(bias, monkeypatch):
    model, feeds = _model(CASES[1], ("Clip", [-0.5, 0.5]), np.float64, bias=bias, with_z=True)
    direct = _onyx(model, feeds, 1, monkeypatch)
    columns = _onyx(model, feeds, 1 << 30, monkeypatch)
    assert direct.dtype == np.float64
    np.testing.assert_allclose(direct, columns, rtol=1e-12, atol=1e-12)


def test_without_blas_the_columns_path_runs(monkeypatch):
    model, feeds = _model(CASES[0], ("Relu", []), np.float32)
    want = _onyx(model, feeds, 1 << 30, monkeypatch)
    calls = []
    monkeypatch.setattr(blas, "available", lambda dtype: False)
    monkeypatch.setattr(blas, "gemm_taps", lambda *a, **k: calls.append(a))
    got = _onyx(model, feeds, 1, monkeypatch)
    assert not calls
    np.testing.assert_array_equal(got, want)


def _spy_taps(monkeypatch) -> list:
    """The number of kernel offsets of each per-offset GEMM call (blas.gemm_taps)."""
    calls = []
    real = blas.gemm_taps
    monkeypatch.setattr(blas, "gemm_taps", lambda a, *r: (calls.append(a.shape[0]), real(a, *r)))
    return calls


def test_direct_path_is_taken_for_wide_inputs(monkeypatch):
    model, feeds = _model(CASES[0], ("Relu", []), np.float32)
    calls = _spy_taps(monkeypatch)
    _onyx(model, feeds, conv_mod.DIRECT_MIN_CHANNELS, monkeypatch)
    assert calls == [9]  # one GEMM per kernel offset, accumulated


def _gemm_calls(model, feeds, monkeypatch) -> int:
    """GEMMs over phase-plane windows (the per-offset path) in one run at the shipped bounds."""
    calls = _spy_taps(monkeypatch)
    onyx.InferenceSession(model).run(None, feeds)
    return sum(calls)


def test_strided_narrow_blocks_take_the_column_matrix(monkeypatch):
    # stride 2 with 11 x 12 positions per block: one GEMM over the column matrix, even with many
    # channels; the same layer at stride 1 keeps a GEMM per kernel offset
    strided = (1, 64, 16, (21, 22), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1)
    model, feeds = _model(strided, ("Relu", []), np.float32)
    assert _gemm_calls(model, feeds, monkeypatch) == 0
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(onyx.InferenceSession(model).run(None, feeds)[0], want, rtol=1e-4, atol=1e-4)
    model, feeds = _model(strided[:5] + ((1, 1),) + strided[6:], ("Relu", []), np.float32)
    assert _gemm_calls(model, feeds, monkeypatch) == 9


def _columns_with_depths(model, feeds, monkeypatch):
    """The column-matrix path's output and the inner dimension of every GEMM (blas.matmul) it ran."""
    depths = []
    real = conv_mod.blas.matmul
    monkeypatch.setattr(
        conv_mod.blas, "matmul", lambda a, b, **k: (depths.append(a.shape[-1]), real(a, b, **k))[1]
    )
    try:
        return _onyx(model, feeds, 1 << 30, monkeypatch), depths
    finally:
        monkeypatch.setattr(conv_mod.blas, "matmul", real)


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("act", [("", []), ("Relu", []), ("LeakyRelu", [0.1])], ids=["none", "Relu", "Leaky"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_finished_by_numpy(case, act, bias, dtype, monkeypatch):
    """Without the compiled epilogue the bias rides in the column GEMM and a ReLU in the copy out."""
    model, feeds = _model(case, act, dtype, bias=bias)
    monkeypatch.setattr(kernels, "has_compiled", lambda dtype: False)
    got, depths = _columns_with_depths(model, feeds, monkeypatch)
    assert depths == [case[1] * int(np.prod(case[4])) + bias]  # one GEMM, a column of biases when given
    assert got.dtype == dtype
    direct = _onyx(model, feeds, 1, monkeypatch)
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-4 if dtype == np.float32 else 1e-10)
    if dtype == np.float64:
        return  # onnxruntime's FusedConv is float32 only
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_columns_keep_the_bias_pass_for_big_weights(monkeypatch):
    """Past FOLD_MAX weight elements the bias is added after the GEMM, as before: the same results."""
    model, feeds = _model(CASES[1], ("Relu", []), np.float32)
    monkeypatch.setattr(kernels, "has_compiled", lambda dtype: False)
    folded = _onyx(model, feeds, 1 << 30, monkeypatch)
    monkeypatch.setattr(conv_gemm, "FOLD_MAX", 0)
    plain, depths = _columns_with_depths(model, feeds, monkeypatch)
    assert depths == [CASES[1][1] * 9]
    np.testing.assert_allclose(plain, folded, rtol=1e-5, atol=1e-4)


PATCH_CASES = [
    # (batch, C, M, spatial, kernel, stride, dilation, pads, group): kernel == stride, no padding
    (1, 3, 8, (64, 64), (16, 16), (16, 16), (1, 1), (0, 0, 0, 0), 1),  # a ViT patch embedding
    (2, 4, 6, (70, 66), (8, 8), (8, 8), (1, 1), (0, 0, 0, 0), 1),  # partial patches dropped
    (1, 5, 7, (13, 10), (4, 2), (4, 2), (1, 1), (0, 0, 0, 0), 1),  # rectangular
    (1, 6, 4, (12, 12), (3, 3), (3, 3), (1, 1), (0, 0, 0, 0), 2),  # grouped
    (2, 3, 5, (30,), (4,), (4,), (1,), (0, 0), 1),  # 1-D
    (1, 2, 3, (6, 7, 8), (2, 2, 2), (2, 2, 2), (1, 1, 1), (0, 0, 0, 0, 0, 0), 1),  # 3-D
]


@pytest.mark.parametrize("case", PATCH_CASES, ids=[f"patch{i}" for i in range(len(PATCH_CASES))])
@pytest.mark.parametrize("act,with_z", [(("", []), False), (("Relu", []), True)], ids=["plain", "Relu+Z"])
def test_patch_convolution_matches_other_paths_and_onnxruntime(case, act, with_z, monkeypatch):
    """Kernel equal to the stride: the columns are a transpose of the input; same results as the
    general paths and onnxruntime."""
    model, feeds = _model(case, act, np.float32, with_z=with_z)
    calls = []
    real = im2col.is_patchify
    monkeypatch.setattr(im2col, "is_patchify", lambda *a: calls.append(a) or real(*a))
    fast = onyx.InferenceSession(model).run(None, feeds)[0]
    assert calls and real(*calls[0])
    monkeypatch.setattr(im2col, "is_patchify", lambda *a: False)
    general = onyx.InferenceSession(model).run(None, feeds)[0]
    k = case[1] // case[8] * int(np.prod(case[4]))
    np.testing.assert_allclose(fast, general, rtol=1e-5, atol=2 * np.finfo(np.float32).eps * k)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(fast, want, rtol=1e-4, atol=1e-4)


def test_patchify_needs_kernel_equal_to_stride_and_no_padding():
    from onyx.ops.nn.conv._geometry import Geometry

    def geo(strides, dilations, pb, pe):
        return Geometry(strides, dilations, pb, pe, (1, 1), 1, 1)

    assert im2col.is_patchify((16, 16), geo((16, 16), (1, 1), (0, 0), (0, 0)))
    assert not im2col.is_patchify((3, 3), geo((2, 2), (1, 1), (0, 0), (0, 0)))
    assert not im2col.is_patchify((2, 2), geo((2, 2), (2, 2), (0, 0), (0, 0)))
    assert not im2col.is_patchify((2, 2), geo((2, 2), (1, 1), (1, 0), (0, 0)))
    assert not im2col.is_patchify((2, 2), geo((2, 2), (1, 1), (0, 0), (0, 1)))
