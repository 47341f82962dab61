"""One-node quantized models run by onyx and onnxruntime (the oracle), for the int8 operator tests."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import helper, numpy_helper

import onyx

MS = "com.microsoft"
rng = np.random.default_rng(19)


def rand(shape, dt) -> np.ndarray:
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, shape).astype(dt)


def one_node(op_type, feeds: dict, inits: dict, inputs: list[str], out_dtype, domain="", opset=21, **attrs):
    """Serialized model of one node: ``feeds`` are graph inputs, ``inits`` initializers ('' in
    ``inputs``: an absent optional input)."""
    node = helper.make_node(op_type, inputs, ["y"], domain=domain, **attrs)
    g_in = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in feeds.items()
    ]
    out = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype)), None)
    graph = helper.make_graph(
        [node], "g", g_in, [out], [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()]
    )
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if domain == MS else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()


def both(model: bytes, feeds: dict) -> tuple[np.ndarray, np.ndarray]:
    """(onyx, onnxruntime) outputs, onnxruntime without graph optimizations."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = onyx.InferenceSession(model).run(None, feeds)[0]
    return got, want


def run_onyx(model: bytes, feeds: dict) -> np.ndarray:
    return onyx.InferenceSession(model).run(None, feeds)[0]
