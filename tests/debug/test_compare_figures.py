"""The pieces of compare: error figures of one pair of values, and dequantizing stand-ins."""

from __future__ import annotations

import numpy as np

from onyx.debug.matching import dequantize, stand_in
from onyx.debug.stats import error_figures


def test_figures_follow_allclose():
    e = np.array([1.0, 2.0, 0.0, 100.0], np.float32)
    a = np.array([1.0005, 2.01, 1e-6, 100.05], np.float32)
    f = error_figures(e, a, rtol=1e-3, atol=1e-5)
    assert f.mismatches == int(np.count_nonzero(~np.isclose(a, e, rtol=1e-3, atol=1e-5))) == 1
    assert f.size == 4 and f.mismatch_fraction == 0.25 and not f.agreed
    assert np.isclose(f.max_abs, 0.05, rtol=1e-3)
    # |actual - expected| / max(|expected|, atol): the worst is 1e-6 against an expected 0 (floor 1e-5)
    assert np.isclose(f.max_rel, 0.1, rtol=1e-3)
    assert np.isclose(error_figures(e[:2], a[:2], 1e-3, 1e-5).max_rel, 0.005, rtol=1e-3)  # |2.01 - 2| / 2
    assert 0.999 < f.cosine <= 1.0


def test_nan_inf_shapes_and_other_kinds():
    nan_inf = np.array([np.nan, np.inf, 1.0])
    assert error_figures(nan_inf, nan_inf.copy(), 0, 0).agreed  # NaN matches NaN, inf matches inf
    f = error_figures(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), 1e-3, 1e-5)
    assert not f.agreed and f.mismatches == 1 and f.max_abs == np.inf
    f = error_figures(np.zeros((2, 3)), np.zeros((3, 2)), 1e-3, 1e-5)
    assert not f.agreed and "shape [3, 2] where [2, 3] was expected" in f.note
    strings = np.array(["a", "b"], dtype=object)
    assert error_figures(strings, strings.copy(), 0, 0).agreed
    assert error_figures(strings, np.array(["a", "c"], dtype=object), 0, 0).mismatches == 1
    seq = [np.ones(2), np.zeros(3)]
    assert error_figures(seq, [np.ones(2), np.zeros(3)], 0, 0).agreed
    assert "a sequence of 1 where 2" in error_figures(seq, seq[:1], 0, 0).note
    assert error_figures(np.zeros(3), np.zeros(3), 0, 0).cosine == 1.0


def test_dequantize_per_tensor_and_per_channel():
    q = np.array([[0, 10], [20, 30], [40, 50]], np.int8)
    np.testing.assert_array_equal(dequantize(q, np.float32(0.5), np.int8(10)), (q - 10) * 0.5)
    per_row = dequantize(q, np.array([1.0, 2.0, 3.0], np.float32), np.zeros(3, np.int8))
    np.testing.assert_array_equal(per_row, q * np.array([[1.0], [2.0], [3.0]]))
    assert dequantize(np.zeros((2, 2), np.int8), np.ones(2, np.float32), None) is None  # which axis?
    assert dequantize(np.zeros(2, np.float32), np.float32(1), None) is None  # not integers


def test_stand_in_prefers_float_names_then_dequantizes():
    ref = np.ones((2, 2), np.float32)
    other = {
        "t_QuantizeLinear_Output": np.full((2, 2), 4, np.uint8),
        "t_scale": np.float32(0.25),
        "t_zero_point": np.uint8(0),
    }
    label, value = stand_in("t", ref, other)
    assert label == "t_QuantizeLinear_Output (dequantized)" and np.array_equal(value, ref)
    other["t_DequantizeLinear_Output"] = ref * 0.9
    assert stand_in("t", ref, other)[0] == "t_DequantizeLinear_Output"
    other["t"] = ref * 1.1
    assert stand_in("t", ref, other)[0] == "t"
    assert stand_in("missing", ref, other) is None
