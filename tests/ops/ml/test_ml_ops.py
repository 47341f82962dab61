"""Single ai.onnx.ml nodes against onnxruntime (or exact expectations): every op, its versions and the
two-class corner cases of the classifiers."""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from onyx.errors import InvalidArgument
from tests.conformance.harness import run_model

warnings.filterwarnings("ignore")
F, I64, S, D, I32 = (
    TensorProto.FLOAT,
    TensorProto.INT64,
    TensorProto.STRING,
    TensorProto.DOUBLE,
    TensorProto.INT32,
)


def node_model(op, inputs, outputs, ml=1, onnx_opset=17, **attrs):
    """inputs/outputs: lists of (name, elem_type, shape) or (name, TypeProto)."""

    def vi(spec):
        if isinstance(spec[1], TensorProto.DataType.__class__) or isinstance(spec[1], int):
            return helper.make_tensor_value_info(spec[0], spec[1], spec[2] if len(spec) > 2 else None)
        return helper.make_value_info(spec[0], spec[1])

    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    g = helper.make_graph([node], "g", [vi(i) for i in inputs], [vi(o) for o in outputs])
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", onnx_opset), helper.make_opsetid("ai.onnx.ml", ml)]
    )
    m.ir_version = 8
    return m


def ort_run(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: v for i, v in zip(s.get_inputs(), feeds)})


def same(m, feeds, rtol=1e-5, atol=1e-6):
    exp = ort_run(m, feeds)
    got = run_model(m, feeds)
    assert len(got) == len(exp)
    for k, (g, e) in enumerate(zip(got, exp)):
        if isinstance(e, list):
            assert g == pytest.approx(e) if not e or not isinstance(e[0], dict) else _dicts_close(g, e)
            continue
        g = np.asarray(g)
        assert g.shape == e.shape, f"output {k}: {g.shape} != {e.shape}"
        if e.dtype == object:
            assert g.dtype == object and g.tolist() == e.tolist(), f"output {k}: {g.tolist()} != {e.tolist()}"
        else:
            assert g.dtype == e.dtype, f"output {k}: {g.dtype} != {e.dtype}"
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {k}")
    return got


def _dicts_close(g, e):
    assert len(g) == len(e)
    for a, b in zip(g, e):
        assert set(a) == set(b)
        for k in b:
            assert a[k] == pytest.approx(b[k], rel=1e-6)
    return True


# ---- small transformers ------------------------------------------------------------------------


def test_array_feature_extractor_types():
    for x, et in [
        (np.arange(12, dtype=np.int64).reshape(3, 4), I64),
        (np.arange(24, dtype=np.float32).reshape(2, 3, 4), F),
        (np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object), S),
        (np.arange(5, dtype=np.float32), F),
    ]:
        m = node_model("ArrayFeatureExtractor", [("X", et), ("Y", I64)], [("Z", et)])
        same(m, [x, np.array([2, 0, 2], np.int64)])
    m = node_model("ArrayFeatureExtractor", [("X", F), ("Y", I64)], [("Z", F)])
    with pytest.raises(InvalidArgument):
        run_model(m, [np.ones((2, 3), np.float32), np.array([3], np.int64)])


@pytest.mark.parametrize("dtype,et", [(np.float32, F), (np.float64, D), (np.int64, I64), (np.int32, I32)])
def test_binarizer(dtype, et):
    m = node_model("Binarizer", [("X", et)], [("Y", et)], threshold=1.0)
    x = np.array([[-1, 0, 1, 2, 5]], dtype=dtype)
    if dtype == np.float32:
        same(m, [x])
    got = run_model(m, [x])[0]
    assert got.dtype == dtype and got.tolist() == [[0, 0, 0, 1, 1]]


@pytest.mark.parametrize(
    "cast_to,map_form,values",
    [
        ("TO_FLOAT", "DENSE", {1: 2.5, 0: 1.0, 4: 3.0}),
        ("TO_INT64", "DENSE", {1: 2.5, 0: 1.0, 4: -3.0}),
        ("TO_STRING", "DENSE", {2: 1.0, 0: 7.25, 1: -3e-5}),
        ("TO_STRING", "SPARSE", {2: 1.0, 0: 7.0}),
        ("TO_FLOAT", "SPARSE", {1: 2.5, 0: 1.0, 4: 3.0}),
        ("TO_INT64", "SPARSE", {1: 2.0, 3: 5.0}),
    ],
)
def test_cast_map(cast_to, map_form, values):
    out_t = {"TO_FLOAT": F, "TO_INT64": I64, "TO_STRING": S}[cast_to]
    mt = helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, None))
    m = node_model("CastMap", [("X", mt)], [("Y", out_t)], cast_to=cast_to, map_form=map_form, max_map=6)
    feeds = [{k: np.float32(v) for k, v in values.items()}]
    same(m, feeds)


def test_cast_map_string_values():
    # onnxruntime's Python API cannot feed map(int64, string): exact expectations instead
    mt = helper.make_map_type_proto(I64, helper.make_tensor_type_proto(S, None))
    m = node_model("CastMap", [("X", mt)], [("Y", F)], cast_to="TO_FLOAT")
    got = run_model(m, [{3: "1.5", 1: "-2"}])[0]
    assert got.dtype == np.float32 and got.tolist() == [[-2.0, 1.5]]


def test_category_mapper():
    attrs = dict(cats_strings=["a", "b", "c"], cats_int64s=[10, 20, 30], default_int64=-7, default_string="?")
    m = node_model("CategoryMapper", [("X", S)], [("Y", I64)], **attrs)
    same(m, [np.array([["a", "z"], ["c", "b"]], dtype=object)])
    m = node_model("CategoryMapper", [("X", I64)], [("Y", S)], **attrs)
    same(m, [np.array([10, 5, 30, 20], dtype=np.int64)])


def test_dict_vectorizer_int_keys_and_string_values():
    mt = helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, None))
    m = node_model("DictVectorizer", [("X", mt)], [("Y", F)], int64_vocabulary=[3, 1, 7])
    same(m, [{1: np.float32(2.0), 7: np.float32(-1.0), 99: np.float32(5.0)}])


@pytest.mark.parametrize("dims", [None, [2, 3], [1, 4]])
def test_feature_vectorizer(dims):
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6, 7], [8, 9, 10]], np.float32)
    kw = {"inputdimensions": dims} if dims else {"inputdimensions": [2, 3]}
    m = node_model("FeatureVectorizer", [("A", F), ("B", F)], [("Y", F)], **kw)
    same(m, [a, b])
    # mixed input types (onnxruntime binds one type for all inputs; the spec allows each its own)
    m = node_model("FeatureVectorizer", [("A", F), ("B", I64)], [("Y", F)], **kw)
    np.testing.assert_array_equal(
        run_model(m, [a, b.astype(np.int64)])[0],
        ort_run(node_model("FeatureVectorizer", [("A", F), ("B", F)], [("Y", F)], **kw), [a, b])[0],
    )


def test_imputer():
    m = node_model(
        "Imputer",
        [("X", F)],
        [("Y", F)],
        imputed_value_floats=[1.0, 2.0, 3.0],
        replaced_value_float=float("nan"),
    )
    same(m, [np.array([[np.nan, 5, np.nan], [1, np.nan, 0]], np.float32)])
    m = node_model("Imputer", [("X", F)], [("Y", F)], imputed_value_floats=[9.0], replaced_value_float=0.0)
    same(m, [np.array([[0, 5, 0], [1, 0, 0]], np.float32)])
    m = node_model(
        "Imputer", [("X", I64)], [("Y", I64)], imputed_value_int64s=[4, 5], replaced_value_int64=-1
    )
    same(m, [np.array([[-1, 2], [3, -1]], np.int64)])


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
def test_normalizer(norm):
    m = node_model("Normalizer", [("X", F)], [("Y", F)], norm=norm)
    same(m, [np.array([[1, -2, 3], [-4, 5, 0.5]], np.float32)])
    m = node_model("Normalizer", [("X", I64)], [("Y", F)], norm=norm)
    same(m, [np.array([[1, -2, 3], [4, 5, 6]], np.int64)])


def test_one_hot_encoder():
    m = node_model("OneHotEncoder", [("X", I64)], [("Y", F)], cats_int64s=[4, 1, 9])
    same(m, [np.array([[1, 9], [7, 4]], np.int64)])
    m = node_model("OneHotEncoder", [("X", S)], [("Y", F)], cats_strings=["x", "y"])
    same(m, [np.array([["y", "q", "x"]], dtype=object)])
    m = node_model("OneHotEncoder", [("X", D)], [("Y", F)], cats_int64s=[1, 2])
    same(m, [np.array([1.0, 2.0, 3.0])])
    m = node_model("OneHotEncoder", [("X", I64)], [("Y", F)], cats_int64s=[1, 2], zeros=0)
    with pytest.raises(InvalidArgument):
        run_model(m, [np.array([3], np.int64)])


def test_scaler():
    m = node_model("Scaler", [("X", F)], [("Y", F)], offset=[1.0, 2.0], scale=[0.5, 2.0])
    same(m, [np.array([[1, 2], [3, 5]], np.float32)])
    m = node_model("Scaler", [("X", D)], [("Y", F)], offset=[1.0], scale=[3.0])
    same(m, [np.array([[1, 2], [3, 5]], np.float64)])


def test_zipmap_int_and_string_labels():
    st = helper.make_sequence_type_proto(
        helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, None))
    )
    m = node_model("ZipMap", [("X", F)], [("Z", st)], classlabels_int64s=[3, 5])
    same(m, [np.array([[0.25, 0.75], [1, 0]], np.float32)])
    st = helper.make_sequence_type_proto(
        helper.make_map_type_proto(S, helper.make_tensor_type_proto(F, None))
    )
    m = node_model("ZipMap", [("X", F)], [("Z", st)], classlabels_strings=["a", "b", "c"])
    same(m, [np.array([[0.25, 0.5, 0.25]], np.float32)])


# ---- LabelEncoder versions -------------------------------------------------------------------


def test_label_encoder_v1():
    m = node_model(
        "LabelEncoder", [("X", S)], [("Y", I64)], ml=1, classes_strings=["a", "b"], default_int64=9
    )
    same(m, [np.array(["b", "a", "zz"], dtype=object)])
    m = node_model(
        "LabelEncoder", [("X", I64)], [("Y", S)], ml=1, classes_strings=["a", "b"], default_string="n"
    )
    same(m, [np.array([1, 0, 5], dtype=np.int64)])


def test_label_encoder_v2_float_keys():
    m = node_model(
        "LabelEncoder", [("X", F)], [("Y", S)], ml=2, keys_floats=[0.5, 1.5], values_strings=["lo", "hi"]
    )
    same(m, [np.array([1.5, 0.5, 2.0], np.float32)])
    m = node_model(
        "LabelEncoder",
        [("X", I64)],
        [("Y", F)],
        ml=2,
        keys_int64s=[3, 4],
        values_floats=[0.1, 0.2],
        default_float=7.0,
    )
    same(m, [np.array([[4, 3], [5, 3]], np.int64)])


def test_label_encoder_v4_tensors():
    keys = numpy_helper.from_array(np.array([1.0, np.nan, 3.0]), "keys_tensor")
    vals = numpy_helper.from_array(np.array([10, 20, 30], np.int32), "values_tensor")
    dflt = numpy_helper.from_array(np.array([-1], np.int32), "default_tensor")
    m = node_model(
        "LabelEncoder",
        [("X", D)],
        [("Y", I32)],
        ml=4,
        keys_tensor=keys,
        values_tensor=vals,
        default_tensor=dflt,
    )
    got = run_model(m, [np.array([3.0, np.nan, 2.0, 1.0])])[0]
    assert got.dtype == np.int32 and got.tolist() == [30, 20, -1, 10]


def test_label_encoder_bad_lengths():
    m = node_model("LabelEncoder", [("X", I64)], [("Y", I64)], ml=2, keys_int64s=[1, 2], values_int64s=[1])
    with pytest.raises(InvalidArgument):
        run_model(m, [np.array([1], np.int64)])


# ---- linear models and SVMs ----------------------------------------------------------------------


X2 = np.array([[1.0, -2.0], [-1.0, 0.5], [0.2, 0.1], [0.2, 0.0], [-0.1, 0.0]], np.float32)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("labels", [[0, 1], [5, 9], ["a", "b"]])
def test_linear_classifier_binary(post, labels):
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_ints"
    yt = S if isinstance(labels[0], str) else I64
    m = node_model(
        "LinearClassifier",
        [("X", F)],
        [("Y", yt), ("Z", F)],
        coefficients=[1.0, 2.0],
        intercepts=[0.5],
        post_transform=post,
        **{key: labels},
    )
    same(m, [X2])


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_classifier_multi(post):
    m = node_model(
        "LinearClassifier",
        [("X", F)],
        [("Y", S), ("Z", F)],
        coefficients=[1.0, 2.0, -1, 0.3, 2, 2],
        intercepts=[0.5, 0.1, 0.0],
        post_transform=post,
        classlabels_strings=["a", "b", "c"],
    )
    same(m, [X2])


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_linear_regressor(post):
    m = node_model(
        "LinearRegressor",
        [("X", F)],
        [("Y", F)],
        coefficients=[1.0, 2.0, -1, 0.5],
        intercepts=[0.5, -0.5],
        targets=2,
        post_transform=post,
    )
    same(m, [X2])


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "RBF", "SIGMOID"])
def test_svm_regressor_kernels(kernel):
    m = node_model(
        "SVMRegressor",
        [("X", F)],
        [("Y", F)],
        kernel_type=kernel,
        kernel_params=[0.5, 0.1, 3.0],
        n_supports=3,
        support_vectors=[1.0, 0.0, 0.0, 1.0, 0.5, -0.5],
        coefficients=[0.3, -0.2, 0.8],
        rho=[0.1],
    )
    same(m, [X2])
    m = node_model(
        "SVMRegressor",
        [("X", F)],
        [("Y", F)],
        kernel_type=kernel,
        kernel_params=[0.5, 0.1, 3.0],
        n_supports=3,
        support_vectors=[1.0, 0.0, 0.0, 1.0, 0.5, -0.5],
        coefficients=[0.3, -0.2, 0.8],
        rho=[0.1],
        one_class=1,
    )
    same(m, [X2])


def test_svm_regressor_linear_no_supports():
    m = node_model("SVMRegressor", [("X", F)], [("Y", F)], coefficients=[0.3, -0.2], rho=[0.1])
    got = run_model(m, [X2])[0]
    np.testing.assert_allclose(got, (X2 @ np.array([0.3, -0.2], np.float32) + 0.1)[:, None], rtol=1e-6)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_svm_classifier_linear_mode(post):
    m = node_model(
        "SVMClassifier",
        [("X", F)],
        [("Y", I64), ("Z", F)],
        coefficients=[1.0, 2.0, -1, 0.3, 2, 2],
        rho=[0.5, 0.1, 0.0],
        classlabels_ints=[0, 1, 2],
        post_transform=post,
    )
    y, z = run_model(m, [X2])
    scores = X2.astype(np.float64) @ np.array([[1.0, 2.0], [-1, 0.3], [2, 2]]).T + [0.5, 0.1, 0.0]
    assert y.dtype == np.int64 and y.tolist() == np.argmax(scores, axis=1).tolist()
    exp = scores if post == "NONE" else 1 / (1 + np.exp(-scores))
    np.testing.assert_allclose(z, exp, rtol=1e-5)


# ---- tree ensembles: crafted corner cases --------------------------------------------------------


def stump_classifier(class_ids, class_nodeids, class_weights, base_values=None, post="NONE", labels=(0, 1)):
    attrs = dict(
        nodes_treeids=[0, 0, 0],
        nodes_nodeids=[0, 1, 2],
        nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        nodes_values=[0.0, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0],
        nodes_falsenodeids=[2, 0, 0],
        class_treeids=[0] * len(class_ids),
        class_nodeids=class_nodeids,
        class_ids=class_ids,
        class_weights=class_weights,
        post_transform=post,
    )
    if isinstance(labels[0], str):
        attrs["classlabels_strings"] = list(labels)
    else:
        attrs["classlabels_int64s"] = list(labels)
    if base_values is not None:
        attrs["base_values"] = base_values
    yt = S if isinstance(labels[0], str) else I64
    return node_model("TreeEnsembleClassifier", [("X", F, [None, 1])], [("Y", yt), ("Z", F)], ml=3, **attrs)


STUMPS = [
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[0.3, 0.7]),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[-0.3, 0.7]),
    dict(class_ids=[0, 0], class_nodeids=[1, 2], class_weights=[0.3, 0.7]),
    dict(class_ids=[0, 0], class_nodeids=[1, 2], class_weights=[-0.3, 0.7]),
    dict(class_ids=[0, 1, 0, 1], class_nodeids=[1, 1, 2, 2], class_weights=[0.3, 0.7, 0.8, 0.2]),
    dict(
        class_ids=[0, 1, 0, 1], class_nodeids=[1, 1, 2, 2], class_weights=[0.3, 0.7, 0.8, -0.2], labels=(5, 9)
    ),
    dict(
        class_ids=[0, 1, 0, 1],
        class_nodeids=[1, 1, 2, 2],
        class_weights=[0.3, 0.7, 0.8, -0.2],
        labels=("a", "b"),
    ),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[-0.3, 0.7], post="LOGISTIC"),
    dict(class_ids=[0, 0], class_nodeids=[1, 2], class_weights=[-0.3, 0.7], post="LOGISTIC"),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[0.3, 0.7], post="SOFTMAX"),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[-0.3, 0.7], base_values=[0.5]),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[-0.3, 0.7], base_values=[0.5, 0.2]),
    dict(class_ids=[0, 0], class_nodeids=[1, 2], class_weights=[-0.3, 0.7], base_values=[0.5, 0.2]),
    dict(
        class_ids=[0, 1, 0, 1],
        class_nodeids=[1, 1, 2, 2],
        class_weights=[0.3, 0.7, 0.8, 0.2],
        base_values=[0.5, 0.2],
    ),
    dict(class_ids=[0, 1, 0], class_nodeids=[1, 1, 2], class_weights=[0.3, 0.7, 0.8], labels=(5, 9)),
    dict(
        class_ids=[1, 0],
        class_nodeids=[1, 2],
        class_weights=[0.3, 0.8],
        labels=(5, 9),
        base_values=[0.1, 0.2],
    ),
    dict(
        class_ids=[1, 1],
        class_nodeids=[1, 2],
        class_weights=[0.3, 0.8],
        base_values=[0.1, 0.2],
        post="LOGISTIC",
    ),
    dict(class_ids=[1, 1], class_nodeids=[1, 2], class_weights=[0.3, 0.0], labels=(0, 1, 2)),
    dict(class_ids=[1, 2], class_nodeids=[1, 2], class_weights=[-0.3, -0.1], labels=(0, 1, 2)),
    dict(
        class_ids=[0, 1, 2, 0],
        class_nodeids=[1, 1, 2, 2],
        class_weights=[0.3, 0.1, 0.5, 0.2],
        labels=(0, 1, 2),
        post="SOFTMAX_ZERO",
    ),
]


@pytest.mark.parametrize("case", range(len(STUMPS)))
def test_tree_classifier_corner_cases(case):
    same(stump_classifier(**STUMPS[case]), [np.array([[-1.0], [1.0], [0.0]], np.float32)])


def random_forest_attrs(rng, n_trees, depth, n_features, modes=("BRANCH_LEQ",), n_targets=1, missing=False):
    """A random complete forest in the legacy encoding."""
    a = {
        k: []
        for k in (
            "nodes_treeids nodes_nodeids nodes_featureids nodes_modes nodes_values nodes_truenodeids "
            "nodes_falsenodeids nodes_missing_value_tracks_true target_treeids target_nodeids "
            "target_ids target_weights"
        ).split()
    }
    for t in range(n_trees):
        n_internal = 2**depth - 1
        for i in range(2 ** (depth + 1) - 1):
            leaf = i >= n_internal
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(i)
            a["nodes_featureids"].append(int(rng.integers(n_features)) if not leaf else 0)
            a["nodes_modes"].append("LEAF" if leaf else str(rng.choice(modes)))
            a["nodes_values"].append(float(np.round(rng.standard_normal(), 1)) if not leaf else 0.0)
            a["nodes_truenodeids"].append(2 * i + 1 if not leaf else 0)
            a["nodes_falsenodeids"].append(2 * i + 2 if not leaf else 0)
            a["nodes_missing_value_tracks_true"].append(int(rng.integers(2)) if missing and not leaf else 0)
            if leaf:
                for k in range(n_targets):
                    a["target_treeids"].append(t)
                    a["target_nodeids"].append(i)
                    a["target_ids"].append(k)
                    a["target_weights"].append(float(rng.standard_normal()))
    return a


@pytest.mark.parametrize("agg", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize(
    "modes",
    [("BRANCH_LEQ",), ("BRANCH_LT",), ("BRANCH_GTE", "BRANCH_GT"), ("BRANCH_LEQ", "BRANCH_EQ", "BRANCH_NEQ")],
)
def test_tree_regressor_aggregates_and_modes(agg, modes):
    rng = np.random.default_rng(len(modes) * 10 + len(agg))
    a = random_forest_attrs(rng, 6, 4, 3, modes=modes, n_targets=2, missing=True)
    m = node_model(
        "TreeEnsembleRegressor",
        [("X", F, [None, 3])],
        [("Y", F)],
        ml=3,
        n_targets=2,
        aggregate_function=agg,
        base_values=[0.5, -1.0],
        **a,
    )
    X = np.round(rng.standard_normal((50, 3)), 1).astype(np.float32)
    X[::6, 1] = np.nan
    same(m, [X], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [1, 3])
def test_tree_regressor_v1_and_double_input(opset):
    rng = np.random.default_rng(opset)
    a = random_forest_attrs(rng, 4, 3, 2)
    m = node_model("TreeEnsembleRegressor", [("X", D, [None, 2])], [("Y", F)], ml=opset, n_targets=1, **a)
    same(m, [rng.standard_normal((20, 2))])


def test_tree_regressor_as_tensor_attributes():
    rng = np.random.default_rng(5)
    a = random_forest_attrs(rng, 3, 3, 2)
    a["nodes_values_as_tensor"] = numpy_helper.from_array(np.array(a.pop("nodes_values")), "v")
    a["target_weights_as_tensor"] = numpy_helper.from_array(np.array(a.pop("target_weights")), "w")
    m = node_model("TreeEnsembleRegressor", [("X", D, [None, 2])], [("Y", F)], ml=3, n_targets=1, **a)
    X = rng.standard_normal((20, 2))
    got = run_model(m, [X])[0]
    b = random_forest_attrs(np.random.default_rng(5), 3, 3, 2)
    m2 = node_model("TreeEnsembleRegressor", [("X", D, [None, 2])], [("Y", F)], ml=3, n_targets=1, **b)
    np.testing.assert_allclose(got, run_model(m2, [X])[0], rtol=1e-6)


def test_tree_regressor_bad_feature_index():
    a = random_forest_attrs(np.random.default_rng(0), 1, 2, 5)
    m = node_model("TreeEnsembleRegressor", [("X", F, [None, 2])], [("Y", F)], ml=3, n_targets=1, **a)
    with pytest.raises(InvalidArgument):
        run_model(m, [np.zeros((3, 1), np.float32)])


# ---- TreeEnsemble (ml opset 5) -----------------------------------------------------------------


def v5_model(dtype_et, **attrs):
    return node_model(
        "TreeEnsemble", [("X", dtype_et, [None, 2])], [("Y", dtype_et)], ml=5, onnx_opset=21, **attrs
    )


def _t(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


@pytest.mark.parametrize("agg", [0, 1, 2, 3])
@pytest.mark.parametrize("post", [0, 1, 2, 3, 4])
def test_tree_ensemble_v5_against_ort(agg, post):
    """onnxruntime 1.2x reads post_transform 1 as LOGISTIC and 2 as SOFTMAX, against the spec's
    'NONE' (0), 'SOFTMAX' (1), 'LOGISTIC' (2); onyx follows the spec, so ORT is asked with 1 and 2 swapped."""
    # two trees: tree 0 splits twice (one set-membership node), tree 1 is a single leaf
    attrs = dict(
        n_targets=2,
        aggregate_function=agg,
        post_transform=post,
        tree_roots=[0, 2],
        nodes_modes=_t("m", np.array([0, 6, 1], np.uint8)),
        nodes_featureids=[0, 1, 0],
        nodes_splits=_t("s", np.array([0.5, 0.0, 10.0], np.float32)),
        nodes_truenodeids=[1, 0, 3],
        nodes_trueleafs=[0, 1, 1],
        nodes_falsenodeids=[2, 1, 3],
        nodes_falseleafs=[1, 1, 1],
        nodes_missing_value_tracks_true=[1, 0, 0],
        leaf_targetids=[0, 1, 0, 1],
        leaf_weights=_t("w", np.array([1.0, 2.0, 3.0, -1.5], np.float32)),
        membership_values=_t("mv", np.array([1.0, 4.0, 7.0], np.float32)),
    )
    X = np.array([[0.0, 4.0], [0.0, 5.0], [1.0, 1.0], [np.nan, 7.0], [0.2, np.nan]], np.float32)
    got = run_model(v5_model(F, **attrs), [X])[0]
    attrs["post_transform"] = {1: 2, 2: 1}.get(post, post)
    exp = ort_run(v5_model(F, **attrs), [X])[0]
    assert got.dtype == exp.dtype and got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-6)


def test_tree_ensemble_v5_double():
    attrs = dict(
        n_targets=1,
        tree_roots=[0],
        nodes_modes=_t("m", np.array([3], np.uint8)),
        nodes_featureids=[1],
        nodes_splits=_t("s", np.array([0.25])),
        nodes_truenodeids=[0],
        nodes_trueleafs=[1],
        nodes_falsenodeids=[1],
        nodes_falseleafs=[1],
        leaf_targetids=[0, 0],
        leaf_weights=_t("w", np.array([1.0, 2.0])),
    )
    same(v5_model(D, **attrs), [np.array([[0.0, 0.3], [0.0, 0.25], [9.0, -1.0]])])


def test_tree_ensemble_v5_float16_matches_float32():
    def attrs(dt):
        return dict(
            n_targets=1,
            tree_roots=[0],
            nodes_modes=_t("m", np.array([0, 6], np.uint8)),
            nodes_featureids=[0, 1],
            nodes_splits=_t("s", np.array([0.5, 0.0], dt)),
            nodes_truenodeids=[1, 0],
            nodes_trueleafs=[0, 1],
            nodes_falsenodeids=[1, 1],
            nodes_falseleafs=[1, 1],
            leaf_targetids=[0, 0],
            leaf_weights=_t("w", np.array([1.5, -2.0], dt)),
            membership_values=_t("mv", np.array([2.0, np.nan], dt)),
        )

    X = np.array([[0.0, 2.0], [0.0, 3.0], [1.0, 2.0]], np.float32)
    got16 = run_model(v5_model(TensorProto.FLOAT16, **attrs(np.float16)), [X.astype(np.float16)])[0]
    got32 = run_model(v5_model(F, **attrs(np.float32)), [X])[0]
    assert got16.dtype == np.float16 and got16.shape == (3, 1)
    np.testing.assert_array_equal(got16.astype(np.float32), got32)
    assert got32.ravel().tolist() == [1.5, -2.0, -2.0]


def test_softmax_one_row_path_matches_the_array_path():
    """post_transform SOFTMAX: one short row goes through Python floats; it gives what the array path
    gives, also for NaN, +inf and rows of -inf."""
    from onyx.ops.ml._common import PY_ROW, softmax

    rng = np.random.default_rng(4)
    rows = [
        rng.normal(size=7) * 30,
        np.array([1.0, np.nan, 2.0]),
        np.array([np.nan, 1.0, 2.0]),
        np.array([1.0, np.inf, -2.0]),
        np.array([-np.inf, -np.inf]),
        np.array([-np.inf, 0.5, 3.0]),
        np.array([700.0, -700.0, 0.0]),
        np.array([2.5]),
        rng.normal(size=PY_ROW),
    ]
    for r in rows:
        one = r.reshape(1, -1)
        with np.errstate(invalid="ignore"):
            got = softmax(one)
            want = softmax(np.vstack([one, np.zeros_like(one)]))[:1]  # two rows: the array path
        assert got.shape == one.shape and got.dtype == np.float64
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-300)


def test_logistic_pair_one_score_path_matches_the_array_path():
    """A binary tree ensemble's LOGISTIC scores: one score goes through Python floats; it gives what the
    array path gives within two ulps of the type, at the ends of exp's range, for +-inf and NaN."""
    from onyx.ops.ml._common import logistic_pair

    values = [0.0, -0.0, 1e-30, 3.5, -3.5, 17.0, -17.0, 40.0, -40.0, 89.0, -104.0, 745.0, -745.0, np.inf]
    for dt, ulps in ((np.float32, 2 * 2.0**-23), (np.float64, 2 * 2.0**-52)):
        for v in [*values, -np.inf, np.nan]:
            with np.errstate(over="ignore", invalid="ignore"):
                x = np.array([v]).astype(dt)
                got = logistic_pair(x, np.empty((1, 2), dt))
                want = logistic_pair(np.array([x[0], 0], dt), np.empty((2, 2), dt))[:1]  # the array path
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=ulps, atol=1e-45)
