"""onyx.compose: merged, prefixed, expanded and extracted models give onnxruntime's outputs of the
parts run in sequence (or of the matching intermediates), have the structure onnx.compose gives on the
same inputs, and refuse bad input with the names at fault."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.compose
import onnx.utils
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onyx
from onyx import compose
from onyx.errors import InvalidArgument

F = TP.FLOAT


def vi(name, shape, elem=F):
    return h.make_tensor_value_info(name, elem, shape)


def model_a(with_if: bool = False) -> onnx.ModelProto:
    """x -> (a = Relu(x @ w + b), s = Sigmoid(x)); ``with_if``: ``w`` chosen by an If whose branches
    read the outer initializer (onnx.compose leaves such outer names unrenamed, onnx/onnx#4687)."""
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["mm"], name="mm"),
        h.make_node("Add", ["mm", "b"], ["pre"], name="add"),
        h.make_node("Relu", ["pre"], ["a"], name="relu"),
        h.make_node("Sigmoid", ["x"], ["s"], name="sig"),
    ]
    if with_if:
        then = h.make_graph([h.make_node("Identity", ["w"], ["t"])], "then", [], [vi("t", [3, 4])])
        other = h.make_graph([h.make_node("Neg", ["w"], ["e"])], "else", [], [vi("e", [3, 4])])
        nodes[:1] = [
            h.make_node("ReduceSum", ["x"], ["total"], keepdims=0, name="sum"),
            h.make_node("Greater", ["total", "zero"], ["cond"], name="gt"),
            h.make_node("If", ["cond"], ["wsel"], then_branch=then, else_branch=other, name="if"),
            h.make_node("MatMul", ["x", "wsel"], ["mm"], name="mm"),
        ]
    inits = [
        nh.from_array(np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4), "w"),
        nh.from_array(np.linspace(0, 1, 4).astype(np.float32), "b"),
        nh.from_array(np.array(0, np.float32), "zero"),
    ]
    g = h.make_graph(nodes, "A", [vi("x", [2, 3])], [vi("a", [2, 4]), vi("s", [2, 3])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 9
    return m


def model_b() -> onnx.ModelProto:
    """(u, v) -> out = Tanh(u) * 2 + ReduceMean(v); names that collide with model_a's ('pre', 'b')."""
    nodes = [
        h.make_node("Tanh", ["u"], ["pre"], name="relu"),
        h.make_node("Mul", ["pre", "b"], ["m"], name="mul"),
        h.make_node("ReduceMean", ["v"], ["r"], keepdims=0, name="rm"),
        h.make_node("Add", ["m", "r"], ["out"], name="add2"),
    ]
    inits = [nh.from_array(np.array(2, np.float32), "b")]
    g = h.make_graph(nodes, "B", [vi("u", [2, 4]), vi("v", [2, 3])], [vi("out", [2, 4])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 9
    return m


def to_onyx(m: onnx.ModelProto) -> onyx.Model:
    return onyx.load_from_string(m.SerializeToString())


def to_onnx(m: onyx.Model) -> onnx.ModelProto:
    proto = onnx.load_from_string(onyx.serialize(m))
    onnx.checker.check_model(proto, full_check=True)
    return proto


def run(m: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


def structure(m: onnx.ModelProto) -> tuple:
    """What must agree with onnx.compose: inputs, outputs, nodes (names, ops, wiring), initializers."""
    g = m.graph

    def sub(graph):
        return [(n.name, n.op_type, list(n.input), list(n.output)) for n in graph.node]

    nodes = []
    for n in g.node:
        subs = [sub(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
        nodes.append((n.name, n.op_type, list(n.input), list(n.output), subs))
    return (
        [i.name for i in g.input],
        [o.name for o in g.output],
        nodes,
        sorted(i.name for i in g.initializer),
        sorted({(o.domain, o.version) for o in m.opset_import}),
    )


X = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)


def test_merge_models_matches_running_in_sequence_and_onnx_compose() -> None:
    a, b = model_a(), model_b()
    io_map = [("a", "u"), ("s", "v")]
    merged = compose.merge_models(to_onyx(a), to_onyx(b), io_map, prefix1="A/", prefix2="B/")
    proto = to_onnx(merged)
    first = run(a, {"x": X})
    second = run(b, {"u": first["a"], "v": first["s"]})
    got = run(proto, {"A/x": X})
    assert list(got) == ["B/out"]
    np.testing.assert_allclose(got["B/out"], second["out"], rtol=1e-6, atol=1e-6)
    reference = onnx.compose.merge_models(a, b, io_map, prefix1="A/", prefix2="B/")
    assert structure(proto) == structure(reference)
    assert (merged.producer_name, merged.ir_version) == (reference.producer_name, reference.ir_version)


def test_merge_keeps_unconnected_outputs_and_selected_ones() -> None:
    a, b = model_a(), model_b()
    merged = compose.merge_models(to_onyx(a), to_onyx(b), [("a", "u")], prefix2="B/")
    reference = onnx.compose.merge_models(a, b, [("a", "u")], prefix2="B/")
    proto = to_onnx(merged)
    assert structure(proto) == structure(reference)
    assert [i.name for i in proto.graph.input] == ["x", "B/v"]
    assert [o.name for o in proto.graph.output] == ["s", "B/out"]
    got = run(proto, {"x": X, "B/v": X})
    np.testing.assert_allclose(got["s"], run(a, {"x": X})["s"])
    only = compose.merge_models(to_onyx(a), to_onyx(b), [("a", "u")], outputs=["B/out"], prefix2="B/")
    reference = onnx.compose.merge_models(a, b, [("a", "u")], outputs=["B/out"], prefix2="B/")
    assert [o.name for o in to_onnx(only).graph.output] == [o.name for o in reference.graph.output]


def test_merge_graphs_matches_onnx() -> None:
    a, b = model_a(), model_b()
    g = compose.merge_graphs(to_onyx(a).graph, to_onyx(b).graph, [("a", "u")], prefix1="p1_", prefix2="p2_")
    reference = onnx.compose.merge_graphs(a.graph, b.graph, [("a", "u")], prefix1="p1_", prefix2="p2_")
    assert g.name == reference.name and g.doc_string == reference.doc_string
    m = onyx.Model(g, {"": 18}, ir_version=9)
    assert structure(to_onnx(m))[:4] == structure(h.make_model(reference))[:4]


def test_name_collisions_are_listed() -> None:
    with pytest.raises(InvalidArgument, match=r"overlapping names: repeated edge names b, pre"):
        compose.merge_models(to_onyx(model_a()), to_onyx(model_b()), [("a", "u")])
    overlaps = compose.check_overlapping_names(to_onyx(model_a()).graph, to_onyx(model_b()).graph)
    reference = onnx.compose.check_overlapping_names(model_a().graph, model_b().graph)
    assert sorted((k, sorted(v)) for k, v in overlaps) == sorted((k, sorted(v)) for k, v in reference)


def test_bad_io_map_and_versions() -> None:
    a, b = to_onyx(model_a()), to_onyx(model_b())
    with pytest.raises(InvalidArgument, match="output 'nope' is not present in g1"):
        compose.merge_models(a, b, [("nope", "u")], prefix2="B/")
    with pytest.raises(InvalidArgument, match="input 'B/zz' is not present in g2"):
        compose.merge_models(a, b, [("a", "zz")], prefix2="B/")
    with pytest.raises(InvalidArgument, match="pairs"):
        compose.merge_models(a, b, ["a"], prefix2="B/")
    other_ir = to_onyx(model_b())
    other_ir.ir_version = 8
    with pytest.raises(InvalidArgument, match="IR version mismatch 9 != 8"):
        compose.merge_models(a, other_ir, [("a", "u")], prefix2="B/")
    other_opset = model_b()
    other_opset.opset_import[0].version = 17
    with pytest.raises(InvalidArgument, match="different opsets of domain 'ai.onnx': 18 and 17"):
        compose.merge_models(a, to_onyx(other_opset), [("a", "u")], prefix2="B/")
    with pytest.raises(InvalidArgument, match="onyx Model"):
        compose.merge_models(model_a(), b, [("a", "u")])


def test_metadata_and_function_conflicts() -> None:
    a, b = to_onyx(model_a()), to_onyx(model_b())
    a.metadata_props = [("author", "x")]
    b.metadata_props = [("author", "y")]
    with pytest.raises(InvalidArgument, match="metadata property 'author'"):
        compose.merge_models(a, b, [("a", "u")], prefix2="B/")
    fn = h.make_function(
        "local", "f", ["i"], ["o"], [h.make_node("Relu", ["i"], ["o"])], [h.make_opsetid("", 18)]
    )
    with_fn = []
    for m in (model_a(), model_b()):
        m.functions.append(fn)
        m.opset_import.append(h.make_opsetid("local", 1))
        with_fn.append(to_onyx(m))
    second = compose.add_prefix(with_fn[1], "B/", rename_functions=False)
    with pytest.raises(InvalidArgument, match="overlapping local function names: local::f"):
        compose.merge_models(with_fn[0], second, [("a", "B/u")])
    merged = compose.merge_models(with_fn[0], with_fn[1], [("a", "u")], prefix1="A/", prefix2="B/")
    assert sorted(f.name for f in merged.functions) == ["A/f", "B/f"]


def test_add_prefix_matches_onnx() -> None:
    source = to_onyx(model_a())
    proto = to_onnx(compose.add_prefix(source, "p/"))
    assert structure(proto) == structure(onnx.compose.add_prefix(model_a(), "p/"))
    np.testing.assert_allclose(run(proto, {"p/x": X})["p/a"], run(model_a(), {"x": X})["a"])
    assert [i.name for i in source.graph.inputs] == ["x"]  # not in place


def test_add_prefix_renames_outer_names_inside_subgraphs() -> None:
    proto = to_onnx(compose.add_prefix(to_onyx(model_a(with_if=True)), "p/"))  # passes onnx's full check
    branches = [a.g for a in proto.graph.node[2].attribute]
    assert sorted(list(b.node[0].input) for b in branches) == [["p/w"], ["p/w"]]
    for x in (X, -np.abs(X)):  # both branches
        np.testing.assert_allclose(run(proto, {"p/x": x})["p/a"], run(model_a(True), {"x": x})["a"])
    merged = compose.merge_models(
        to_onyx(model_a(True)), to_onyx(model_b()), [("a", "u")], prefix1="A/", prefix2="B/"
    )
    out = run(to_onnx(merged), {"A/x": X, "B/v": X})["B/out"]
    first = run(model_a(True), {"x": X})
    np.testing.assert_allclose(out, run(model_b(), {"u": first["a"], "v": X})["out"], rtol=1e-6)


@pytest.mark.parametrize(
    "flags",
    [
        {"rename_nodes": False},
        {"rename_edges": False},
        {"rename_inputs": False, "rename_edges": False},
        {"rename_outputs": False, "rename_edges": False},
        {"rename_initializers": False, "rename_edges": False},
    ],
)
def test_add_prefix_flags_match_onnx(flags) -> None:
    ours = to_onnx(compose.add_prefix(to_onyx(model_a()), "q_", **flags))
    reference = onnx.compose.add_prefix(model_a(), "q_", **flags)
    assert structure(ours)[:4] == structure(reference)[:4]


def test_add_prefix_graph_in_place_and_name_map() -> None:
    m = to_onyx(model_a())
    names: dict[str, str] = {}
    g = compose.add_prefix_graph(m.graph, "z_", inplace=True, name_map=names)
    assert g is m.graph and names["x"] == "z_x" and "z_w" in m.graph.initializers
    with pytest.raises(InvalidArgument, match="prefix must be a str"):
        compose.add_prefix_graph(m.graph, 3)


@pytest.mark.parametrize("dim_idx", [0, 1, 2])
def test_expand_out_dim_matches_onnx(dim_idx: int) -> None:
    ours = to_onnx(compose.expand_out_dim(to_onyx(model_a()), dim_idx))
    reference = onnx.compose.expand_out_dim(model_a(), dim_idx)
    assert structure(ours) == structure(reference)
    want, got = run(model_a(), {"x": X}), run(ours, {"x": X})
    for name in ("a", "s"):
        np.testing.assert_array_equal(got[name], np.expand_dims(want[name], dim_idx))
    with pytest.raises(InvalidArgument, match="dim_idx must be an int"):
        compose.expand_out_dim(to_onyx(model_a()), "1")


def _with_intermediates(m: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(m)
    out.graph.output.extend(h.make_empty_tensor_value_info(n) for n in names)
    return out


def test_extract_model_gives_the_intermediates() -> None:
    a = model_a()
    full = run(_with_intermediates(a, ["pre", "mm"]), {"x": X})
    part = compose.extract_model(to_onyx(a), ["mm"], ["a"])
    proto = to_onnx(part)
    assert [n.op_type for n in proto.graph.node] == ["Add", "Relu"]
    assert [i.name for i in proto.graph.initializer] == ["b"]
    np.testing.assert_allclose(run(proto, {"mm": full["mm"]})["a"], full["a"])
    reference = onnx.utils.Extractor(onnx.shape_inference.infer_shapes(a)).extract_model(["mm"], ["a"])
    assert structure(proto)[:4] == structure(reference)[:4]
    # a cut that keeps the If: its branches read the outer initializer w, which comes along
    with_if = model_a(with_if=True)
    full = run(_with_intermediates(with_if, ["pre"]), {"x": X})
    part = to_onnx(compose.extract_model(to_onyx(with_if), ["x"], ["pre"]))
    np.testing.assert_allclose(run(part, {"x": X})["pre"], full["pre"])
    assert sorted(i.name for i in part.graph.initializer) == ["b", "w", "zero"]


def test_extract_model_bad_names() -> None:
    m = to_onyx(model_a())
    with pytest.raises(InvalidArgument, match="'nope' is not a value of graph 'A'"):
        compose.extract_model(m, ["x"], ["nope"])
    with pytest.raises(InvalidArgument, match="'ghost' is not a value"):
        compose.extract_model(m, ["ghost"], ["a"])
    with pytest.raises(
        InvalidArgument, match=r"output 's' cannot be computed from inputs \['mm'\]: it needs 'x'"
    ):
        compose.extract_model(m, ["mm"], ["a", "pre", "s"])
    with pytest.raises(InvalidArgument, match="list of value names"):
        compose.extract_model(m, "x", ["a"])


def test_extract_model_file(tmp_path) -> None:
    src, dst = tmp_path / "a.onnx", tmp_path / "part.onnx"
    onnx.save(model_a(), src)
    compose.extract_model_file(src, dst, ["mm"], ["a"])
    reference = tmp_path / "ref.onnx"
    onnx.utils.extract_model(str(src), str(reference), ["mm"], ["a"])
    assert structure(onnx.load(dst))[:4] == structure(onnx.load(reference))[:4]
    with pytest.raises(InvalidArgument, match="is the input model"):
        compose.extract_model_file(src, src, ["mm"], ["a"])
    with pytest.raises(onyx.errors.NoSuchFile):
        compose.extract_model_file(tmp_path / "missing.onnx", tmp_path / "x.onnx", ["mm"], ["a"])


def test_merge_with_selected_inputs_cuts_the_graphs() -> None:
    a, b = model_a(), model_b()
    merged = compose.merge_models(to_onyx(a), to_onyx(b), [("a", "u")], inputs=["x", "B/v"], prefix2="B/")
    reference = onnx.compose.merge_models(a, b, [("a", "u")], inputs=["x", "B/v"], prefix2="B/")
    assert structure(to_onnx(merged))[:2] == structure(reference)[:2]
    with pytest.raises(InvalidArgument, match="g1 must be an onyx Graph"):
        compose.merge_graphs(a.graph, to_onyx(b).graph, [("a", "u")])


def test_expand_out_dim_graph_in_place() -> None:
    m = to_onyx(model_a())
    g = compose.expand_out_dim_graph(m.graph, 0, inplace=True)
    assert g is m.graph
    assert [list(v.type.shape.dims) for v in g.outputs] == [[1, 2, 4], [1, 2, 3]]
