"""ai.onnx.preview.training optimizers: Adagrad, Adam, Momentum on one and several tensors."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry

DOMAIN = "ai.onnx.preview.training"


def k(op_type):
    return registry.lookup(op_type, DOMAIN, 1).fn


def rand(*shape, dt=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_adagrad_multiple_tensors(dt):
    r, t = np.array(0.1, dt), np.array(3, np.int64)
    x1, x2 = rand(3, dt=dt, seed=1), rand(2, 2, dt=dt, seed=2)
    g1, g2 = rand(3, dt=dt, seed=3), rand(2, 2, dt=dt, seed=4)
    h1, h2 = np.abs(rand(3, dt=dt, seed=5)), np.abs(rand(2, 2, dt=dt, seed=6))
    out = k("Adagrad")(r, t, x1, x2, g1, g2, h1, h2, norm_coefficient=0.01, decay_factor=0.2, epsilon=1e-5)
    assert len(out) == 4 and all(o.dtype == dt for o in out)
    for x, g, h, xn, hn in ((x1, g1, h1, out[0], out[2]), (x2, g2, h2, out[1], out[3])):
        rr = 0.1 / (1 + 3 * 0.2)
        gr = 0.01 * x.astype(np.float64) + g
        hh = h + gr * gr
        np.testing.assert_allclose(hn, hh, rtol=1e-5)
        np.testing.assert_allclose(xn, x - rr * gr / (np.sqrt(hh) + 1e-5), rtol=1e-5)


@pytest.mark.parametrize("t", [0, 5])
def test_adam(t):
    r = np.array(0.05, np.float32)
    x, g, v, h = rand(4, seed=1), rand(4, seed=2), rand(4, seed=3), np.abs(rand(4, seed=4))
    a, b, eps, nc, ncp = 0.9, 0.99, 1e-6, 0.02, 0.1
    xn, vn, hn = k("Adam")(
        r,
        np.array(t),
        x,
        g,
        v,
        h,
        alpha=a,
        beta=b,
        epsilon=eps,
        norm_coefficient=nc,
        norm_coefficient_post=ncp,
    )
    gr = nc * x.astype(np.float64) + g
    v2 = a * v + (1 - a) * gr
    h2 = b * h + (1 - b) * gr * gr
    rr = 0.05 * np.sqrt(1 - b**t) / (1 - a**t) if t > 0 else 0.05
    ref = (1 - ncp) * (x - rr * v2 / (np.sqrt(h2) + eps))
    assert xn.dtype == np.float32
    np.testing.assert_allclose(vn, v2, rtol=1e-5)
    np.testing.assert_allclose(hn, h2, rtol=1e-5)
    np.testing.assert_allclose(xn, ref, rtol=1e-5)


def test_adam_multiple_tensor_order():
    z = np.zeros(2, np.float32)
    outs = k("Adam")(np.array(1.0, np.float32), np.array(0), z + 1, z + 2, z + 1, z + 1, z, z, z, z)
    assert len(outs) == 6
    assert outs[2].tolist() == pytest.approx([0.1, 0.1])  # V1_new = (1 - alpha) * G1


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("t", [0, 2])
def test_momentum(mode, t):
    r = np.array(0.1, np.float32)
    x1, x2, g1, g2, v1, v2 = (rand(3, seed=s) for s in range(6))
    out = k("Momentum")(
        r, np.array(t), x1, x2, g1, g2, v1, v2, alpha=0.9, beta=0.5, mode=mode, norm_coefficient=0.01
    )
    assert len(out) == 4
    beta = 0.5 if t > 0 else 1.0
    for x, g, v, xn, vn in ((x1, g1, v1, out[0], out[2]), (x2, g2, v2, out[1], out[3])):
        gr = 0.01 * x + g
        vv = 0.9 * v + beta * gr
        step = gr + 0.9 * vv if mode == "nesterov" else vv
        np.testing.assert_allclose(vn, vv, rtol=1e-5)
        np.testing.assert_allclose(xn, x - 0.1 * step, rtol=1e-5)


def test_errors():
    z = np.zeros(2, np.float32)
    with pytest.raises(InvalidArgument, match="multiple of 3"):
        k("Adagrad")(np.array(0.1), np.array(0), z, z)
    with pytest.raises(InvalidArgument, match="shapes"):
        k("Adagrad")(np.array(0.1), np.array(0), z, np.zeros(3), z)
    with pytest.raises(InvalidArgument, match="mode"):
        k("Momentum")(
            np.array(0.1), np.array(0), z, z, z, alpha=0.9, beta=0.1, mode="heavy", norm_coefficient=0.0
        )
    with pytest.raises(InvalidArgument, match="scalar"):
        k("Adam")(np.zeros(2), np.array(0), z, z, z, z)


def test_gradient_is_registered():
    assert registry.lookup("Gradient", DOMAIN, 1).op_type == "Gradient"
