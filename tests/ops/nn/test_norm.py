"""Normalization kernels and Dropout: old versions, dtypes, extra outputs, errors."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops.registry import KernelContext
from tests.ops.nn._util import check_vs_ort, run_onyx

rng = np.random.default_rng(2)


def _r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _bn_inputs(c=3):
    return {
        "x": _r(2, c, 4, 5),
        "s": _r(c),
        "b": _r(c),
        "m": _r(c),
        "v": np.abs(_r(c)) + 0.5,
    }


@pytest.mark.parametrize("opset", [7, 9, 14, 15])
def test_batchnorm_inference_vs_ort(opset):
    check_vs_ort("BatchNormalization", _bn_inputs(), dict(epsilon=1e-3), opset=opset)


def test_batchnorm_v1_and_v6_legacy_attributes():
    inp = _bn_inputs()
    ref = run_onyx("BatchNormalization", inp, dict(epsilon=1e-3), opset=9)
    y1 = run_onyx(
        "BatchNormalization", inp, dict(epsilon=1e-3, is_test=1, consumed_inputs=[0, 0, 0, 1, 1]), opset=1
    )
    y6 = run_onyx("BatchNormalization", inp, dict(epsilon=1e-3, is_test=1, spatial=1), opset=6)
    np.testing.assert_allclose(y1, ref, rtol=1e-6)
    np.testing.assert_allclose(y6, ref, rtol=1e-6)


def test_batchnorm_non_spatial_v7():
    x = _r(4, 3, 2)
    p = {k: _r(3, 2) for k in "sbm"}
    p["v"] = np.abs(_r(3, 2)) + 0.5
    y = run_onyx("BatchNormalization", {"x": x, **p}, dict(spatial=0), opset=7)
    ref = (x - p["m"]) / np.sqrt(p["v"] + 1e-5) * p["s"] + p["b"]
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_batchnorm_training_mode_outputs():
    inp = _bn_inputs()
    y, rm, rv = run_onyx(
        "BatchNormalization", inp, dict(training_mode=1, momentum=0.8), opset=15, n_outputs=3
    )
    x = inp["x"]
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    ref = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * inp["s"][:, None, None]
    ref += inp["b"][:, None, None]
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm, inp["m"] * 0.8 + mean * 0.2, rtol=1e-5)
    np.testing.assert_allclose(rv, inp["v"] * 0.8 + var * 0.2, rtol=1e-5)


def test_batchnorm_float16_keeps_dtype():
    inp = {k: v.astype(np.float16) for k, v in _bn_inputs().items()}
    y = run_onyx("BatchNormalization", inp, opset=15)
    assert y.dtype == np.float16


def test_batchnorm_bad_scale_shape():
    inp = _bn_inputs()
    inp["s"] = _r(4)
    with pytest.raises(InvalidArgument):
        run_onyx("BatchNormalization", inp, opset=15)


@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_layernorm_vs_ort(axis):
    x = _r(2, 3, 4, 5)
    shape = x.shape[axis:]
    inp = {"x": x, "s": _r(*shape), "b": _r(*shape)}
    check_vs_ort("LayerNormalization", inp, dict(axis=axis, epsilon=1e-3), opset=17, n_outputs=3)


def test_layernorm_float16_without_bias():
    x = _r(3, 8)
    y = run_onyx(
        "LayerNormalization", {"x": x.astype(np.float16), "s": np.ones(8, np.float16), "b": None}, opset=17
    )
    assert y.dtype == np.float16
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)
    _, mean, inv = run_onyx(
        "LayerNormalization", {"x": x.astype(np.float16), "s": np.ones(8, np.float16)}, opset=17, n_outputs=3
    )
    assert mean.dtype == np.float32 and mean.shape == (3, 1) and inv.shape == (3, 1)


def test_instance_norm_vs_ort_and_v1():
    inp = {"x": _r(2, 3, 4, 5), "s": _r(3), "b": _r(3)}
    y = check_vs_ort("InstanceNormalization", inp, dict(epsilon=1e-3), opset=6)[0]
    y1 = run_onyx("InstanceNormalization", inp, dict(epsilon=1e-3, consumed_inputs=[0, 0, 0]), opset=1)
    np.testing.assert_allclose(y1, y, rtol=1e-5)


def test_group_norm_v18_vs_v21():
    x = _r(2, 6, 3, 3)
    s18, b18 = _r(3), _r(3)
    y18 = run_onyx("GroupNormalization", {"x": x, "s": s18, "b": b18}, dict(num_groups=3), opset=18)
    y21 = run_onyx(
        "GroupNormalization",
        {"x": x, "s": np.repeat(s18, 2), "b": np.repeat(b18, 2)},
        dict(num_groups=3),
        opset=21,
    )
    np.testing.assert_allclose(y18, y21, rtol=1e-5, atol=1e-6)
    g = x.reshape(2, 3, -1)
    ref = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    ref = ref.reshape(x.shape) * np.repeat(s18, 2)[:, None, None] + np.repeat(b18, 2)[:, None, None]
    np.testing.assert_allclose(y21, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(InvalidArgument):
        run_onyx("GroupNormalization", {"x": x, "s": _r(6), "b": _r(6)}, dict(num_groups=4), opset=21)


def test_rms_norm_float16():
    x = _r(2, 4, 8)
    s = _r(8)
    y = run_onyx("RMSNormalization", {"x": x.astype(np.float16), "s": s.astype(np.float16)}, opset=23)
    assert y.dtype == np.float16
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * s
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_lp_lrn_mvn_vs_ort():
    x = _r(2, 5, 3, 4)
    check_vs_ort("LpNormalization", {"x": x}, dict(axis=1, p=1), opset=1)
    check_vs_ort("LpNormalization", {"x": x}, dict(axis=-1, p=2), opset=1)
    check_vs_ort("LRN", {"x": x}, dict(size=3, alpha=1e-3, beta=0.6, bias=2.0), opset=13)
    check_vs_ort("LRN", {"x": x}, dict(size=5), opset=13)
    check_vs_ort("MeanVarianceNormalization", {"x": x}, opset=13, atol=1e-4)
    check_vs_ort("MeanVarianceNormalization", {"x": x}, dict(axes=[1, 3]), opset=13, atol=1e-4)


def test_dropout_inference_all_versions():
    x = _r(3, 4)
    for opset, attrs in [
        (1, dict(is_test=1)),
        (6, dict(is_test=0)),
        (7, {}),
        (10, dict(ratio=0.3)),
        (12, {}),
        (22, {}),
    ]:
        y, mask = run_onyx("Dropout", {"x": x}, attrs, opset=opset, n_outputs=2)
        np.testing.assert_array_equal(y, x)
        assert mask.all()
        assert mask.dtype == (np.bool_ if opset >= 10 else x.dtype)


def test_dropout_training_seeded_and_unseeded():
    from onyx.ops.nn.dropout import dropout_12

    x = np.ones((50, 40), np.float32)
    r, t = np.array(0.25, np.float32), np.array(True)
    y1, m1 = dropout_12(x, r, t, seed=3, _num_outputs=2, _ctx=KernelContext())
    y2, m2 = dropout_12(x, r, t, seed=3, _num_outputs=2, _ctx=KernelContext())
    np.testing.assert_array_equal(y1, y2)
    assert m1.dtype == np.bool_
    np.testing.assert_allclose(y1[m1], 1 / 0.75)
    assert (y1[~m1] == 0).all()
    assert 0.15 < 1 - m1.mean() < 0.35
    y3 = dropout_12(x, r, t, _ctx=KernelContext(seed=5))
    assert y3.shape == x.shape and y3.dtype == np.float32
    y4 = dropout_12(x.astype(np.float16), np.array(0.0, np.float32), t, _ctx=KernelContext())
    assert y4.dtype == np.float16
    with pytest.raises(InvalidArgument):
        dropout_12(x, np.array(1.5, np.float32), t, _ctx=KernelContext())


def test_norm_bad_scale_shapes_raise():
    x = _r(2, 3, 4)
    with pytest.raises(InvalidArgument):
        run_onyx("LayerNormalization", {"x": x, "s": _r(5)}, opset=17)
    with pytest.raises(InvalidArgument):
        run_onyx("LayerNormalization", {"x": x, "s": _r(4), "b": _r(2, 2, 3, 4)}, opset=17)
    with pytest.raises(InvalidArgument):
        run_onyx("RMSNormalization", {"x": x, "s": _r(3)}, opset=23)
