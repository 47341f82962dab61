"""The repository: config.pbtxt parsing, version policies, the repository API, polling."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from onyx.model_io import save
from onyx.serve.config_pbtxt import parse_config, parse_text
from onyx.serve.errors import ConfigError, NotFound
from onyx.serve.repository import Repository

from . import models


def test_parse_a_realistic_triton_config():
    cfg = parse_config(models.SIMPLE_CONFIG, default_name="simple")
    assert cfg.name == "simple" and cfg.platform == "onnxruntime_onnx" and cfg.max_batch_size == 8
    assert [(t.name, t.datatype, t.dims) for t in cfg.inputs] == [
        ("INPUT0", "FP32", [4]),
        ("INPUT1", "FP32", [4]),
    ]
    assert cfg.dynamic_batching.preferred_batch_size == [4, 8]
    assert cfg.dynamic_batching.max_queue_delay_microseconds == 100
    assert cfg.instance_count == 2 and cfg.instance_group[0].kind == "KIND_CPU"
    assert cfg.version_policy.kind == "all"
    assert cfg.parameters == {"intra_op_thread_count": "1"}
    assert cfg.ignored == ["optimization"]


def test_text_format_details():
    m = parse_text("a: 1 b: \"x\" 'y' c { d: [1, -2, 0x10] } e < f: 2.5e3 > g: TRUE_ENUM; h: [] # comment\n")
    names = [n for n, *_ in m.fields]
    assert names == ["a", "b", "c", "e", "g"]
    assert m.all("b")[0][0].value == "xy"
    c = m.all("c")[0][0]
    assert [v.value for v, *_ in c.all("d")] == ["1", "-2", "0x10"]


@pytest.mark.parametrize(
    "text,where,fragment",
    [
        (
            'name: "m"\nmax_batch_size: 8\ninput [\n  { name: "x" data_type: TYPE_FP99 dims: [ 4 ] }\n]',
            "4:",
            "TYPE_FP99",
        ),
        ('name: "m"\ninput [ { name: "x" dims: [ 4 }', "2:", "expected ',' or ']'"),
        ('name: "m"\nmax_batch_size: "eight"', "2:1", "integer"),
        ('name: "m"\n  dynamic_batching {\n', "3:", "end of file"),
        ('name: "m"\nplatform: "tensorflow_savedmodel"', "2:1", "ONNX"),
        ('name: "m"\nversion_policy { latest { num_versions: 0 } }', "2:", "num_versions"),
        ('name: "m" $', "1:11", "unexpected character"),
        ("max_batch_size: 0\ndynamic_batching { }", "2:1", "max_batch_size > 0"),
    ],
)
def test_config_errors_name_line_and_column(text, where, fragment):
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="m/config.pbtxt")
    msg = str(info.value)
    assert msg.startswith(f"m/config.pbtxt:{where}") and fragment in msg, msg


def _repo(tmp_path, versions=(1, 2, 3), config=None):
    for v in versions:
        d = tmp_path / "m" / str(v)
        d.mkdir(parents=True)
        save(models.add_sub(offset=float(v)), str(d / "model.onnx"))
    if config is not None:
        (tmp_path / "m" / "config.pbtxt").write_text(config)
    return Repository(str(tmp_path))


@pytest.mark.parametrize(
    "policy,served",
    [
        (None, [3]),
        ("version_policy: { latest { num_versions: 2 } }", [2, 3]),
        ("version_policy: { all { } }", [1, 2, 3]),
        ("version_policy: { specific { versions: [1, 3] } }", [1, 3]),
    ],
)
def test_version_policies(tmp_path, policy, served):
    r = _repo(tmp_path, config=f'name: "m"\nmax_batch_size: 4\n{policy}' if policy else None)
    r.load_all()
    assert r.versions("m") == served
    r.close()


def test_config_that_does_not_fit_the_model(tmp_path):
    r = _repo(
        tmp_path,
        versions=(1,),
        config='name: "m"\ninput [ { name: "INPUT0" data_type: TYPE_INT64 dims: [4] } ]',
    )
    r.load_all()
    (entry,) = r.index()
    assert entry["state"] == "UNAVAILABLE" and "TYPE_INT64" in entry["reason"]
    assert not r.ready()
    with pytest.raises(NotFound, match="not ready"):
        r.get("m")


def test_poll_picks_up_new_versions_and_models(tmp_path):
    r = _repo(tmp_path, versions=(1,), config='name: "m"\nmax_batch_size: 4\nversion_policy: { all { } }')
    r.load_all()
    first = r.get("m", 1)
    d = tmp_path / "m" / "2"
    d.mkdir()
    save(models.add_sub(offset=2.0), str(d / "model.onnx"))
    d = tmp_path / "other" / "1"
    d.mkdir(parents=True)
    save(models.integers(), str(d / "model.onnx"))
    r.poll()
    assert r.versions("m") == [1, 2] and r.versions("other") == [1]
    assert r.get("m", 1) is first  # unchanged: the same sessions keep serving
    changed = tmp_path / "m" / "2" / "model.onnx"
    changed.write_bytes((tmp_path / "m" / "1" / "model.onnx").read_bytes())
    os.utime(changed, ns=(1, 1))  # a modification time of its own, whatever the clock's resolution
    shutil.rmtree(tmp_path / "other")
    r.poll()
    x = np.zeros((1, 4), np.float32)
    from onyx.serve.model import InferInput, InferRequest

    req = InferRequest([InferInput("INPUT0", "FP32", (1, 4), x), InferInput("INPUT1", "FP32", (1, 4), x)])
    assert r.get("m", 2).infer(req).result(60).outputs[0].array.tolist() == [[1.0] * 4]  # the new file
    assert "other" not in [e["name"] for e in r.index()]
    r.close()


def test_repository_api_over_both_protocols(server, http_client, grpc_client, repo_dir):
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    names = {e["name"] for e in http_client.get_model_repository_index()}
    assert {"simple", "integers", "strings", "fixed", "mixed", "batched"} <= names
    http_client.unload_model("fixed")
    assert not http_client.is_model_ready("fixed")
    index = {e["name"]: e for e in http_client.get_model_repository_index()}
    assert index["fixed"]["state"] == "UNAVAILABLE" and index["fixed"]["reason"] == "unloaded"
    with pytest.raises(InferenceServerException, match="not ready"):
        i = grpcclient.InferInput("x", [2, 3], "FP64")
        i.set_data_from_numpy(np.zeros((2, 3)))
        grpc_client.infer("fixed", [i])
    grpc_client.load_model("fixed")
    assert grpc_client.is_model_ready("fixed")
    assert grpc_client.infer("fixed", [i]).as_numpy("t").shape == (3, 2)
    grpc_client.unload_model("fixed")
    assert not http_client.is_model_ready("fixed")
    http_client.load_model("fixed")
    assert http_client.is_model_ready("fixed")
    with pytest.raises(InferenceServerException, match="not in the repository"):
        http_client.load_model("absent")
    with pytest.raises(InferenceServerException):
        grpc_client.load_model("../etc")
    ready = grpc_client.get_model_repository_index(as_json=True)["models"]
    assert {"name": "fixed", "version": "1", "state": "READY"} in ready
    assert os.path.isdir(repo_dir)
