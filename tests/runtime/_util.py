"""Helpers shared by the runtime tests: tiny models built with onnx.helper, and onnxruntime as oracle."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

import onyx

DEFAULT_OPSET = 17


def make_model(
    nodes,
    inputs,
    outputs,
    *,
    initializers=(),
    opset: int = DEFAULT_OPSET,
    extra_opsets: dict[str, int] | None = None,
    functions=(),
    name: str = "g",
    ir_version: int = 8,
    **model_kwargs,
) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)]
    for dom, ver in (extra_opsets or {}).items():
        opsets.append(helper.make_opsetid(dom, ver))
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions), **model_kwargs)
    model.ir_version = ir_version
    return model


def tensor(name: str, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def ort_session(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    so = onnxruntime.SessionOptions()
    so.log_severity_level = 3
    return onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def onyx_session(model: onnx.ModelProto, so: onyx.SessionOptions | None = None) -> onyx.InferenceSession:
    return onyx.InferenceSession(model.SerializeToString(), so)


def assert_same(got, want, rtol=1e-5, atol=1e-6) -> None:
    """Outputs equal, recursing through lists (sequences) and dicts (maps); dtypes must match."""
    if isinstance(want, list):
        assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        assert set(got) == set(want), (sorted(got), sorted(want))
        for k in want:
            assert_same(got[k], want[k], rtol, atol)
        return
    if want is None:
        assert got is None
        return
    if isinstance(want, float | int | np.generic) and not isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


def compare_with_ort(model: onnx.ModelProto, feeds: dict, rtol=1e-5, atol=1e-6):
    """Run the model in both runtimes and compare every output; returns onyx's outputs."""
    want = ort_session(model).run(None, feeds)
    got = onyx_session(model).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w, rtol, atol)
    return got
