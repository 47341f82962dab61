"""One server for the serving tests: a repository of small models on free loopback ports."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")
pytest.importorskip("grpc")
pytest.importorskip("tritonclient.http")
pytest.importorskip("tritonclient.grpc")

from onyx.serve import InferenceServer  # noqa: E402

from . import models  # noqa: E402
from .models import MAX_BODY  # noqa: E402


@pytest.fixture(scope="session")
def repo_dir(tmp_path_factory) -> str:
    return models.write_repository(str(tmp_path_factory.mktemp("repo")))


@pytest.fixture(scope="session")
def server(repo_dir):
    srv = InferenceServer(repo_dir, http_port=0, grpc_port=0, metrics_port=0, max_body_bytes=MAX_BODY)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def http_client(server):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}", concurrency=4)
    yield client
    client.close()


@pytest.fixture(scope="session")
def grpc_client(server):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def sessions(repo_dir):
    """InferenceSession per (model, version): the reference results."""
    import onyx as ort

    out = {}
    for name in os.listdir(repo_dir):
        for v in os.listdir(os.path.join(repo_dir, name)):
            if v.isdigit():
                out[(name, int(v))] = ort.InferenceSession(os.path.join(repo_dir, name, v, "model.onnx"))
    return out
