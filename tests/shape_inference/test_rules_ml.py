"""Shape rules of the ai.onnx.ml operators.

onnx's own inference knows little of ai.onnx.ml, so the rules are checked against what onnxruntime
(or onyx, where onnxruntime refuses the model) actually returns: element type, rank and every dim.
"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP

import onyx
from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from onyx.ir.types import MapType, SequenceType, TensorType
from onyx.shape_inference import known_fraction
from tests.shape_inference._mlctl_rules import (
    check_case,
    family_ops,
    infer,
    infer_all,
    infer_type,
    map_type,
    model,
    onnx_types,
    same_as_onnx,
    same_as_run,
    suite_cases,
)

N = Sym.named("N")
ML = "ai.onnx.ml"
oh_tensor = onnx.helper.make_tensor
F32 = np.float32


def ml_model(op, inputs, attrs, n_out=1, ml=3, opset=17):
    return model(op, inputs, attrs, domain=ML, ml=ml, opset=opset, n_out=n_out)


def run_check(op, inputs, attrs, feeds, n_out=1, ml=3, oracle="onnxruntime"):
    """onyx's types agree with a run's outputs, and with onnx's inference where it has a rule."""
    m = ml_model(op, inputs, attrs, n_out, ml)
    try:
        onnx_types(m)
    except onnx.shape_inference.InferenceError:
        pass  # onnx has no (or a failing) rule for this ai.onnx.ml op: the run decides
    else:
        same_as_onnx(m)
    return same_as_run(m, feeds, oracle)


X2 = ("X", TP.FLOAT, ["N", 3])
x2 = {"X": np.arange(12, dtype=F32).reshape(4, 3)}


def test_array_feature_extractor():
    got = run_check("ArrayFeatureExtractor", [X2, ("i", TP.INT64, [2])], {}, {**x2, "i": np.array([0, 2])})
    assert got["y0"] == (TP.FLOAT, [N, 2])
    ins = [("X", TP.INT64, [5]), ("i", TP.INT64, ["k"])]
    got = run_check("ArrayFeatureExtractor", ins, {}, {"X": np.arange(5), "i": np.array([1, 2, 3])})
    assert got["y0"] == (TP.INT64, [1, Sym.named("k")])
    ins = [("X", TP.STRING, ["N", 2, 5]), ("i", TP.INT64, [1, 3])]
    feeds = {"X": np.full((2, 2, 5), "a", dtype=object), "i": np.array([[0, 1, 4]])}
    assert run_check("ArrayFeatureExtractor", ins, {}, feeds)["y0"] == (TP.STRING, [N, 2, 3])


def test_binarizer_imputer_normalizer_scaler():
    assert run_check("Binarizer", [X2], {"threshold": 2.0}, x2)["y0"] == (TP.FLOAT, [N, 3])
    attrs = {"imputed_value_floats": [1.0], "replaced_value_float": 0.0}
    assert run_check("Imputer", [X2], attrs, x2)["y0"] == (TP.FLOAT, [N, 3])
    ins = [("X", TP.INT64, ["N"])]
    attrs = {"imputed_value_int64s": [7], "replaced_value_int64": 1}
    assert run_check("Imputer", ins, attrs, {"X": np.arange(4)})["y0"] == (TP.INT64, [N])
    for norm in ("MAX", "L1", "L2"):
        got = run_check(
            "Normalizer", [("X", TP.INT64, ["N", 3])], {"norm": norm}, {"X": np.ones((2, 3), np.int64)}
        )
        assert got["y0"] == (TP.FLOAT, [N, 3])
    ins = [("X", TP.DOUBLE, ["N", 2, 2])]
    got = run_check("Scaler", ins, {"scale": [2.0], "offset": [1.0]}, {"X": np.ones((3, 2, 2))})
    assert got["y0"] == (TP.FLOAT, [N, 2, 2])


def test_cast_map():
    mt = map_type(TP.INT64, onnx.helper.make_tensor_type_proto(TP.FLOAT, None))
    feeds = {"X": {1: 1.5, 3: 2.0}}
    got = run_check(
        "CastMap", [("X", mt)], {"cast_to": "TO_INT64", "map_form": "SPARSE", "max_map": 5}, feeds
    )
    assert got["y0"] == (TP.INT64, [1, 5])
    elem, dims = run_check("CastMap", [("X", mt)], {"cast_to": "TO_STRING"}, feeds)["y0"]
    assert elem == TP.STRING and dims[0] == 1 and isinstance(dims[1], Sym)
    assert infer("CastMap", [("X", mt)], {}, domain=ML, ml=1)[0] == TP.FLOAT
    with pytest.raises(InvalidGraph):
        infer("CastMap", [("X", mt)], {"cast_to": "TO_BOOL"}, domain=ML, ml=1)


def test_category_mapper():
    attrs = {"cats_int64s": [1, 2], "cats_strings": ["a", "b"]}
    feeds = {"X": np.array([["a", "c"]], dtype=object)}
    got = run_check("CategoryMapper", [("X", TP.STRING, ["N", 2])], attrs, feeds)
    assert got["y0"] == (TP.INT64, [N, 2])
    got = run_check("CategoryMapper", [("X", TP.INT64, ["N"])], attrs, {"X": np.array([1, 5])})
    assert got["y0"] == (TP.STRING, [N])


@pytest.mark.parametrize(
    "key,value,vocab,feed",
    [
        (TP.STRING, TP.FLOAT, {"string_vocabulary": ["a", "b", "c"]}, {"a": 1.0, "c": 2.0}),
        (TP.INT64, TP.DOUBLE, {"int64_vocabulary": [1, 2, 3, 4]}, {1: np.float64(1.0), 3: np.float64(2)}),
        (TP.STRING, TP.INT64, {"string_vocabulary": ["a", "b"]}, {"a": np.int64(1)}),
        (TP.INT64, TP.STRING, {"int64_vocabulary": [1, 2]}, {2: "x"}),
    ],
)
def test_dict_vectorizer(key, value, vocab, feed):
    mt = map_type(key, onnx.helper.make_tensor_type_proto(value, None))
    # onnxruntime takes Python maps of float values only: the others run on onyx's kernel
    oracle = "onnxruntime" if value == TP.FLOAT else "onyx"
    got = run_check("DictVectorizer", [("X", mt)], vocab, {"X": feed}, oracle=oracle)
    n = len(next(iter(vocab.values())))
    assert got["y0"] == (value, [1, n])


def test_dict_vectorizer_sequence_of_maps_and_key_mismatch():
    mt = map_type(TP.STRING, onnx.helper.make_tensor_type_proto(TP.FLOAT, None))
    seq = onnx.helper.make_sequence_type_proto(mt)
    elem, dims = infer("DictVectorizer", [("X", seq)], {"string_vocabulary": ["a"]}, domain=ML, ml=1)
    assert elem == TP.FLOAT and isinstance(dims[0], Sym) and dims[1] == 1
    with pytest.raises(InvalidGraph):
        infer("DictVectorizer", [("X", mt)], {"int64_vocabulary": [1]}, domain=ML, ml=1)


def test_feature_vectorizer():
    ins = [("a", TP.FLOAT, ["N", 2]), ("b", TP.FLOAT, ["N", 3])]
    feeds = {"a": np.ones((4, 2), F32), "b": np.ones((4, 3), F32)}
    got = run_check("FeatureVectorizer", ins, {"inputdimensions": [2, 4]}, feeds)
    assert got["y0"] == (TP.FLOAT, [N, 6])
    # without inputdimensions the columns add up (symbolically too)
    ins = [("a", TP.INT64, ["N", "p"]), ("b", TP.INT64, ["N", 3, 2])]
    assert infer("FeatureVectorizer", ins, {}, domain=ML, ml=1) == (TP.FLOAT, [N, Sym.named("p") + 6])
    with pytest.raises(InvalidGraph):
        infer("FeatureVectorizer", [("a", TP.FLOAT, [2, 2]), ("b", TP.FLOAT, [3, 2])], {}, domain=ML, ml=1)


@pytest.mark.parametrize(
    "ml,attrs,x,want",
    [
        (1, {"classes_strings": ["a", "b"]}, TP.STRING, TP.INT64),
        (1, {"classes_strings": ["a", "b"]}, TP.INT64, TP.STRING),
        (2, {"keys_int64s": [1, 2], "values_floats": [1.0, 2.0]}, TP.INT64, TP.FLOAT),
        (2, {"keys_strings": ["a"], "values_int64s": [3]}, TP.STRING, TP.INT64),
        (2, {"keys_floats": [1.0], "values_strings": ["x"]}, TP.FLOAT, TP.STRING),
        (
            4,
            {"keys_int64s": [1], "values_tensor": oh_tensor("v", TP.DOUBLE, [1], [2.0])},
            TP.INT64,
            TP.DOUBLE,
        ),
        (
            4,
            {"keys_strings": ["a"], "values_tensor": oh_tensor("v", TP.INT16, [1], [2])},
            TP.STRING,
            TP.INT16,
        ),
    ],
)
def test_label_encoder(ml, attrs, x, want):
    feed = (
        np.array(["a", "b"], dtype=object)
        if x == TP.STRING
        else np.array([1, 2], onnx.helper.tensor_dtype_to_np_dtype(x))
    )
    got = run_check("LabelEncoder", [("X", x, ["N"])], attrs, {"X": feed}, ml=ml)
    assert got["y0"] == (want, [N])


def test_linear_classifier_and_regressor():
    for labels, elem in (
        ({"classlabels_ints": [3, 5, 7]}, TP.INT64),
        ({"classlabels_strings": list("abc")}, TP.STRING),
    ):
        attrs = {"coefficients": [0.1] * 9, "intercepts": [0.0, 0.1, 0.2], **labels}
        y, z = run_check("LinearClassifier", [X2], attrs, x2, n_out=2).values()
        assert y == (elem, [N]) and z == (TP.FLOAT, [N, 3])
    # binary: one coefficient row, two labels, two score columns; a 1-D input is one row
    attrs = {"coefficients": [0.1, 0.2, 0.3], "intercepts": [0.5], "classlabels_ints": [0, 1]}
    y, z = run_check("LinearClassifier", [X2], attrs, x2, n_out=2).values()
    assert z == (TP.FLOAT, [N, 2])
    got = run_check("LinearClassifier", [("X", TP.FLOAT, [3])], attrs, {"X": np.ones(3, F32)}, n_out=2)
    assert got["y0"] == (TP.INT64, [1]) and got["y1"] == (TP.FLOAT, [1, 2])
    attrs = {"coefficients": [1.0] * 6, "intercepts": [0.0, 1.0], "targets": 2}
    assert run_check("LinearRegressor", [X2], attrs, x2)["y0"] == (TP.FLOAT, [N, 2])
    attrs = {"coefficients": [1.0] * 3, "intercepts": [0.0]}
    assert run_check("LinearRegressor", [("X", TP.FLOAT, [3])], attrs, {"X": np.ones(3, F32)})["y0"] == (
        TP.FLOAT,
        [1, 1],
    )


def test_one_hot_encoder():
    ins = [("X", TP.INT64, ["N", 2])]
    got = run_check("OneHotEncoder", ins, {"cats_int64s": [1, 2, 3]}, {"X": np.ones((2, 2), np.int64)})
    assert got["y0"] == (TP.FLOAT, [N, 2, 3])
    ins = [("X", TP.STRING, ["N"])]
    got = run_check(
        "OneHotEncoder", ins, {"cats_strings": ["a", "b"]}, {"X": np.array(["a", "c"], dtype=object)}
    )
    assert got["y0"] == (TP.FLOAT, [N, 2])


SVM_LIN = {
    "coefficients": [0.1] * 12,
    "rho": [0.1, 0.2, 0.3],
    "kernel_type": "LINEAR",
    "kernel_params": [0.1, 0, 1],
}
SVM_KER = {
    "kernel_type": "RBF",
    "kernel_params": [0.5, 0.0, 3.0],
    "vectors_per_class": [1, 1, 2],
    "support_vectors": [0.0] * 4 * 3 + [1.0] * 4,
    "coefficients": [1.0, -1.0, 0.5, -0.5] * 2,
    "rho": [0.1, 0.2, 0.3],
}


@pytest.mark.parametrize(
    "attrs,cols",
    [
        ({**SVM_LIN, "classlabels_ints": [1, 2, 3]}, 3),
        ({**SVM_LIN, "coefficients": [0.1] * 8, "rho": [0.1, 0.2], "classlabels_strings": ["n", "y"]}, 2),
        ({**SVM_KER, "classlabels_ints": [1, 2, 3]}, 3),
        ({**SVM_KER, "classlabels_strings": ["a", "b", "c"], "prob_a": [1.0] * 3, "prob_b": [0.1] * 3}, 3),
    ],
)
def test_svm_classifier(attrs, cols):
    x = ("X", TP.FLOAT, ["N", 4])
    got = run_check("SVMClassifier", [x], attrs, {"X": np.ones((5, 4), F32)}, n_out=2)
    elem = TP.STRING if "classlabels_strings" in attrs else TP.INT64
    assert got["y0"] == (elem, [N]) and got["y1"] == (TP.FLOAT, [N, cols])


def test_svm_classifier_one_vs_one_columns():
    # four classes with support vectors and no probabilities: one column per pair (as onyx computes)
    attrs = {
        **SVM_KER,
        "vectors_per_class": [1, 1, 1, 1],
        "coefficients": [1.0] * 12,
        "rho": [0.1] * 6,
        "classlabels_ints": [1, 2, 3, 4],
    }
    got = run_check(
        "SVMClassifier",
        [("X", TP.FLOAT, ["N", 4])],
        attrs,
        {"X": np.ones((2, 4), F32)},
        n_out=2,
        oracle="onyx",
    )
    assert got["y1"] == (TP.FLOAT, [N, 6])


def test_svm_regressor():
    attrs = {"coefficients": [0.1] * 4, "rho": [0.1], "kernel_type": "LINEAR", "n_supports": 0}
    attrs = {
        **SVM_KER,
        "coefficients": [1.0, 2.0],
        "support_vectors": [0.0] * 8,
        "n_supports": 2,
        "rho": [0.1],
    }
    attrs.pop("vectors_per_class")
    got = run_check("SVMRegressor", [("X", TP.FLOAT, ["N", 4])], attrs, {"X": np.ones((3, 4), F32)})
    assert got["y0"] == (TP.FLOAT, [N, 1])


TREE = {
    "nodes_treeids": [0, 0, 0],
    "nodes_nodeids": [0, 1, 2],
    "nodes_featureids": [0, 0, 0],
    "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
    "nodes_values": [0.5, 0.0, 0.0],
    "nodes_truenodeids": [1, 0, 0],
    "nodes_falsenodeids": [2, 0, 0],
}


@pytest.mark.parametrize(
    "labels", [{"classlabels_int64s": [0, 1, 2]}, {"classlabels_strings": ["a", "b", "c"]}]
)
def test_tree_ensemble_classifier(labels):
    attrs = {
        **TREE,
        "class_treeids": [0, 0],
        "class_nodeids": [1, 2],
        "class_ids": [0, 2],
        "class_weights": [1.0, 1.0],
        **labels,
    }
    got = run_check("TreeEnsembleClassifier", [X2], attrs, x2, n_out=2)
    elem = TP.STRING if "classlabels_strings" in labels else TP.INT64
    assert got["y0"] == (elem, [N]) and got["y1"] == (TP.FLOAT, [N, 3])


def test_tree_ensemble_regressor():
    attrs = {
        **TREE,
        "target_treeids": [0, 0],
        "target_nodeids": [1, 2],
        "target_ids": [0, 1],
        "target_weights": [1.0, 2.0],
    }
    assert run_check("TreeEnsembleRegressor", [X2], {**attrs, "n_targets": 2}, x2)["y0"] == (TP.FLOAT, [N, 2])
    # no n_targets: the largest target id + 1
    assert infer("TreeEnsembleRegressor", [X2], attrs, domain=ML, ml=3) == (TP.FLOAT, [N, 2])
    # a 1-D input is one row (onnxruntime refuses it; onyx's kernel takes it)
    ins = [("X", TP.DOUBLE, [3])]
    got = run_check("TreeEnsembleRegressor", ins, {**attrs, "n_targets": 2}, {"X": np.ones(3)}, oracle="onyx")
    assert got["y0"] == (TP.FLOAT, [1, 2])


def test_tree_ensemble_5():
    attrs = {
        "n_targets": 2,
        "tree_roots": [0],
        "nodes_modes": onnx.helper.make_tensor("m", TP.UINT8, [1], [0]),
        "nodes_featureids": [0],
        "nodes_splits": onnx.helper.make_tensor("s", TP.DOUBLE, [1], [0.5]),
        "nodes_truenodeids": [0],
        "nodes_trueleafs": [1],
        "nodes_falsenodeids": [1],
        "nodes_falseleafs": [1],
        "leaf_targetids": [0, 1],
        "leaf_weights": onnx.helper.make_tensor("w", TP.DOUBLE, [2], [1.0, 2.0]),
    }
    x = {"X": np.arange(6.0).reshape(2, 3)}
    got = run_check("TreeEnsemble", [("X", TP.DOUBLE, ["N", 3])], attrs, x, ml=5)
    assert got["y0"] == (TP.DOUBLE, [N, 2])


@pytest.mark.parametrize(
    "labels,key",
    [({"classlabels_int64s": [1, 2, 3]}, TP.INT64), ({"classlabels_strings": list("abc")}, TP.STRING)],
)
def test_zip_map(labels, key):
    m = ml_model("ZipMap", [X2], labels, ml=1)
    same_as_run(m, x2)
    t = infer_type("ZipMap", [X2], labels, domain=ML, ml=1)
    assert t == SequenceType(MapType(key, TensorType(TP.FLOAT, [])))
    with pytest.raises(InvalidGraph):
        infer_type("ZipMap", [("X", TP.FLOAT, ["N", 4])], labels, domain=ML, ml=1)


def test_unknown_inputs_keep_what_attributes_tell():
    # X of unknown rank: labels still [?] of the right type, scores [?, n_labels]
    attrs = {"coefficients": [0.1] * 9, "intercepts": [0.0] * 3, "classlabels_strings": list("abc")}
    y, z = infer_all("LinearClassifier", [("X", TP.FLOAT, None)], attrs, domain=ML, ml=1, n_out=2)
    assert y == (TP.STRING, [None]) and z == (TP.FLOAT, [None, 3])


def test_zipmap_after_classifier_in_one_graph():
    # a skl2onnx-like chain: classifier -> ZipMap; the sequence type reaches the graph output
    import onnx.helper as oh

    attrs = {"coefficients": [0.1] * 9, "intercepts": [0.0] * 3, "classlabels_ints": [0, 1, 2]}
    nodes = [
        oh.make_node("LinearClassifier", ["X"], ["label", "scores"], domain=ML, **attrs),
        oh.make_node("ZipMap", ["scores"], ["probs"], domain=ML, classlabels_int64s=[0, 1, 2]),
    ]
    from tests.shape_inference._mlctl_rules import graph_model, onyx_all_types, vi

    m = graph_model(nodes, [vi("X", TP.FLOAT, ["N", 3])], ["label", "probs"], opset=17, ml=1)
    got = onyx_all_types(m)
    assert got["probs"] == SequenceType(MapType(TP.INT64, TensorType(TP.FLOAT, [])))
    same_as_run(m, x2)


MODELS = sorted(glob.glob(str(Path(__file__).parents[1] / ".cache" / "models" / "*-skl2onnx.onnx")))


@pytest.mark.skipif(not MODELS, reason="no skl2onnx exports cached")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.split("/")[-1])
def test_skl2onnx_exports_fully_known_with_a_named_batch(path):
    """Every output of the sklearn exports agrees with onnxruntime's, and is fully known once the
    batch dim (left empty by skl2onnx) has a name."""
    mp = onnx.load(path)
    for i in mp.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_param = "N"
    n_feat = mp.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    same_as_run(mp, {mp.graph.input[0].name: np.random.default_rng(0).random((5, n_feat), dtype=F32)})
    m = onyx.load(mp.SerializeToString())
    onyx.infer_shapes(m, strict=True)
    k, t = known_fraction(m)
    assert k == t, (k, t)


CASES = suite_cases(
    [
        "ai_onnx_ml.array_feature_extractor",
        "ai_onnx_ml.binarizer",
        "ai_onnx_ml.label_encoder",
        "ai_onnx_ml.tree_ensemble",
    ],
    family_ops("ml"),
)


def test_suite_has_cases():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("ml") == []
