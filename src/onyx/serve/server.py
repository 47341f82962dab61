"""``onyx serve``: the repository, the REST app on uvicorn, the gRPC server, the metrics listener and the
poller, started together and stopped gracefully (new requests refused, those in flight finished).

:class:`InferenceServer` runs everything on background threads, so tests and embedding programs can
start and stop it in-process; :func:`serve` is the command's foreground loop with signal handling.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
import threading
import time

from onyx.serve.core import DEFAULT_MAX_BODY_BYTES, ServerCore
from onyx.serve.repository import Repository

log = logging.getLogger("onyx.serve")


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP given explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # a response's headers and body (two writes) wait ~40 ms on the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class InferenceServer:
    """The whole server. Ports 0 pick free ports (read them back from ``http_port`` etc. after
    :meth:`start`); a negative port disables that listener."""

    def __init__(
        self,
        repository: str,
        host: str = "127.0.0.1",
        http_port: int = 8000,
        grpc_port: int = 8001,
        metrics_port: int = 8002,
        poll: float | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        threads: int = 0,
        default_max_batch_size: int = 4,
        grpc_workers: int = 32,
    ):
        self.repository = Repository(
            repository, threads=threads, default_max_batch_size=default_max_batch_size
        )
        self.core = ServerCore(self.repository, max_body_bytes)
        self.host = host
        self.http_port, self.grpc_port, self.metrics_port = http_port, grpc_port, metrics_port
        self.poll_seconds = poll
        self.grpc_workers = grpc_workers
        self._uvicorn: list = []
        self._loop_thread: threading.Thread | None = None
        self._grpc = None
        self._stop_poll = threading.Event()
        self._poller: threading.Thread | None = None
        self._stopped = False

    # -- start -------------------------------------------------------------------------------------
    def start(self) -> InferenceServer:
        """Load the repository, then listen; returns once every listener accepts connections."""
        import uvicorn

        from onyx.serve.http import create_app

        self.repository.load_all()
        listeners = []
        if self.http_port >= 0:
            sock = _listen(self.host, self.http_port)
            self.http_port = sock.getsockname()[1]
            listeners.append((create_app(self.core), sock))
        if self.metrics_port >= 0:
            sock = _listen(self.host, self.metrics_port)
            self.metrics_port = sock.getsockname()[1]
            listeners.append((create_app(self.core, metrics_only=True), sock))
        for app, sock in listeners:
            config = uvicorn.Config(
                app, lifespan="off", access_log=False, log_level="warning", timeout_graceful_shutdown=None
            )
            self._uvicorn.append((uvicorn.Server(config), sock))
        if self._uvicorn:
            self._loop_thread = threading.Thread(target=self._run_loop, name="onyx-serve-http", daemon=True)
            self._loop_thread.start()
            deadline = time.monotonic() + 60
            while not all(s.started for s, _ in self._uvicorn):
                if not self._loop_thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not start")
                time.sleep(0.01)
        if self.grpc_port >= 0:
            from onyx.serve.grpc_service import create_grpc_server

            host = f"[{self.host}]" if ":" in self.host else self.host
            self._grpc, self.grpc_port = create_grpc_server(
                self.core, f"{host}:{self.grpc_port}", self.grpc_workers
            )
            self._grpc.start()
        if self.poll_seconds:
            self._poller = threading.Thread(target=self._poll_loop, name="onyx-serve-poll", daemon=True)
            self._poller.start()
        return self

    def _run_loop(self) -> None:
        async def main() -> None:
            await asyncio.gather(*(server.serve(sockets=[sock]) for server, sock in self._uvicorn))

        asyncio.run(main())

    def _poll_loop(self) -> None:
        while not self._stop_poll.wait(self.poll_seconds):
            try:
                self.repository.poll()
            except Exception:  # the poller never dies: the next round tries again
                log.exception("polling the repository failed")

    def addresses(self) -> list[str]:
        out = []
        if self.http_port >= 0:
            out.append(f"HTTP (Open Inference Protocol REST) at http://{self.host}:{self.http_port}")
        if self.grpc_port >= 0:
            out.append(f"gRPC (inference.GRPCInferenceService) at {self.host}:{self.grpc_port}")
        if self.metrics_port >= 0:
            out.append(f"metrics (Prometheus) at http://{self.host}:{self.metrics_port}/metrics")
        return out

    # -- stop --------------------------------------------------------------------------------------
    def stop(self, grace: float = 30.0) -> None:
        """Refuse new requests, let those in flight finish (up to ``grace`` seconds), then close."""
        if self._stopped:
            return
        self._stopped = True
        self._stop_poll.set()
        self.core.refuse_new()
        self.repository.hurry()
        if not self.core.drain(grace):
            log.warning("requests still running after %.0f s of grace; closing anyway", grace)
        for server, _ in self._uvicorn:
            server.should_exit = True
        if self._grpc is not None:
            self._grpc.stop(grace).wait()
        if self._loop_thread is not None:
            self._loop_thread.join(grace + 5)
        self.repository.close()
        for _, sock in self._uvicorn:
            sock.close()

    def __enter__(self) -> InferenceServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(repository: str, **options) -> int:
    """Run the server in the foreground until SIGINT or SIGTERM; then shut down gracefully."""
    stop = threading.Event()
    received = []

    def on_signal(signum, frame) -> None:
        received.append(signum)
        stop.set()

    # the handlers first: a signal sent as soon as the server answers (or says it is ready) must find them
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server = InferenceServer(repository, **options)
        server.start()
        for line in server.addresses():
            print(f"onyx serve: {line}", flush=True)
        index = server.repository.index()
        for e in index:
            state = (
                f"version {e['version']} READY"
                if e.get("version")
                else f"{e['state']}: {e.get('reason', '')}"
            )
            print(f"onyx serve: model {e['name']} {state}", flush=True)
        while not stop.wait(0.5):
            pass
        print(
            f"onyx serve: {signal.Signals(received[0]).name} received: finishing requests in flight",
            file=sys.stderr,
            flush=True,
        )
        server.stop()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    print("onyx serve: stopped", file=sys.stderr, flush=True)
    return 0
