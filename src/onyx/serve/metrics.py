"""Triton's inference metrics in the Prometheus text exposition format (version 0.0.4).

Names, help texts and labels follow Triton's, so dashboards built for Triton (Grafana panels over
``nv_inference_*{model,version}``) read onyx's server unchanged. Durations are cumulative microseconds.
"""

from __future__ import annotations

import threading
from collections import defaultdict

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: (name, type, help)
_FAMILIES = [
    ("nv_inference_request_success", "counter", "Number of successful inference requests, all batch sizes"),
    ("nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes"),
    ("nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)"),
    (
        "nv_inference_exec_count",
        "counter",
        "Number of model executions performed (does not include cached requests)",
    ),
    (
        "nv_inference_request_duration_us",
        "counter",
        "Cumulative inference request duration in microseconds (includes cached requests)",
    ),
    (
        "nv_inference_queue_duration_us",
        "counter",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
    ),
    (
        "nv_inference_compute_input_duration_us",
        "counter",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "counter",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
    ),
    (
        "nv_inference_compute_output_duration_us",
        "counter",
        "Cumulative inference compute output duration in microseconds (does not include cached requests)",
    ),
    (
        "nv_inference_pending_request_count",
        "gauge",
        "Instantaneous number of pending requests awaiting execution per-model.",
    ),
]

FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")


class Metrics:
    """Thread-safe counters per (model, version); ``render()`` gives the exposition text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, str, str], float] = defaultdict(float)  # (family, model, version)
        self._failures: dict[tuple[str, str, str], int] = defaultdict(int)  # (model, version, reason)
        self._pending: dict[tuple[str, str], object] = {}  # (model, version) -> object with .pending
        self._known: set[tuple[str, str]] = set()

    def register(self, model: str, version: str, pending_source: object | None = None) -> None:
        """Make a loaded model version appear (with zeros) before its first request."""
        with self._lock:
            self._known.add((model, version))
            if pending_source is not None:
                self._pending[(model, version)] = pending_source

    def unregister(self, model: str, version: str) -> None:
        """Stop reporting the pending gauge of an unloaded version (its counters stay, as Triton's)."""
        with self._lock:
            self._pending.pop((model, version), None)

    def success(
        self, model: str, version: str, request_us: float, queue_us: float, compute_us: float
    ) -> None:
        with self._lock:
            c = self._counters
            c[("nv_inference_request_success", model, version)] += 1
            c[("nv_inference_request_duration_us", model, version)] += request_us
            c[("nv_inference_queue_duration_us", model, version)] += queue_us
            c[("nv_inference_compute_infer_duration_us", model, version)] += compute_us

    def failure(self, model: str, version: str, reason: str, request_us: float = 0.0) -> None:
        with self._lock:
            self._known.add((model, version))
            self._failures[(model, version, reason)] += 1
            self._counters[("nv_inference_request_duration_us", model, version)] += request_us

    def execution(self, model: str, version: str, inferences: int) -> None:
        """One model execution that ran ``inferences`` inferences (the batch's rows)."""
        with self._lock:
            self._counters[("nv_inference_exec_count", model, version)] += 1
            self._counters[("nv_inference_count", model, version)] += inferences

    def value(self, family: str, model: str, version: str) -> float:
        """A counter's current value (tests and the statistics endpoint)."""
        with self._lock:
            if family == "nv_inference_request_failure":
                return sum(n for (m, v, _), n in self._failures.items() if (m, v) == (model, version))
            return self._counters.get((family, model, version), 0.0)

    def render(self) -> str:
        with self._lock:
            keys = sorted(self._known)
            lines: list[str] = []
            for name, kind, help_text in _FAMILIES:
                lines.append(f"# HELP {name} {help_text}")
                lines.append(f"# TYPE {name} {kind}")
                for model, version in keys:
                    labels = f'model="{_escape(model)}",version="{_escape(version)}"'
                    if name == "nv_inference_request_failure":
                        for reason in FAILURE_REASONS:
                            n = self._failures.get((model, version, reason), 0)
                            lines.append(f'{name}{{{labels},reason="{reason}"}} {n}')
                    elif name == "nv_inference_pending_request_count":
                        source = self._pending.get((model, version))
                        if source is not None:
                            lines.append(f"{name}{{{labels}}} {source.pending}")
                    else:
                        lines.append(
                            f"{name}{{{labels}}} {_fmt(self._counters.get((name, model, version), 0))}"
                        )
            return "\n".join(lines) + "\n"


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
