"""Test helpers shared by the math, activation and linalg tests: run one node through onyx's kernel
registry, and through onnxruntime or onnx's reference evaluator as an oracle."""

from __future__ import annotations

import warnings

import numpy as np

from onyx.ops import registry


def kernel(op_type: str, opset: int):
    return registry.lookup(op_type, "", opset).fn


def run(op_type: str, opset: int, *inputs, **attrs):
    """Call the onyx kernel for ``op_type`` at ``opset`` as the runtime would."""
    return kernel(op_type, opset)(*inputs, **attrs)


def model(op_type: str, opset: int, inputs, attrs=None, n_outputs=1, out_dtypes=None):
    """A one-node onnx model whose graph inputs are ``inputs`` (None = absent optional input)."""
    from onnx import TensorProto, TypeProto, helper, shape_inference

    names, vis = [], []
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        names.append(f"x{i}")
        elem = TensorProto.STRING if x.dtype == object else helper.np_dtype_to_tensor_dtype(x.dtype)
        vis.append(helper.make_tensor_value_info(f"x{i}", elem, list(x.shape)))
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    if out_dtypes is not None:
        out_vis = [
            helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
            for o, d in zip(outs, out_dtypes)
        ]
    else:  # let onnx's shape inference find the output types
        probe = helper.make_graph([node], "g", vis, [helper.make_value_info(o, TypeProto()) for o in outs])
        pm = helper.make_model(probe, opset_imports=[helper.make_opsetid("", opset)])
        ig = shape_inference.infer_shapes(pm).graph
        inferred = {v.name: v for v in list(ig.value_info) + list(ig.output)}
        out_vis = [inferred[o] for o in outs]
    graph = helper.make_graph([node], "g", vis, out_vis)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 18 else 10
    return m


def ort(op_type: str, opset: int, *inputs, **attrs):
    """Run the node with onnxruntime: the list of outputs."""
    import onnxruntime

    m = model(op_type, opset, inputs, attrs)
    sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {f"x{i}": x for i, x in enumerate(inputs) if x is not None}
    return sess.run(None, feeds)


def reference(op_type: str, opset: int, *inputs, **attrs):
    """Run the node with onnx.reference.ReferenceEvaluator: the list of outputs."""
    from onnx.reference import ReferenceEvaluator

    m = model(op_type, opset, inputs, attrs)
    feeds = {f"x{i}": x for i, x in enumerate(inputs) if x is not None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(m).run(None, feeds)


def check(got, expected, rtol=1e-6, atol=1e-7):
    """Same dtype, same shape, a real ndarray, values close (exact for ints/bools)."""
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "biuO":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)
