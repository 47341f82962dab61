"""The LSTM time loop: C (float32, a few rows) against the numpy path, on edge shapes; the C loop's own
sigmoid and tanh against float64 references."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.kernels import _loader, rnn

needs_c = pytest.mark.skipif(not _loader.built("_rnn"), reason="onyx.kernels._rnn was not built")


def _case(rng, D, T, B, H, scale=1.0):
    xw = (rng.normal(size=(D, T, B, 4 * H)) * scale).astype(np.float32)
    r_t = (rng.normal(size=(D, H, 4 * H)) / np.sqrt(H)).astype(np.float32)
    h = rng.normal(size=(D, B, H)).astype(np.float32)
    c = rng.normal(size=(D, B, H)).astype(np.float32)
    return xw, r_t, h, c


def _run(xw, r_t, h, c, clip, input_forget, monkeypatch, compiled: bool):
    if not compiled:
        monkeypatch.setenv("ONYX_NO_PERF", "1")
    h, c = h.copy(), c.copy()
    y = np.empty(xw.shape[:3] + (h.shape[-1],), np.float32)
    rnn.lstm_sequence(xw, r_t, h, c, y, clip=clip, input_forget=input_forget, threads=2)
    monkeypatch.delenv("ONYX_NO_PERF", raising=False)
    return y, h, c


@needs_c
@pytest.mark.parametrize(
    "D,T,B,H,clip,input_forget,scale",
    [
        (1, 1, 1, 1, None, False, 1.0),  # one step, one unit
        (1, 7, 1, 4, None, False, 1.0),
        (2, 9, 3, 17, 0.7, False, 1.0),  # clipped, odd hidden, both directions
        (1, 5, 4, 6, None, True, 1.0),  # input and forget gates coupled
        (2, 6, 8, 33, None, False, 40.0),  # saturated gates; the most rows the C loop takes
        (1, 4, 5, 9, 3.0, True, 5.0),
    ],
)
def test_compiled_matches_numpy(D, T, B, H, clip, input_forget, scale, monkeypatch):  # noqa: N803
    xw, r_t, h, c = _case(np.random.default_rng(T * 10 + B + H), D, T, B, H, scale)
    fast = _run(xw, r_t, h, c, clip, input_forget, monkeypatch, True)
    plain = _run(xw, r_t, h, c, clip, input_forget, monkeypatch, False)
    # float32 activations a few ulps apart, carried through T steps of sums over H terms
    for a, b in zip(fast, plain):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=(T + H) * 4e-7)


@needs_c
def test_nan_reaches_every_later_step(monkeypatch):
    xw, r_t, h, c = _case(np.random.default_rng(1), 1, 4, 2, 5)
    xw[0, 2, 0, 0] = np.nan
    y, hf, cf = _run(xw, r_t, h, c, None, False, monkeypatch, True)
    # the NaN gate of unit 0 at step 2, then through h every unit of that row; the other row never
    assert not np.isnan(y[0, :2]).any() and np.isnan(y[0, 2, 0, 0]) and np.isnan(y[0, 3:, 0]).all()
    assert not np.isnan(y[0, :, 1]).any()
    assert np.isnan(hf[0, 0]).all() and np.isnan(cf[0, 0]).any()


@needs_c
def test_empty_sequence_and_batch(monkeypatch):
    for D, T, B in ((1, 0, 2), (2, 3, 0)):
        xw, r_t, h, c = _case(np.random.default_rng(0), D, T, B, 3)
        y, hf, cf = _run(xw, r_t, h, c, None, False, monkeypatch, True)
        assert y.shape == (D, T, B, 3)
        np.testing.assert_array_equal(hf, h)
        np.testing.assert_array_equal(cf, c)


@needs_c
def test_wrong_shapes_raise():
    native = _loader.compiled("_rnn")
    xw = np.zeros((1, 2, 1, 8), np.float32)
    h = np.zeros((1, 1, 2), np.float32)
    y = np.zeros((1, 2, 1, 2), np.float32)
    with pytest.raises(ValueError):
        native.lstm_sequence(xw, np.zeros((1, 3, 8), np.float32), h, h.copy(), y, -1.0, False, 1)
    with pytest.raises(ValueError):
        native.lstm_sequence(xw, np.zeros((1, 2, 8), np.float32), h, h.copy(), y[:, :1], -1.0, False, 1)
    with pytest.raises(TypeError):
        native.lstm_sequence(
            xw.astype(np.float64), np.zeros((1, 2, 8), np.float32), h, h.copy(), y, -1.0, 0, 1
        )


@needs_c
@pytest.mark.parametrize("which,ref", [("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("tanh", np.tanh)])
def test_activations_accuracy(which, ref):
    x = np.concatenate(
        [
            np.linspace(-12, 12, 200001),
            np.geomspace(1e-30, 1, 2000),
            -np.geomspace(1e-30, 1, 2000),
            [0.0, 90, -90],
        ]
    ).astype(np.float32)
    got = rnn.activation32(x, which).astype(np.float64)
    want = ref(x.astype(np.float64))
    # ulps of a normal float32 (below, sigmoid of x < -87 gives 0 where the numpy path does too)
    ulp = np.maximum(np.spacing(np.abs(want).astype(np.float32)).astype(np.float64), 2.0**-126)
    # numpy's float32 tanh is within ~1 ulp; these within 2 (sigmoid: 1 / (1 + exp) rounds twice more)
    assert (np.abs(got - want) / ulp).max() <= (2 if which == "tanh" else 3)
    assert np.isnan(rnn.activation32(np.array([np.nan], np.float32), which)).all()
    assert rnn.activation32(np.array([np.inf, -np.inf], np.float32), which).tolist() == (
        [1.0, -1.0] if which == "tanh" else [1.0, 0.0]
    )
