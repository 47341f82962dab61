"""Conv's blocked and threaded paths (row blocks, output-channel split, depthwise channel blocks)
against a direct float64 convolution, with BLAS single-threaded so that onyx splits GEMMs itself."""

import types

import numpy as np
import pytest

from onyx.kernels.blas_threads import limited
from onyx.ops.nn.conv import conv_forward


def _direct(x, w, b, group, pads, strides, dilations):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c = x.shape[:2]
    nd = x.ndim - 2
    m, cg = w.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    ek = [(w.shape[2 + i] - 1) * dilations[i] + 1 for i in range(nd)]
    out = [(xp.shape[2 + i] - ek[i]) // strides[i] + 1 for i in range(nd)]
    y = np.zeros([n, m] + out)
    mg = m // group
    for o in np.ndindex(*out):
        for k in np.ndindex(*w.shape[2:]):
            idx = tuple(o[i] * strides[i] + k[i] * dilations[i] for i in range(nd))
            patch = xp[(slice(None), slice(None)) + idx].reshape(n, group, cg)
            wk = w[(slice(None), slice(None)) + k].reshape(group, mg, cg)
            y[(slice(None), slice(None)) + o] += np.einsum("ngc,gmc->ngm", patch, wk).reshape(n, m)
    if b is not None:
        y += b.reshape((m,) + (1,) * nd)
    return y


@pytest.fixture
def single_blas():
    with limited(1, openblas=1):
        yield


CASES = [
    # (x shape, w shape, group, pads, strides, dilations)
    ((1, 16, 40, 40), (64, 16, 3, 3), 1, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((1, 16, 80, 80), (64, 16, 3, 3), 1, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((2, 16, 37, 41), (64, 8, 3, 3), 2, (1, 0, 2, 1), (2, 1), (1, 2)),
    ((1, 128, 7, 7), (256, 128, 3, 3), 1, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((1, 64, 30, 30), (128, 64, 1, 1), 1, (0, 0, 0, 0), (2, 2), (1, 1)),
    ((2, 64, 33, 33), (96, 64, 1, 1), 1, (0, 0, 0, 0), (1, 1), (1, 1)),
    ((1, 32, 70, 70), (32, 1, 3, 3), 32, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((2, 24, 45, 43), (48, 1, 3, 3), 24, (1, 1, 1, 1), (2, 2), (1, 1)),
    ((1, 8, 21, 19), (8, 1, 5, 5), 8, (2, 1, 2, 3), (1, 2), (2, 1)),
    # channels-last depthwise (many channels, small maps): stride 1 and 2, multiplier 2, batch 2
    ((1, 160, 14, 14), (160, 1, 3, 3), 160, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((2, 128, 15, 13), (256, 1, 3, 3), 128, (1, 1, 1, 1), (2, 2), (1, 1)),
    ((1, 200, 9, 11), (200, 1, 1, 3), 200, (0, 1, 0, 1), (2, 1), (1, 2)),
    ((1, 1024, 7, 7), (1024, 1, 3, 3), 1024, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((1, 512, 14, 14), (512, 1, 3, 3), 512, (1, 1, 1, 1), (1, 1), (1, 1)),
    ((1, 32, 300), (64, 32, 5), 1, (2, 2), (1,), (1,)),
    ((1, 8, 10, 12, 14), (16, 8, 3, 3, 3), 1, (1, 1, 1, 1, 1, 1), (1, 2, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"_w{c[1][0]}g{c[2]}")
def test_conv_threaded_matches_direct(single_blas, case, threads):
    xs, ws, group, pads, strides, dilations = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    ctx = types.SimpleNamespace(intra_op_num_threads=threads)
    for bias in (b, None):
        y = conv_forward(
            x,
            w,
            bias,
            auto_pad="NOTSET",
            dilations=list(dilations),
            group=group,
            kernel_shape=None,
            pads=list(pads),
            strides=list(strides),
            ctx=ctx,
        )
        ref = _direct(x, w, bias, group, pads, strides, dilations)
        assert y.dtype == np.float32 and y.shape == ref.shape
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "case", [CASES[1], CASES[2], CASES[6], CASES[10]], ids=lambda c: "x".join(map(str, c[0]))
)
def test_conv_post_applied_to_every_block(single_blas, case, threads):
    xs, ws, group, pads, strides, dilations = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    y = conv_forward(
        x,
        w,
        b,
        auto_pad="NOTSET",
        dilations=list(dilations),
        group=group,
        kernel_shape=None,
        pads=list(pads),
        strides=list(strides),
        ctx=types.SimpleNamespace(intra_op_num_threads=threads),
        post=lambda v: np.maximum(v, 0, out=v),
    )
    ref = np.maximum(_direct(x, w, b, group, pads, strides, dilations), 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
