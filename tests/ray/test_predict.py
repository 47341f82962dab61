"""onyx.ray.predict on a local two-CPU Ray cluster (started once for the module)."""

from __future__ import annotations

import os

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

import onyx  # noqa: E402
from onyx.ray import ERROR_COLUMN, predict  # noqa: E402

from . import models  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    markers = tmp_path_factory.mktemp("markers")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="warning",
        runtime_env={"env_vars": {"ONYX_TEST_MARKER_DIR": str(markers)}},
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield markers
    ray.shutdown()


def dataset(data: dict, blocks: int = 8):
    """A Ray dataset of several blocks (so that several actors share it) from numpy columns."""
    import pyarrow as pa

    from onyx.ray.predictor import numpy_to_arrow

    n = len(data["id"])
    step = -(-n // blocks)
    tables = [
        pa.table({k: numpy_to_arrow(v[i : i + step]) for k, v in data.items()}) for i in range(0, n, step)
    ]
    return ray.data.from_arrow(tables)


def gather(ds) -> dict:
    batches = list(ds.iter_batches(batch_format="numpy", batch_size=None))
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def test_numeric_string_and_tensor_columns_equal_a_plain_session_in_order(cluster):
    data = models.mixed_data(3000)
    out = gather(
        predict(
            dataset(data), models.mixed(), batch_size=128, concurrency=2, num_cpus=0.5, preserve_order=True
        )
    )
    np.testing.assert_array_equal(out["id"], data["id"])  # every row once, in the input's order
    y, upper, sums = onyx.InferenceSession(models.mixed()).run(
        None, {k: data[k] for k in ("x", "text", "image")}
    )
    np.testing.assert_array_equal(out["y"], y)
    assert out["upper"].tolist() == upper.tolist()
    np.testing.assert_array_equal(out["sums"], sums)
    np.testing.assert_array_equal(out["image"], data["image"])


def test_fixed_batch_model_on_several_actors(cluster):
    data = models.features(1001)
    out = gather(predict(dataset(data), models.fixed(4), batch_size=50, concurrency=2, num_cpus=0.5))
    order = np.argsort(out["id"])
    np.testing.assert_array_equal(out["id"][order], data["id"])
    np.testing.assert_array_equal(out["y"][order], data["x"] * 3 + 1)


def test_dynamic_batch_model_from_a_path(cluster, tmp_path):
    path = tmp_path / "dense.onnx"
    path.write_bytes(models.dense())
    data = models.features(2000)
    out = gather(
        predict(dataset(data), str(path), batch_size=300, concurrency=2, num_cpus=0.5, preserve_order=True)
    )
    scores, label = onyx.InferenceSession(str(path)).run(None, {"x": data["x"]})
    np.testing.assert_array_equal(out["id"], data["id"])
    bound = 5 * np.finfo(np.float32).eps * (np.abs(data["x"]) @ np.abs(models.W) + np.abs(models.B))
    assert np.all(np.abs(out["scores"] - scores) <= bound)
    np.testing.assert_array_equal(out["label"], np.argmax(out["scores"], axis=1))


def test_an_actor_killed_mid_run_loses_and_duplicates_no_row(cluster):
    data = models.features(5000)
    assert models.DiesOnce.DIE_AT < len(data["id"])
    ds = predict(
        dataset(data, 10),
        models.fixed(1),
        batch_size=100,
        concurrency=2,
        num_cpus=0.5,
        predictor=models.DiesOnce,
    )
    out = gather(ds)
    assert os.path.exists(cluster / "died")  # an actor did die in this run
    np.testing.assert_array_equal(np.sort(out["id"]), data["id"])  # each row exactly once
    order = np.argsort(out["id"])
    np.testing.assert_array_equal(out["y"][order], data["x"] * 3 + 1)


def test_record_reports_the_bad_row_with_its_index(cluster):
    n = 600
    i = np.arange(n, dtype=np.int64) % 10
    i[[17, 401]] = [10, -11]
    data = {"id": np.arange(n, dtype=np.int64) + 1000, "i": i}
    out = gather(
        predict(
            dataset(data, 4),
            models.lookup(),
            batch_size=64,
            concurrency=2,
            num_cpus=0.5,
            on_error="record",
            index_column="id",
            preserve_order=True,
        )
    )
    np.testing.assert_array_equal(out["id"], data["id"])
    bad = np.flatnonzero(out[ERROR_COLUMN] != "")
    assert bad.tolist() == [17, 401]
    assert out[ERROR_COLUMN][17].startswith("row 1017: ") and out[ERROR_COLUMN][401].startswith("row 1401: ")
    ok = out[ERROR_COLUMN] == ""
    np.testing.assert_array_equal(out["value"][ok], i[ok].astype(np.float32) * 1.5)


def test_raise_stops_the_job_with_onyxs_error(cluster):
    data = {"id": np.arange(40, dtype=np.int64), "i": np.full(40, 99, dtype=np.int64)}
    ds = predict(dataset(data, 2), models.lookup(), batch_size=8, concurrency=1, num_cpus=0.5)
    with pytest.raises(ray.exceptions.RayError, match=r"onyx\.errors\."):
        gather(ds)
