"""OnyxPredictor without Ray: columns to inputs, batch splitting and padding, batch formats, row errors."""

from __future__ import annotations

import numpy as np
import pytest

import onyx
from onyx.errors import InvalidArgument, OnyxError
from onyx.ray import ERROR_COLUMN, OnyxPredictor

from . import models

EPS32 = np.finfo(np.float32).eps


def reference(model: bytes, feeds: dict) -> list:
    return onyx.InferenceSession(model).run(None, feeds)


class CountingSession:
    """Wraps a session and records the batch size of each run."""

    def __init__(self, session):
        self.session, self.sizes = session, []

    def run(self, names, feeds):
        self.sizes.append(len(next(iter(feeds.values()))))
        return self.session.run(names, feeds)

    def __getattr__(self, name):
        return getattr(self.session, name)


def test_mixed_columns_equal_a_plain_session():
    data = models.mixed_data(37)
    p = OnyxPredictor(models.mixed(), max_batch_size=8)
    out = p(data)
    y, upper, sums = reference(models.mixed(), {k: data[k] for k in ("x", "text", "image")})
    assert set(out) == {"id", "x", "text", "image", "y", "upper", "sums"}
    np.testing.assert_array_equal(out["y"], y)
    assert out["upper"].tolist() == upper.tolist()
    np.testing.assert_array_equal(out["sums"], sums)
    np.testing.assert_array_equal(out["id"], data["id"])  # the input's columns come back unchanged


def test_dense_model_within_rounding_of_one_big_batch():
    data = models.features(300)
    p = OnyxPredictor(models.dense(), max_batch_size=64)
    out = p(data)
    scores, _ = reference(models.dense(), {"x": data["x"]})
    # a GEMM of another height may sum the 4 products in another order: bound by n * eps * sum |terms|
    bound = 5 * EPS32 * (np.abs(data["x"]) @ np.abs(models.W) + np.abs(models.B))
    assert np.all(np.abs(out["scores"] - scores) <= bound)
    np.testing.assert_array_equal(out["label"], np.argmax(out["scores"], axis=1))


def test_dynamic_batch_is_split_in_chunks_of_at_most_max_batch_size():
    p = OnyxPredictor(models.image(), max_batch_size=4)
    p.session = CountingSession(p.session)
    images = np.arange(10 * 18, dtype=np.float32).reshape(10, 2, 3, 3)
    out = p({"image": images})
    assert p.session.sizes == [4, 4, 2]
    np.testing.assert_array_equal(out["doubled"], images * 2)
    np.testing.assert_array_equal(out["sums"], images.sum(axis=(2, 3)))


def test_whole_batch_in_one_run_without_max_batch_size():
    p = OnyxPredictor(models.image())
    p.session = CountingSession(p.session)
    p({"image": np.zeros((9, 2, 3, 3), np.float32)})
    assert p.session.sizes == [9]


@pytest.mark.parametrize("fixed", [1, 4])
def test_fixed_batch_runs_in_its_size_and_pads_the_last_chunk(fixed):
    p = OnyxPredictor(models.fixed(fixed), max_batch_size=100)
    assert p.fixed_batch == fixed
    p.session = CountingSession(p.session)
    x = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    out = p({"x": x})
    assert p.session.sizes == [fixed] * -(-10 // fixed)
    np.testing.assert_array_equal(out["y"], x * 3 + 1)


def test_pandas_batch_comes_back_as_a_dataframe():
    pd = pytest.importorskip("pandas")
    data = models.mixed_data(6)
    df = pd.DataFrame(
        {"id": data["id"], "text": data["text"], "image": list(data["image"]), "x": list(data["x"])}
    )
    out = OnyxPredictor(models.mixed())(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns[:4]) == ["id", "text", "image", "x"]
    y, upper, sums = reference(models.mixed(), {k: data[k] for k in ("x", "text", "image")})
    np.testing.assert_array_equal(np.stack(out["y"].to_numpy()), y)
    assert out["upper"].tolist() == upper.tolist()
    np.testing.assert_array_equal(np.stack(out["sums"].to_numpy()), sums)


def test_pyarrow_batch_with_a_fixed_shape_tensor_column():
    pa = pytest.importorskip("pyarrow")
    data = models.mixed_data(5)
    table = pa.table(
        {
            "x": pa.FixedShapeTensorArray.from_numpy_ndarray(data["x"]),
            "text": pa.array(data["text"].tolist()),
            "image": pa.FixedShapeTensorArray.from_numpy_ndarray(data["image"]),
        }
    )
    out = OnyxPredictor(models.mixed())(table)
    assert isinstance(out, pa.Table) and out.column_names == ["x", "text", "image", "y", "upper", "sums"]
    y, upper, sums = reference(models.mixed(), {k: data[k] for k in ("x", "text", "image")})
    np.testing.assert_array_equal(out.column("y").combine_chunks().to_numpy_ndarray(), y)
    assert out.column("upper").to_pylist() == upper.tolist()
    np.testing.assert_array_equal(out.column("sums").combine_chunks().to_numpy_ndarray(), sums)


def test_scalar_columns_stacked_and_cast_to_the_input_type():
    x = models.features(20)["x"].astype(np.float64)  # as CSV gives them
    cols = {f"f{i}": x[:, i] for i in range(4)}
    p = OnyxPredictor(models.dense(), input_columns={"x": ["f0", "f1", "f2", "f3"]}, output_columns=["label"])
    out = p(cols)
    assert set(out) == {"f0", "f1", "f2", "f3", "label"}
    _, label = reference(models.dense(), {"x": x.astype(np.float32)})
    np.testing.assert_array_equal(out["label"], label)


def test_output_columns_renamed():
    p = OnyxPredictor(models.text(), input_columns={"text": "sentence"}, output_columns={"upper": "shout"})
    out = p({"sentence": np.array(["a b", "Ünï"], dtype=object)})
    assert out["shout"].tolist() == ["A B", "ÜNÏ"]


def test_one_input_model_reads_a_one_column_batch():
    out = OnyxPredictor(models.text())({"data": np.array(["x"], dtype=object)})
    assert out["upper"].tolist() == ["X"]
    # the index column does not count: `onyx batch --ray` on a .npy adds one
    p = OnyxPredictor(models.text(), index_column="row")
    out = p({"data": np.array(["y"], dtype=object), "row": np.array([7])})
    assert out["upper"].tolist() == ["Y"]


def test_record_isolates_the_failing_row_and_names_its_index():
    i = np.array([0, 1, 2, 3, 4, 99, 6, 7, 8, 9], dtype=np.int64)
    p = OnyxPredictor(models.lookup(), max_batch_size=4, on_error="record", index_column="id")
    out = p({"i": i, "id": np.arange(100, 110)})
    bad = out[ERROR_COLUMN] != ""
    assert bad.tolist() == [r == 5 for r in range(10)]
    assert out[ERROR_COLUMN][5].startswith("row 105: ")
    assert np.isnan(out["value"][5])
    ok = ~bad
    np.testing.assert_array_equal(out["value"][ok], i[ok].astype(np.float32) * 1.5)


def test_record_without_index_column_gives_the_position_in_the_batch():
    p = OnyxPredictor(models.lookup(), on_error="record")
    out = p({"i": np.array([3, 12], dtype=np.int64)})
    assert out[ERROR_COLUMN][0] == "" and out[ERROR_COLUMN][1].startswith("row 1 of its batch: ")


def test_record_when_every_row_fails_keeps_the_declared_output_type():
    p = OnyxPredictor(models.lookup(), on_error="record")
    out = p({"i": np.array([50, 60], dtype=np.int64)})
    assert out["value"].dtype == np.float32 and np.isnan(out["value"]).all()
    assert all(e for e in out[ERROR_COLUMN])


def test_raise_stops_on_the_first_failure_with_onyxs_error():
    p = OnyxPredictor(models.lookup())
    with pytest.raises(OnyxError):
        p({"i": np.array([1, 99], dtype=np.int64)})


def test_threads_follow_the_actor_unless_the_options_fix_them():
    p = OnyxPredictor(models.text(), intra_op_num_threads=2)
    assert p.session.get_session_options().intra_op_num_threads == 2
    opts = onyx.SessionOptions()
    opts.intra_op_num_threads = 3
    p = OnyxPredictor(models.text(), session_options=opts, intra_op_num_threads=2)
    assert p.session.get_session_options().intra_op_num_threads == 3
    assert opts.intra_op_num_threads == 3  # the caller's options are not changed


@pytest.mark.parametrize(
    "kwargs, batch, message",
    [
        ({"input_columns": {"nope": "a"}}, None, "not inputs of the model"),
        ({"output_columns": ["nope"]}, None, "not outputs of the model"),
        ({"on_error": "ignore"}, None, "on_error"),
        ({}, {"a": np.zeros((2, 4), np.float32), "b": np.zeros(2)}, "reads column(s) ['x']"),
        ({"output_columns": {"label": "x"}}, {"x": np.zeros((2, 4), np.float32)}, "already exist"),
    ],
)
def test_bad_mappings_are_named(kwargs, batch, message):
    with pytest.raises(InvalidArgument, match=None) as e:
        p = OnyxPredictor(models.dense(), **kwargs)
        p(batch)
    assert message in str(e.value)
