"""Graceful shutdown: requests in flight finish, new ones are refused; the CLI stops on SIGTERM."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from onyx.serve import InferenceServer

from . import models


def _wait_for(predicate, what: str, limit: int = 6000):
    import time

    for _ in range(limit):
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_in_flight_requests_finish_and_new_ones_are_refused(tmp_path):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    d = tmp_path / "batched" / "1"
    d.mkdir(parents=True)
    from onyx.model_io import save

    save(models.scale(), str(d / "model.onnx"))
    (tmp_path / "batched" / "config.pbtxt").write_text(models.BATCHED_CONFIG)
    srv = InferenceServer(str(tmp_path), http_port=0, grpc_port=0, metrics_port=-1).start()
    result = {}

    def in_flight():
        client = httpclient.InferenceServerClient(f"127.0.0.1:{srv.http_port}", network_timeout=120)
        i = httpclient.InferInput("x", [1, 4], "FP32")
        i.set_data_from_numpy(np.ones((1, 4), np.float32))
        result["y"] = client.infer("batched", [i]).as_numpy("y")

    t = threading.Thread(target=in_flight)
    t.start()
    scheduler = srv.repository.get("batched").scheduler
    _wait_for(lambda: scheduler.pending == 1, "the request is queued")  # it waits for 7 more rows
    srv.core.refuse_new()  # the first step of stop(): from here new requests are refused
    conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=30)
    conn.request(
        "POST",
        "/v2/models/batched/infer",
        body=json.dumps(
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
        ),
    )
    r = conn.getresponse()
    assert r.status == 503 and "shutting down" in json.loads(r.read())["error"]
    conn.close()
    g = grpcclient.InferenceServerClient(f"127.0.0.1:{srv.grpc_port}")
    i = grpcclient.InferInput("x", [1, 4], "FP32")
    i.set_data_from_numpy(np.ones((1, 4), np.float32))
    with pytest.raises(InferenceServerException) as info:
        g.infer("batched", [i])
    assert info.value.status() == "StatusCode.UNAVAILABLE"
    g.close()
    srv.stop()  # the queued request runs at once instead of waiting for its batch to fill
    t.join(60)
    assert result["y"].tolist() == [[2.0] * 4]


def test_cli_serves_and_stops_on_sigterm(tmp_path):
    import tritonclient.http as httpclient

    repo = tmp_path / "repo"
    d = repo / "integers" / "1"
    d.mkdir(parents=True)
    from onyx.model_io import save

    save(models.integers(), str(d / "model.onnx"))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onyx.cli",
            "serve",
            str(repo),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = []
        while not any("model integers" in line for line in lines):
            line = proc.stdout.readline()
            assert line, f"the server exited: {proc.stderr.read()}"
            lines.append(line)
        http_line = next(line for line in lines if line.startswith("onyx serve: HTTP"))
        port = int(http_line.rsplit(":", 1)[1])
        assert any("gRPC" in line for line in lines) and any("/metrics" in line for line in lines)
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        i = httpclient.InferInput("x", [1, 3], "INT32")
        i.set_data_from_numpy(np.array([[1, 2, 3]], np.int32))
        assert client.infer("integers", [i]).as_numpy("y").tolist() == [[3, 5, 7]]
        client.close()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
        err = proc.stderr.read()
        assert rc == 0, err
        assert "SIGTERM received" in err and "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
