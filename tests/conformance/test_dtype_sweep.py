"""Every element type the spec allows, for the elementwise, reduction and shape operators: onyx against
onnx's reference evaluator on the same inputs (opset 24)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx.defs
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onyx
from onyx.ir.dtypes import DataType

UNARY = [
    "Abs",
    "Neg",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Sqrt",
    "Ceil",
    "Floor",
    "Round",
    "Sign",
    "Reciprocal",
    "Sin",
    "Cos",
    "Erf",
    "Softplus",
    "Softsign",
    "Identity",
    "IsNaN",
    "Not",
    "BitwiseNot",
    "Elu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "Mish",
    "LeakyRelu",
    "Celu",
    "ThresholdedRelu",
    "Gelu",
    "Swish",
    "Softmax",
    "LogSoftmax",
    "Hardmax",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ArgMax",
    "ArgMin",
    "CumSum",
    "Transpose",
    "Flatten",
    "Shape",
    "Size",
    "NonZero",
    "Cast",
]
BINARY = [
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Mod",
    "Equal",
    "Greater",
    "Less",
    "GreaterOrEqual",
    "LessOrEqual",
    "And",
    "Or",
    "Xor",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "PRelu",
    "MatMul",
    "BitShift",
    "Sum",
    "Mean",
]
OPSET = 24


def types_for(op):
    s = onnx.defs.get_schema(op, OPSET)
    tc = {
        t.type_param_str: [x for x in t.allowed_type_strs if x.startswith("tensor(")]
        for t in s.type_constraints
    }
    first = s.inputs[0].type_str
    return [x[7:-1] for x in tc.get(first, [])]


NAME_TO_TYPE = {DataType(k).onnx_name: DataType(k) for k in range(1, 29)}
CASES = [
    (op, t)
    for op in UNARY + BINARY
    for t in types_for(op)
    if t in NAME_TO_TYPE and NAME_TO_TYPE[t] != DataType.STRING
]


def make_input(npdt, op, rng):
    if npdt.kind == "b":
        return rng.random((3, 4)) > 0.5
    if op == "BitShift":
        return rng.integers(0, 3, (3, 4)).astype(npdt)
    if npdt.kind in "iu":
        return rng.integers(0 if npdt.kind == "u" else -5, 6, (3, 4)).astype(npdt)
    if npdt.kind == "c":
        return (rng.random((3, 4)) + 1j * rng.random((3, 4))).astype(npdt)
    return (rng.random((3, 4)) * 2 + 0.5).astype(np.float32).astype(npdt)


@pytest.mark.parametrize("op,tname", CASES, ids=[f"{o}-{t}" for o, t in CASES])
def test_operator_in_every_allowed_type(op, tname):
    rng = np.random.default_rng(0)
    dt = NAME_TO_TYPE[tname]
    x = make_input(dt.numpy_dtype, op, rng)
    n_in = 1 if op in UNARY else 2
    inputs = [x] + ([x.T.copy() if op == "MatMul" else x[::-1].copy()] if n_in == 2 else [])
    attrs = {"to": TensorProto.FLOAT} if op == "Cast" else {"direction": "LEFT"} if op == "BitShift" else {}
    names = [f"x{i}" for i in range(n_in)]
    vis = [helper.make_tensor_value_info(n, int(dt), list(a.shape)) for n, a in zip(names, inputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g", vis, [helper.make_tensor_value_info("y", 0, None)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    feeds = dict(zip(names, inputs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])
        except Exception as e:  # noqa: BLE001 - the oracle itself cannot run this combination
            pytest.skip(f"onnx.reference: {type(e).__name__}")
        got = onyx.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "c":
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)
    elif got.dtype.kind in "fV":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)
