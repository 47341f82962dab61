"""What the REST and gRPC front ends share: the repository, metrics, limits and the server's state
(live, ready, draining), plus the server metadata and Triton's statistics built from the metrics."""

from __future__ import annotations

import logging
import threading
from typing import Any

from onyx.serve.errors import Unavailable
from onyx.serve.metrics import Metrics
from onyx.serve.repository import Repository

log = logging.getLogger("onyx.serve")

#: protocol extensions this server implements (GET /v2 reports them)
EXTENSIONS = ["binary_tensor_data", "model_repository", "model_configuration", "statistics", "parameters"]

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024


class ServerCore:
    """The state both protocols serve from; ``draining`` refuses new requests during shutdown."""

    def __init__(self, repository: Repository, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES):
        from onyx import __version__

        self.repository = repository
        self.metrics: Metrics = repository.metrics
        self.max_body_bytes = max_body_bytes
        self.name = "onyx"
        self.version = __version__
        self.draining = False
        self._inflight = 0
        self._idle = threading.Condition()

    # -- state -------------------------------------------------------------------------------------
    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        return not self.draining and self.repository.ready()

    def server_metadata(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "extensions": list(EXTENSIONS)}

    # -- requests in flight (graceful shutdown waits for them) -------------------------------------
    def begin(self) -> None:
        """Count a request in; refused with 503 / UNAVAILABLE once draining."""
        with self._idle:
            if self.draining:
                raise Unavailable("the server is shutting down")
            self._inflight += 1

    def end(self) -> None:
        with self._idle:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.notify_all()

    def refuse_new(self) -> None:
        """From now on, new requests get 503 / UNAVAILABLE; those in flight carry on."""
        with self._idle:
            self.draining = True

    def drain(self, timeout: float | None = None) -> bool:
        """Refuse new requests and wait until those in flight have finished; False on timeout."""
        with self._idle:
            self.draining = True
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    # -- statistics (Triton's /v2/models/stats) ----------------------------------------------------
    def statistics(self, name: str | None = None, version: str | None = None) -> dict[str, Any]:
        """Per-version counters in the shape of Triton's statistics extension."""
        repo = self.repository
        if name:
            m = repo.get(name, version)
            targets = [(m.name, m.version)]
        else:
            targets = [(n, v) for n in repo.model_names() for v in repo.versions(n)]
        stats = []
        for n, v in targets:

            def val(family: str, n: str = n, v: int = v) -> float:
                return self.metrics.value(family, n, str(v))

            def pair(count_family: str, us_family: str) -> dict[str, int]:
                return {"count": int(val(count_family)), "ns": int(val(us_family) * 1000)}

            success = pair("nv_inference_request_success", "nv_inference_request_duration_us")
            stats.append(
                {
                    "name": n,
                    "version": str(v),
                    "last_inference": 0,
                    "inference_count": int(val("nv_inference_count")),
                    "execution_count": int(val("nv_inference_exec_count")),
                    "inference_stats": {
                        "success": success,
                        "fail": {"count": int(val("nv_inference_request_failure")), "ns": 0},
                        "queue": pair("nv_inference_request_success", "nv_inference_queue_duration_us"),
                        "compute_input": {"count": success["count"], "ns": 0},
                        "compute_infer": pair(
                            "nv_inference_request_success", "nv_inference_compute_infer_duration_us"
                        ),
                        "compute_output": {"count": success["count"], "ns": 0},
                        "cache_hit": {"count": 0, "ns": 0},
                        "cache_miss": {"count": 0, "ns": 0},
                    },
                    "batch_stats": [],
                }
            )
        return {"model_stats": stats}
