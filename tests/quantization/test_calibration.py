"""Calibration: histogram collectors in bounded memory that agree with onnxruntime's, MinMax options."""

from __future__ import annotations

import logging

import numpy as np
import pytest

oq = pytest.importorskip("onnxruntime.quantization")
from onnxruntime.quantization.calibrate import HistogramCollector as OrtCollector  # noqa: E402

import onyx.quantization as yq  # noqa: E402
from onyx.quantization import calibrate  # noqa: E402
from onyx.quantization.calibrate import HistogramCollector, MinMaxCollector  # noqa: E402

from ._models import ListReader, batches, cnn_model, initializers  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)

METHODS = [
    ("entropy", dict(num_bins=128, num_quantized_bins=128)),
    ("entropy", dict(num_bins=512, num_quantized_bins=128)),
    ("percentile", dict(num_bins=2048, percentile=99.9, symmetric=True)),
    ("percentile", dict(num_bins=2048, percentile=99.0, symmetric=False)),
    ("distribution", dict(num_bins=512)),
]


def _data(n, first_holds_extremes=True, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(500).astype(np.float32) for _ in range(n)]
    if first_holds_extremes:
        out = [np.clip(a, -3, 3) for a in out]
        out[0][:3] = [-3.0, 3.0, 0.0]
    else:
        out[-1][0] = 9.0  # a later batch widens the range
    return out


def _ort(method, kw, arrays, at_once=True):
    c = OrtCollector(
        method=method,
        symmetric=kw.get("symmetric", False),
        num_bins=kw["num_bins"],
        num_quantized_bins=kw.get("num_quantized_bins", 128),
        percentile=kw.get("percentile", 99.999),
        scenario="same",
    )
    if at_once:
        c.collect({"t": list(arrays)})
    else:
        for a in arrays:
            c.collect({"t": [a]})
    r = c.compute_collection_result()["t"]
    return (r.lowest, r.highest) if hasattr(r, "lowest") else (r[0], r[1])


def _ours(method, kw, arrays):
    c = HistogramCollector(method, **kw)
    for a in arrays:
        c.collect("t", a)
    return c.result()["t"].range_value, c


@pytest.mark.parametrize("method,kw", METHODS)
def test_histogram_ranges_equal_onnxruntime_when_first_batch_holds_extremes(method, kw, capsys):
    arrays = _data(6)
    (lo, hi), _ = _ours(method, kw, arrays)
    want = _ort(method, kw, arrays)
    assert (lo, hi) == (want[0], want[1])
    assert np.asarray(lo).dtype == np.float32 and np.asarray(hi).dtype == np.float32


# bins of onnxruntime's histogram by which a one-pass threshold may differ (see calibrate's docstring)
ONE_PASS_TOLERANCE = {"entropy": 16, "percentile": 6, "distribution": 1}


@pytest.mark.parametrize("method,kw", METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_one_pass_histograms_stay_close_to_onnxruntime(method, kw, seed, capsys):
    """A later batch widens the range and the reader cannot rewind: onnxruntime (all batches at once)
    and onyx (batch by batch, re-binned at the end) choose nearby thresholds."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(500).astype(np.float32) for _ in range(6)]
    arrays[-1][0] = rng.uniform(4, 12)
    (lo, hi), c = _ours(method, kw, arrays)
    want = _ort(method, kw, arrays, at_once=True)
    edges = c._coarse_edges(c.histograms["t"])
    tol = ONE_PASS_TOLERANCE[method] * float(edges[1] - edges[0]) + 1e-6
    assert abs(float(lo) - float(want[0])) <= tol
    assert abs(float(hi) - float(want[1])) <= tol


@pytest.mark.parametrize("method,kw", METHODS)
def test_two_pass_histograms_equal_onnxruntime(method, kw, capsys):
    """With a reader that can rewind, the histograms are built on onnxruntime's final bins: equal."""
    arrays = _data(6, first_holds_extremes=False)
    ex = calibrate._Extremes()
    for a in arrays:
        ex.collect("t", a)
    c = HistogramCollector(method, **kw)
    c.preset("t", *ex.seen["t"])
    for a in arrays:
        c.collect("t", a)
    assert c.result()["t"].range_value == _ort(method, kw, arrays, at_once=True)


@pytest.mark.parametrize("method,kw", METHODS)
def test_histogram_state_does_not_grow_with_batches(method, kw):
    arrays = _data(4)
    c = HistogramCollector(method, **kw)
    for a in arrays:
        c.collect("t", a)
    size = c.state_size()
    rng = np.random.default_rng(1)
    for _ in range(200):
        c.collect("t", np.clip(rng.standard_normal(500), -3, 3).astype(np.float32))
    assert c.state_size() == size


def test_minmax_state_is_bounded():
    c = MinMaxCollector()
    for i in range(100):
        c.collect("t", np.full(10, float(i), np.float32))
        c.end_batch()
    assert c.state_size() == 2
    r = c.result()["t"]
    assert (r.lowest, r.highest) == (0.0, 99.0)
    m = MinMaxCollector(moving_average=True, max_intermediate_outputs=8)
    for i in range(100):
        m.collect("t", np.full(10, float(i), np.float32))
        m.end_batch()
        assert m.state_size() <= 2 * 8 + 2


@pytest.mark.parametrize("method", ["Entropy", "Percentile", "Distribution"])
def test_histogram_methods_end_to_end_match_onnxruntime(tmp_path, method, capsys):
    model = cnn_model(tmp_path / "cnn.onnx")
    data = batches(4, batch=2)  # ListReader can rewind: two passes, onnxruntime's bins
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(model, theirs, ListReader(data), calibrate_method=oq.CalibrationMethod[method])
    yq.quantize_static(model, ours, ListReader(data), calibrate_method=yq.CalibrationMethod[method])
    ia, ib = initializers(ours), initializers(theirs)
    assert set(ia) == set(ib)
    for name in ia:
        np.testing.assert_array_equal(ia[name], ib[name], err_msg=name)


def test_moving_average_and_symmetric_ranges_match_onnxruntime(tmp_path):
    model = cnn_model(tmp_path / "cnn.onnx")
    data = batches(5)
    extra = {"CalibMovingAverage": True, "CalibTensorRangeSymmetric": True}
    ours, theirs = tmp_path / "onyx.onnx", tmp_path / "ort.onnx"
    oq.quantize_static(model, theirs, ListReader(data), extra_options=dict(extra))
    yq.quantize_static(model, ours, ListReader(data), extra_options=dict(extra))
    ia, ib = initializers(ours), initializers(theirs)
    for name in ia:
        np.testing.assert_array_equal(ia[name], ib[name], err_msg=name)
