"""Signal kernels against numpy and onnxruntime: DFT (17, 20), STFT, windows, MelWeightMatrix.

(The folder has no __init__.py and the file a distinct name: a package named ``signal`` would shadow
the standard library module of that name while tests/ops is not a package.)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry


def k(op_type, opset=20):
    return registry.lookup(op_type, "", opset).fn


def ort_run(op_type, inputs, opset, **attrs):
    import onnxruntime as ort
    from onnx import TypeProto, helper

    names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    feeds = {n: x for n, x in zip(names, inputs) if n}
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))
            for n, x in feeds.items()
        ],
        [helper.make_value_info("y", TypeProto())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def as_complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


# ---------------------------------------------------------------- DFT


@pytest.mark.parametrize("axis", [0, 1, -2, -3])
@pytest.mark.parametrize("last", [1, 2])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_full_against_numpy(axis, last, inverse):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, last)).astype(np.float32)
    out = k("DFT", 20)(x, None, np.array(axis), inverse=inverse)
    ax = axis if axis >= 0 else axis + 3
    ref = (np.fft.ifft if inverse else np.fft.fft)(as_complex(x.astype(np.float64)), axis=ax)
    assert out.dtype == np.float32 and out.shape == (4, 6, 2)
    np.testing.assert_allclose(as_complex(out), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [5, 8, 12])
def test_dft_length_rfft_irfft(n):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 1))
    out = k("DFT", 20)(x, np.array(n, np.int64), onesided=1)
    assert out.dtype == np.float64 and out.shape == (2, n // 2 + 1, 2)
    np.testing.assert_allclose(as_complex(out), np.fft.rfft(x[..., 0], n=n, axis=1), atol=1e-12)
    back = k("DFT", 20)(out, np.array(n, np.int32), onesided=1, inverse=1)
    assert back.shape == (2, n, 1)
    np.testing.assert_allclose(back[..., 0], np.fft.irfft(as_complex(out), n=n, axis=1), atol=1e-12)
    # default IRFFT length is 2 * (dim - 1)
    assert k("DFT", 20)(out, onesided=1, inverse=1).shape == (2, 2 * (n // 2), 1)


def test_dft_17_axis_attribute_default_1():
    x = np.random.default_rng(2).standard_normal((3, 5, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(k("DFT", 17)(x), k("DFT", 20)(x, None, np.array(1)), rtol=1e-6)
    np.testing.assert_allclose(k("DFT", 19)(x, axis=2), k("DFT", 20)(x), rtol=1e-6)


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16])
def test_dft_low_precision(dt):
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1)
    out = k("DFT", 20)(x.astype(dt), None, np.array(1))
    assert out.dtype == dt
    np.testing.assert_allclose(
        out.astype(np.float32), k("DFT", 20)(x, None, np.array(1)), rtol=2e-2, atol=0.1
    )


@pytest.mark.parametrize(
    "attrs,axis,n",
    [
        ({}, 1, None),
        ({"onesided": 1}, 2, 6),
        ({"inverse": 1}, -2, 7),
        ({"inverse": 1, "onesided": 1}, 1, None),
    ],
)
def test_dft_matches_onnxruntime(attrs, axis, n):
    rng = np.random.default_rng(3)
    last = 2 if attrs.get("inverse") else 1
    x = rng.standard_normal((2, 5, 4, last)).astype(np.float32)
    inputs = [x, None if n is None else np.array(n, np.int64), np.array(axis, np.int64)]
    expected = ort_run("DFT", inputs, 20, **attrs)
    got = k("DFT", 20)(*inputs, **attrs)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_dft_errors():
    with pytest.raises(InvalidArgument, match="last dimension"):
        k("DFT", 20)(np.zeros((2, 3)), None, np.array(0))
    with pytest.raises(InvalidArgument, match="axis"):
        k("DFT", 20)(np.zeros((2, 3, 1)), None, np.array(2))
    with pytest.raises(InvalidArgument, match="dft_length"):
        k("DFT", 20)(np.zeros((2, 3, 1)), np.array(0), np.array(1))


# ---------------------------------------------------------------- STFT


@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("with_window", [False, True])
def test_stft_matches_onnxruntime(onesided, with_window):
    rng = np.random.default_rng(4)
    sig = rng.standard_normal((2, 64, 1)).astype(np.float32)
    window = np.hanning(16).astype(np.float32) if with_window else None
    inputs = [sig, np.array(5, np.int64), window, np.array(16, np.int64)]
    expected = ort_run("STFT", inputs, 17, onesided=onesided)
    got = k("STFT", 17)(*inputs, onesided=onesided)
    assert got.shape == expected.shape == (2, (64 - 16) // 5 + 1, 9 if onesided else 16, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_stft_complex_and_defaults():
    rng = np.random.default_rng(5)
    sig = rng.standard_normal((1, 20, 2))
    out = k("STFT", 17)(sig, np.array(4), None, np.array(8), onesided=0)
    assert out.dtype == np.float64 and out.shape == (1, 4, 8, 2)
    frame = as_complex(sig[0, 4:12])
    np.testing.assert_allclose(as_complex(out[0, 1]), np.fft.fft(frame), atol=1e-12)
    # frame_length from the window, then from the signal length
    assert k("STFT", 17)(sig[..., :1], np.array(4), np.ones(6)).shape == (1, 4, 4, 2)
    assert k("STFT", 17)(sig[..., :1], np.array(4)).shape == (1, 1, 11, 2)


def test_stft_errors():
    sig = np.zeros((1, 20, 1), np.float32)
    with pytest.raises(InvalidArgument, match="window"):
        k("STFT", 17)(sig, np.array(4), np.ones(6, np.float32), np.array(8))
    with pytest.raises(InvalidArgument, match="onesided"):
        k("STFT", 17)(np.zeros((1, 20, 2)), np.array(4), None, np.array(8))
    with pytest.raises(InvalidArgument, match="frame_length"):
        k("STFT", 17)(sig, np.array(4), None, np.array(40))
    with pytest.raises(InvalidArgument, match="frame_step"):
        k("STFT", 17)(sig, np.array(0))


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size", [1, 2, 7, 32])
@pytest.mark.parametrize("code", [1, 11])
def test_windows_match_onnxruntime(op_type, periodic, size, code):
    x = np.array(size, np.int64)
    got = k(op_type, 17)(x, periodic=periodic, output_datatype=code)
    if size == 1 and not periodic:
        # onnxruntime divides 0 by 0 (NaN); onyx follows numpy/scipy: a one-point window is [1]
        assert got.tolist() == [1.0]
        return
    expected = ort_run(op_type, [x], 17, periodic=periodic, output_datatype=code)
    assert got.dtype == expected.dtype and got.shape == (size,)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_window_other_output_types_and_errors():
    assert k("HannWindow", 17)(np.array(4, np.int32), output_datatype=10).dtype == np.float16
    assert k("HannWindow", 17)(np.array(0)).shape == (0,)
    with pytest.raises(InvalidArgument):
        k("HannWindow", 17)(np.array(-1))
    with pytest.raises(InvalidArgument, match="output_datatype"):
        k("HammingWindow", 17)(np.array(3), output_datatype=8)


# ---------------------------------------------------------------- MelWeightMatrix


@pytest.mark.parametrize(
    "mels,n_fft,rate,low,high",
    [
        (8, 16, 8192, 0.0, 4096.0),
        (10, 64, 16000, 50.0, 7000.0),
        (20, 512, 22050, 0.0, 11025.0),
        (4, 9, 100, 5.0, 45.0),
    ],
)
def test_mel_weight_matrix_matches_onnxruntime(mels, n_fft, rate, low, high):
    inputs = [
        np.array(mels),
        np.array(n_fft),
        np.array(rate),
        np.array(low, np.float32),
        np.array(high, np.float32),
    ]
    expected = ort_run("MelWeightMatrix", inputs, 17)
    got = k("MelWeightMatrix", 17)(*inputs)
    assert got.dtype == np.float32 and got.shape == (n_fft // 2 + 1, mels)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_mel_weight_matrix_types_and_errors():
    out = k("MelWeightMatrix", 17)(
        np.array(4), np.array(32), np.array(1000), np.array(0.0), np.array(500.0), output_datatype=11
    )
    assert out.dtype == np.float64 and out.max() == 1.0
    with pytest.raises(InvalidArgument, match="lower_edge_hertz"):
        k("MelWeightMatrix", 17)(np.array(4), np.array(32), np.array(1000), np.array(600.0), np.array(500.0))
    with pytest.raises(InvalidArgument, match="positive"):
        k("MelWeightMatrix", 17)(np.array(0), np.array(32), np.array(1000), np.array(0.0), np.array(500.0))
