"""One-node com.microsoft models run by onyx and onnxruntime (the oracle), with typed inputs and outputs."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import onyx

MS = "com.microsoft"


def elem_of(a: np.ndarray) -> int:
    if a.dtype == object or a.dtype.kind in "US":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def model_bytes(op_type, inputs, out_elems, domain=MS, opset=17, **attrs) -> bytes:
    """``inputs``: arrays (None: an absent optional input); ``out_elems``: the outputs' element types."""
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(inputs)]
    outs = [f"o{k}" for k in range(len(out_elems))]
    node = helper.make_node(op_type, names, outs, domain=domain, **attrs)
    g_in = [
        helper.make_tensor_value_info(n, elem_of(a), None) for n, a in zip(names, inputs) if a is not None
    ]
    g_out = [helper.make_tensor_value_info(o, e, None) for o, e in zip(outs, out_elems)]
    graph = helper.make_graph([node], "g", g_in, g_out)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


def feeds_of(inputs) -> dict:
    return {f"i{k}": a for k, a in enumerate(inputs) if a is not None}


def run_ort(op_type, inputs, out_elems, **attrs) -> list:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    data = model_bytes(op_type, inputs, out_elems, **attrs)
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feeds_of(inputs))


def run_onyx(op_type, inputs, out_elems, level=None, **attrs) -> list:
    so = onyx.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    data = model_bytes(op_type, inputs, out_elems, **attrs)
    return onyx.InferenceSession(data, so).run(None, feeds_of(inputs))


def both(op_type, inputs, out_elems, **attrs) -> tuple[list, list]:
    return run_onyx(op_type, inputs, out_elems, **attrs), run_ort(op_type, inputs, out_elems, **attrs)


def assert_equal_outputs(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        if g.dtype == object:
            assert g.tolist() == w.tolist()
        else:
            np.testing.assert_array_equal(g, w)
