"""The scheduler of one model version: a queue served by one worker thread per model instance.

With dynamic batching, a worker takes the oldest request and gathers the queued requests with the same
shape signature (every input's dtype and shape past the batch axis) until the batch reaches
max_batch_size (or a preferred size) or the oldest request has waited max_queue_delay; it stacks them
along axis 0, runs the model once and splits the outputs back. Requests of different signatures stay
queued, in order, for the next batch. Without dynamic batching each request runs alone. Several
instances (workers, each with its own session) run in parallel.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.errors import OnyxError
from onyx.serve.errors import ModelFailure, Unavailable

log = logging.getLogger("onyx.serve")


@dataclass
class Timing:
    """Nanosecond timestamps of one request: queued, taken by a worker, computed."""

    enqueued: int
    started: int = 0
    finished: int = 0
    batch_size: int = 1  # the size of the execution this request was part of


@dataclass
class Job:
    feed: dict[str, np.ndarray]
    rows: int  # rows along the batch axis (1 when the model does not batch)
    signature: tuple
    future: Future
    timing: Timing = field(default_factory=lambda: Timing(time.perf_counter_ns()))


class Runner:
    """What a worker calls: ``run(feed) -> {output name: array}``; one per model instance."""

    def __call__(self, feed: dict[str, np.ndarray]) -> dict[str, Any]:  # pragma: no cover - protocol
        raise NotImplementedError


class Scheduler:
    """Queues requests for one model version and runs them on ``len(runners)`` worker threads.

    ``max_batch_size`` 0 means the model does not batch; ``queue_delay_us`` None means no dynamic
    batching (each request runs alone). ``on_execution(batch_rows, jobs)`` is called after every model
    execution, successful or not (metrics)."""

    def __init__(
        self,
        name: str,
        runners: Sequence[Callable[[dict[str, np.ndarray]], dict[str, Any]]],
        max_batch_size: int,
        queue_delay_us: int | None,
        preferred_batch_sizes: Sequence[int] = (),
        on_execution: Callable[[int, list[Job], bool], None] | None = None,
    ):
        self.name = name
        self.max_batch_size = max_batch_size
        self.batching = queue_delay_us is not None and max_batch_size > 0
        self.delay_ns = (queue_delay_us or 0) * 1000
        self.preferred = sorted(p for p in preferred_batch_sizes if 0 < p <= max_batch_size)
        self.on_execution = on_execution
        self._queue: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._hurry = False  # set at shutdown: dispatch what is queued without waiting for more
        self._busy = 0
        self._workers = [
            threading.Thread(target=self._work, args=(run,), name=f"onyx-serve-{name}-{i}", daemon=True)
            for i, run in enumerate(runners)
        ]
        for w in self._workers:
            w.start()

    @property
    def pending(self) -> int:
        """Requests queued or running."""
        with self._cond:
            return len(self._queue) + self._busy

    def submit(self, feed: dict[str, np.ndarray], rows: int) -> Future:
        """Queue a request (its inputs already validated); the future gives (outputs dict, Timing)."""
        signature = tuple(sorted((k, v.dtype.str, v.shape[1:]) for k, v in feed.items()))
        job = Job(feed, rows, signature, Future())
        with self._cond:
            if self._closed:
                raise Unavailable(f"model {self.name!r} is being unloaded or the server is shutting down")
            self._queue.append(job)
            self._cond.notify()
        return job.future

    def hurry(self) -> None:
        """Stop waiting for batches to fill: the server is draining and no more requests will come."""
        with self._cond:
            self._hurry = True
            self._cond.notify_all()

    def close(self, wait: bool = True) -> None:
        """Refuse new requests; the queued ones still run (batched at once, without waiting)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if wait:
            for w in self._workers:
                if w is not threading.current_thread():
                    w.join()

    # -- the worker ------------------------------------------------------------------------------
    def _take(self) -> list[Job] | None:
        """Block until a batch is ready; None once closed and drained."""
        with self._cond:
            while not self._queue:
                if self._closed:
                    return None
                self._cond.wait()
            if not self.batching:
                self._busy += 1
                return [self._queue.popleft()]
            deadline = self._queue[0].timing.enqueued + self.delay_ns
            while True:
                batch, rows = self._gather()
                if self._closed or self._hurry:
                    break
                if rows >= self._target() or time.perf_counter_ns() >= deadline:
                    batch = self._cut_to_preferred(batch)
                    break
                now = time.perf_counter_ns()
                self._cond.wait(max(deadline - now, 0) / 1e9)
                if not self._queue:  # another worker took them
                    return []
                deadline = self._queue[0].timing.enqueued + self.delay_ns
            taken = {id(j) for j in batch}
            self._queue = collections.deque(j for j in self._queue if id(j) not in taken)
            self._busy += len(batch)
            return batch

    def _target(self) -> int:
        return self.preferred[-1] if self.preferred else self.max_batch_size

    def _gather(self) -> tuple[list[Job], int]:
        first = self._queue[0]
        batch, rows = [first], first.rows
        for job in list(self._queue)[1:]:
            if rows >= self.max_batch_size:
                break
            if job.signature == first.signature and rows + job.rows <= self.max_batch_size:
                batch.append(job)
                rows += job.rows
        return batch, rows

    def _cut_to_preferred(self, batch: list[Job]) -> list[Job]:
        """Prefer the largest preferred size that a prefix of the gathered requests fills exactly."""
        if not self.preferred:
            return batch
        rows, best = 0, 0
        for i, job in enumerate(batch):
            rows += job.rows
            if rows in self.preferred:
                best = i + 1
        return batch[:best] if best else batch

    def _work(self, run: Callable[[dict[str, np.ndarray]], dict[str, Any]]) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            if not batch:
                continue
            try:
                self._execute(run, batch)
            finally:
                with self._cond:
                    self._busy -= len(batch)

    def _execute(self, run: Callable[[dict[str, np.ndarray]], dict[str, Any]], batch: list[Job]) -> None:
        started = time.perf_counter_ns()
        rows = sum(j.rows for j in batch)
        for j in batch:
            j.timing.started = started
            j.timing.batch_size = rows
        ok = False
        try:
            if len(batch) == 1:
                outputs = run(batch[0].feed)
                results = [outputs]
            else:
                feed = {k: np.concatenate([j.feed[k] for j in batch], axis=0) for k in batch[0].feed}
                outputs = run(feed)
                results = _split(outputs, [j.rows for j in batch], rows)
            ok = True
        except OnyxError as e:
            error: BaseException = ModelFailure(f"model {self.name!r} failed: {e}")
        except Exception as e:  # a model failure is a 500 with its message, never a dead worker
            log.exception("model %s raised", self.name)
            error = ModelFailure(f"model {self.name!r} failed: {type(e).__name__}: {e}")
        finished = time.perf_counter_ns()
        for j in batch:
            j.timing.finished = finished
        if self.on_execution is not None:
            try:
                self.on_execution(rows, batch, ok)
            except Exception:  # metrics never break serving
                log.exception("metrics callback failed")
        for i, j in enumerate(batch):
            if ok:
                j.future.set_result((results[i], j.timing))
            else:
                j.future.set_exception(error)


def _split(outputs: dict[str, Any], sizes: list[int], rows: int) -> list[dict[str, Any]]:
    """Split batched outputs back into one dict per request along axis 0."""
    for name, value in outputs.items():
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != rows:
            shape = getattr(value, "shape", None)
            raise ModelFailure(
                f"output {name!r} has shape {list(shape) if shape is not None else shape}, which does not "
                f"start with the batch size {rows}: the model does not batch along axis 0"
            )
    bounds = np.cumsum([0, *sizes])
    return [
        {name: value[bounds[i] : bounds[i + 1]] for name, value in outputs.items()} for i in range(len(sizes))
    ]
