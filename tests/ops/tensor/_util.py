"""Test helpers: build a one-node ONNX model at a given opset and run it through onyx's kernels
(via the conformance harness interpreter) and through an oracle (onnx's ReferenceEvaluator)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from tests.conformance import harness


def make_model(op_type: str, inputs: list[Any], opset: int, n_outputs: int = 1, **attrs):
    in_names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, in_names, out_names, **attrs)
    vi = []
    for name, x in zip(in_names, inputs):
        if not name:
            continue
        x = np.asarray(x)
        et = TensorProto.STRING if x.dtype == object else helper.np_dtype_to_tensor_dtype(x.dtype)
        vi.append(helper.make_tensor_value_info(name, et, x.shape))
    outs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in out_names]
    graph = helper.make_graph([node], "g", vi, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def run(op_type: str, inputs: list[Any], opset: int, n_outputs: int = 1, **attrs) -> list[Any]:
    """Run the node with onyx's kernels; returns the list of outputs."""
    model = make_model(op_type, inputs, opset, n_outputs, **attrs)
    return harness.run_model(model, [x for x in inputs if x is not None])


def reference(op_type: str, inputs: list[Any], opset: int, n_outputs: int = 1, **attrs) -> list[Any]:
    from onnx.reference import ReferenceEvaluator

    model = make_model(op_type, inputs, opset, n_outputs, **attrs)
    feeds = {f"x{i}": x for i, x in enumerate(inputs) if x is not None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)


def check(op_type: str, inputs: list[Any], opset: int, n_outputs: int = 1, rtol=1e-5, atol=1e-6, **attrs):
    got = run(op_type, inputs, opset, n_outputs, **attrs)
    exp = reference(op_type, inputs, opset, n_outputs, **attrs)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert_same(g, e, rtol, atol)
    return got


def assert_same(got, exp, rtol=1e-5, atol=1e-6):
    got = np.asarray(got)
    exp = np.asarray(exp)
    assert got.dtype == exp.dtype, (got.dtype, exp.dtype)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    if got.dtype == object or got.dtype.kind in "biuU":
        assert got.tolist() == exp.tolist()
    else:
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol)
