"""`onyx batch` end to end: Parquet in-process and on a local Ray cluster it starts itself, .npz, errors."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import onyx  # noqa: E402
from onyx.cli import main  # noqa: E402
from onyx.ray.predictor import arrow_to_numpy, numpy_to_arrow  # noqa: E402

from . import models  # noqa: E402

N = 2500


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The mixed model, its data as one Parquet file (x as four scalar columns) and as .npz parts."""
    d = tmp_path_factory.mktemp("batch")
    (d / "mixed.onnx").write_bytes(models.mixed())
    (d / "lookup.onnx").write_bytes(models.lookup())
    data = models.mixed_data(N)
    cols = {"id": data["id"], **{f"f{i}": data["x"][:, i] for i in range(4)}, "text": data["text"]}
    cols["image"] = data["image"]
    pq.write_table(pa.table({k: numpy_to_arrow(v) for k, v in cols.items()}), d / "in.parquet")
    (d / "parts").mkdir()
    for k, start in enumerate(range(0, N, 1000)):  # a directory of .npz files, read in name order
        part = {k2: v[start : start + 1000] for k2, v in data.items()}
        part["text"] = part["text"].astype(str)
        np.savez(d / "parts" / f"part{k}.npz", **part)
    return d, data


def expected(data: dict) -> tuple:
    return tuple(
        onyx.InferenceSession(models.mixed()).run(None, {k: data[k] for k in ("x", "text", "image")})
    )


def read_parquet(path) -> dict:
    t = pq.read_table(path)
    return {k: arrow_to_numpy(t.column(k)) for k in t.column_names}


def check(out: dict, data: dict) -> None:
    y, upper, sums = expected(data)
    np.testing.assert_array_equal(out["id"], data["id"])
    np.testing.assert_array_equal(out["y"], y)
    assert out["upper"].tolist() == upper.tolist()
    np.testing.assert_array_equal(out["sums"], sums)


def parquet_args(d, out, *extra) -> list[str]:
    return [
        "batch",
        str(d / "mixed.onnx"),
        str(d / "in.parquet"),
        str(out),
        "--batch-size",
        "300",
        "--input-column",
        "x=f0,f1,f2,f3",
        *extra,
    ]


def test_parquet_in_process(files, tmp_path, capsys):
    d, data = files
    out = tmp_path / "out.parquet"
    assert main(parquet_args(d, out, "--concurrency", "2")) == 0
    check(read_parquet(out), data)
    assert f"scored {N:,} rows" in capsys.readouterr().out


def test_parquet_on_a_local_ray_cluster(files, tmp_path, capsys):
    pytest.importorskip("ray.data")
    import ray

    d, data = files
    out = tmp_path / "out.parquet"
    assert (
        main(parquet_args(d, out, "--local", "--concurrency", "2", "--num-cpus", "0.5", "--preserve-order"))
        == 0
    )
    assert not ray.is_initialized()  # the command shut down the cluster it started
    check(read_parquet(out), data)
    assert f"scored {N:,} rows" in capsys.readouterr().out


def test_npz_directory_to_npz(files, tmp_path):
    d, data = files
    out = tmp_path / "out.npz"
    assert main(["batch", str(d / "mixed.onnx"), str(d / "parts"), str(out), "--batch-size", "128"]) == 0
    with np.load(out) as z:
        got = {k: z[k] for k in z.files}
    assert set(got) == {"id", "x", "text", "image", "y", "upper", "sums"}
    check(got, data)


def test_on_error_record_names_the_input_row(tmp_path, files, capsys):
    d, _ = files
    i = np.arange(50, dtype=np.int64) % 10
    i[33] = 42
    np.save(tmp_path / "i.npy", i)
    out = tmp_path / "out.parquet"
    code = main(
        [
            "batch",
            str(d / "lookup.onnx"),
            str(tmp_path / "i.npy"),
            str(out),
            "--batch-size",
            "16",
            "--on-error",
            "record",
        ]
    )
    assert code == 0
    got = read_parquet(out)
    assert np.flatnonzero(got["error"] != "").tolist() == [33]
    assert got["error"][33].startswith("row 33: ")
    assert "1 failed" in capsys.readouterr().out


def test_on_error_raise_is_one_clear_line(tmp_path, files, capsys):
    d, _ = files
    np.save(tmp_path / "i.npy", np.array([1, 2, 99], dtype=np.int64))
    code = main(["batch", str(d / "lookup.onnx"), str(tmp_path / "i.npy"), str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("onyx: error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope.onnx", "IN", "o.parquet"], "NoSuchFile"),
        (["MODEL", "missing.parquet", "o.parquet"], "does not exist"),
        (["MODEL", "IN", "o.txt"], "OUTPUT must end in"),
        (["MODEL", "IN", "o.parquet", "--input-column", "x"], "--input-column expects"),
        (["MODEL", "IN", "o.parquet", "--input-column", "x=nope"], "reads column(s) ['nope']"),
    ],
)
def test_usage_errors_exit_2_with_one_line(files, tmp_path, capsys, args, message):
    d, _ = files
    args = [
        str(d / "mixed.onnx") if a == "MODEL" else str(d / "in.parquet") if a == "IN" else a for a in args
    ]
    args = [str(tmp_path / a) if a in ("o.parquet", "o.txt") else a for a in args]
    assert main(["batch", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
