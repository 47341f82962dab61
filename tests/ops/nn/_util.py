"""Helpers for the nn kernel tests: one-node models run through onyx kernels and onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tests.conformance.harness import run_model


def make_model(op_type, inputs, attrs=None, *, opset, n_outputs=1, domain="", initializers=None):
    """A one-node model; ``inputs`` maps names to arrays (None for an absent optional input)."""
    names = [k if v is not None else "" for k, v in inputs.items()]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, domain=domain, **(attrs or {}))
    graph_inputs = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for k, v in inputs.items()
        if v is not None and k not in (initializers or {})
    ]
    graph_outputs = [onnx.ValueInfoProto(name=o) for o in outs]
    inits = [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph([node], "g", graph_inputs, graph_outputs, inits)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def run_onyx(op_type, inputs, attrs=None, *, opset, n_outputs=1, domain=""):
    model = make_model(op_type, inputs, attrs, opset=opset, n_outputs=n_outputs, domain=domain)
    feeds = [v for v in inputs.values() if v is not None]
    outs = run_model(model, feeds)
    return outs if n_outputs > 1 else outs[0]


def run_ort(op_type, inputs, attrs=None, *, opset, n_outputs=1):
    import onnxruntime as ort

    model = make_model(op_type, inputs, attrs, opset=opset, n_outputs=n_outputs)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, {k: v for k, v in inputs.items() if v is not None})
    return outs if n_outputs > 1 else outs[0]


def check_vs_ort(op_type, inputs, attrs=None, *, opset, n_outputs=1, rtol=1e-4, atol=1e-5):
    got = run_onyx(op_type, inputs, attrs, opset=opset, n_outputs=n_outputs)
    exp = run_ort(op_type, inputs, attrs, opset=opset, n_outputs=n_outputs)
    if n_outputs == 1:
        got, exp = [got], [exp]
    for g, e in zip(got, exp):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape, (g.shape, e.shape)
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol)
    return got
