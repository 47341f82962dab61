"""A test-only interpreter of onnx ModelProtos over onyx's kernel registry.

It exists so that kernels can be checked against the official node suite before (and independently
of) onyx's own loader and executor. It uses the ``onnx`` package (a test dependency) to read models and
calls the kernels through :func:`onyx.ops.registry.lookup` with the same calling convention as the
runtime: positional inputs, keyword attributes, ``_num_outputs`` and ``_ctx`` where asked for.

    python -m tests.conformance.harness conv        # the node-suite cases whose name has "conv", through
                                                    # onyx's session (--kernels: this interpreter instead)
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from onyx.ops import registry


class HarnessSubgraph:
    """A GRAPH attribute as kernels see it: call it with the graph's inputs, get its outputs."""

    def __init__(self, graph, opsets: dict[str, int], outer: dict[str, Any], functions):
        self.graph = graph
        self.opsets = opsets
        self.outer = outer
        self.functions = functions
        self.input_names = [i.name for i in graph.input]
        self.output_names = [o.name for o in graph.output]
        self.num_inputs = len(self.input_names)
        self.num_outputs = len(self.output_names)

    def __call__(self, *args: Any) -> list[Any]:
        env = dict(self.outer)
        for name, value in zip(self.input_names, args):
            env[name] = value
        return run_graph(self.graph, env, self.opsets, self.functions)


def attribute_value(attr, opsets, env, functions) -> Any:
    """Convert an onnx AttributeProto to the Python value a kernel receives."""
    from onnx import AttributeProto, numpy_helper

    t = attr.type
    if t == AttributeProto.INT:
        return int(attr.i)
    if t == AttributeProto.FLOAT:
        return float(attr.f)
    if t == AttributeProto.STRING:
        return attr.s.decode("utf-8", errors="surrogateescape")
    if t == AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if t == AttributeProto.SPARSE_TENSOR:
        return _dense(attr.sparse_tensor)
    if t == AttributeProto.GRAPH:
        return HarnessSubgraph(attr.g, opsets, env, functions)
    if t == AttributeProto.INTS:
        return [int(v) for v in attr.ints]
    if t == AttributeProto.FLOATS:
        return [float(v) for v in attr.floats]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8", errors="surrogateescape") for s in attr.strings]
    if t == AttributeProto.TENSORS:
        return [numpy_helper.to_array(x) for x in attr.tensors]
    if t == AttributeProto.GRAPHS:
        return [HarnessSubgraph(g, opsets, env, functions) for g in attr.graphs]
    if t == AttributeProto.TYPE_PROTO:
        return attr.tp
    if t == AttributeProto.TYPE_PROTOS:
        return list(attr.type_protos)
    raise ValueError(f"attribute {attr.name}: unsupported type {t}")


def _dense(sp) -> np.ndarray:
    from onnx import numpy_helper

    values = numpy_helper.to_array(sp.values)
    indices = numpy_helper.to_array(sp.indices)
    out = np.zeros(int(np.prod(sp.dims)), dtype=values.dtype)
    if indices.ndim == 2:
        indices = np.ravel_multi_index(indices.T, tuple(sp.dims))
    out[indices] = values
    return out.reshape(tuple(sp.dims))


def run_node(node, env: dict[str, Any], opsets: dict[str, int], functions) -> list[Any]:
    domain = registry.normalize_domain(node.domain)
    key = (node.domain, node.op_type)
    inputs = [env[name] if name else None for name in node.input]
    if key in functions:
        return run_function(functions[key], node, inputs, env, opsets, functions)
    opset = opsets.get(domain, opsets.get("ai.onnx", 1))
    kernel = registry.lookup(node.op_type, domain, opset)
    kwargs = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise ValueError("attribute reference outside a function")
        kwargs[a.name] = attribute_value(a, opsets, env, functions)
    if kernel.wants_num_outputs:
        kwargs["_num_outputs"] = len(node.output)
    if kernel.wants_ctx:
        kwargs["_ctx"] = registry.KernelContext()
    while inputs and inputs[-1] is None and len(inputs) > kernel.min_inputs:
        inputs.pop()
    result = kernel.fn(*inputs, **kwargs)
    if not isinstance(result, tuple | list) or (len(node.output) == 1 and not isinstance(result, tuple)):
        result = (result,)
    return list(result)


def run_function(fn, node, inputs, env, opsets, functions) -> list[Any]:
    """Inline a model-local function: bind inputs and attributes, run its body."""
    import onnx
    from onnx import helper

    inner = dict(zip(fn.input, inputs))
    fn_opsets = {registry.normalize_domain(o.domain): o.version for o in fn.opset_import}
    attrs = {a.name: a for a in fn.attribute_proto}
    for a in node.attribute:
        attrs[a.name] = a
    body = []
    for n in fn.node:
        n2 = type(n)()
        n2.CopyFrom(n)
        del n2.attribute[:]
        for a in n.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attrs:
                    a2 = type(a)()
                    a2.CopyFrom(attrs[a.ref_attr_name])
                    a2.name = a.name
                    n2.attribute.append(a2)
            else:
                n2.attribute.append(a)
        body.append(n2)
    graph = helper.make_graph(body, fn.name, [], [onnx.ValueInfoProto(name=o) for o in fn.output])
    return run_graph(graph, inner, fn_opsets, functions)


def run_graph(graph, env: dict[str, Any], opsets: dict[str, int], functions) -> list[Any]:
    from onnx import numpy_helper

    env = dict(env)
    for init in graph.initializer:
        env[init.name] = numpy_helper.to_array(init)
    for node in graph.node:
        outs = run_node(node, env, opsets, functions)
        for name, value in zip(node.output, outs):
            if name:
                env[name] = value
    return [env[o.name] for o in graph.output]


def run_model(model, inputs: list[Any]) -> list[Any]:
    """Run an onnx ModelProto on positional inputs with onyx kernels."""
    opsets = {registry.normalize_domain(o.domain): o.version for o in model.opset_import}
    functions = {(f.domain, f.name): f for f in model.functions}
    init_names = {i.name for i in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in init_names]
    env = dict(zip(graph_inputs, inputs))
    return run_graph(model.graph, env, opsets, functions)


def to_numpy(value: Any) -> Any:
    """Expected values in the suite may be TensorProtos: convert them."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    return value


def assert_close(got: Any, expected: Any, rtol: float, atol: float, where: str = "") -> None:
    """The suite's comparison: floats within rtol/atol, everything else exact, element types exact."""
    expected = to_numpy(expected)
    if expected is None:
        assert got is None, f"{where}: expected None (empty optional), got {type(got)}"
        return
    if isinstance(expected, list):
        assert isinstance(got, list), f"{where}: expected a sequence, got {type(got)}"
        assert len(got) == len(expected), f"{where}: sequence length {len(got)} != {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_close(g, e, rtol, atol, f"{where}[{i}]")
        return
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray | np.generic), f"{where}: expected an array, got {type(got)}"
    got = np.asarray(got)
    if expected.dtype == object:
        assert got.dtype == object, f"{where}: dtype {got.dtype} != object (string)"
        assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
        assert got.tolist() == expected.tolist(), f"{where}: strings differ"
        return
    assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} != {expected.dtype}"
    assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
    if expected.dtype.kind in "fc" or expected.dtype.itemsize == 1 and expected.dtype.kind == "V":
        np.testing.assert_allclose(
            got.astype(np.float64) if got.dtype.kind != "c" else got,
            expected.astype(np.float64) if expected.dtype.kind != "c" else expected,
            rtol=rtol,
            atol=atol,
            err_msg=where,
        )
    elif expected.dtype.kind not in "biu?" and expected.dtype.names is None:
        # ml_dtypes types (bfloat16, float8, int4...) compare through float64
        np.testing.assert_allclose(
            got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, err_msg=where
        )
    else:
        np.testing.assert_array_equal(got, expected, err_msg=where)


def check_case(case, runner=run_model) -> None:
    """Run every data set of a node-suite test case and compare."""
    for k, (inputs, outputs) in enumerate(case.data_sets):
        got = runner(case.model, [to_numpy(x) for x in inputs])
        assert len(got) == len(outputs), f"{case.name}: {len(got)} outputs, expected {len(outputs)}"
        for i, (g, e) in enumerate(zip(got, outputs)):
            assert_close(g, e, case.rtol, case.atol, f"{case.name} data set {k} output {i}")


def run_with_session(model, inputs: list[Any]) -> list[Any]:
    """Run through onyx's own loader, optimizer and session (the default of ``main``)."""
    import onyx

    sess = onyx.InferenceSession(model.SerializeToString())
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def main(argv: list[str]) -> int:
    import traceback
    import warnings

    warnings.simplefilter("ignore")
    from onnx.backend.test.case.node import collect_testcases

    kernels_only = "--kernels" in argv
    pattern = [p.lower() for p in argv[1:] if p != "--kernels"]
    passed = failed = 0
    for case in collect_testcases():
        if pattern and not any(p in case.name.lower() for p in pattern):
            continue
        try:
            check_case(case, run_model if kernels_only else run_with_session)
            passed += 1
        except Exception as e:  # noqa: BLE001 - a report of every failure
            failed += 1
            msg = "".join(traceback.format_exception_only(type(e), e)).strip().splitlines()
            print(f"FAIL {case.name}: {msg[0][:300] if msg else type(e).__name__}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
