"""/metrics: Prometheus text with Triton's names and labels, counting what happened."""

from __future__ import annotations

import re
import urllib.request

import numpy as np

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_]+="(?:[^"\\]|\\.)*",?)*)\} (\S+)$')


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    """A strict reader of the exposition format: every line is a comment or a labelled sample."""
    samples = {}
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if line.startswith("# HELP ") or not line:
            continue
        m = _LINE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        assert m.group(1) in types, f"{m.group(1)} has no # TYPE line"
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def fetch(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        return r.read().decode()


def test_metrics_count_requests_and_executions(server, http_client):
    import tritonclient.http as httpclient

    def value(samples, name, **labels):
        return samples[(name, frozenset(labels.items()))]

    before = parse(fetch(server.metrics_port))
    i = httpclient.InferInput("x", [2, 3], "INT32")
    i.set_data_from_numpy(np.ones((2, 3), np.int32))
    for _ in range(3):
        http_client.infer("integers", [i])
    bad = httpclient.InferInput("x", [2, 4], "INT32")
    bad.set_data_from_numpy(np.ones((2, 4), np.int32))
    try:
        http_client.infer("integers", [bad])
    except Exception:
        pass
    after = parse(fetch(server.metrics_port))
    same_on_http_port = parse(fetch(server.http_port))
    assert set(same_on_http_port) == set(after)
    labels = {"model": "integers", "version": "1"}
    d = lambda name, **extra: value(after, name, **labels, **extra) - value(before, name, **labels, **extra)  # noqa: E731
    assert d("nv_inference_request_success") == 3
    assert d("nv_inference_count") == 6  # two rows per request
    assert 1 <= d("nv_inference_exec_count") <= 3
    assert d("nv_inference_request_failure", reason="OTHER") == 1
    for name in (
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_infer_duration_us",
    ):
        assert d(name) >= 0 and value(after, name, **labels) > 0
    assert value(after, "nv_inference_pending_request_count", **labels) == 0
    names = {n for n, _ in after}
    for family in (
        "nv_inference_request_success",
        "nv_inference_request_failure",
        "nv_inference_count",
        "nv_inference_exec_count",
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_infer_duration_us",
    ):
        assert family in names
    # every served version is labelled, before its first request too
    assert ("nv_inference_request_success", frozenset({"model": "simple", "version": "2"}.items())) in after


def test_statistics_endpoint(http_client):
    stats = http_client.get_inference_statistics("integers")
    s = stats["model_stats"][0]
    assert s["name"] == "integers" and s["inference_stats"]["success"]["count"] >= 1
    everything = http_client.get_inference_statistics()
    assert {m["name"] for m in everything["model_stats"]} >= {"simple", "integers", "strings"}
