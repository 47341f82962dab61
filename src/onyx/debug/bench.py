"""Latency and throughput of a model on onyx, optionally against onnxruntime in the same process.

With a peer the runs are interleaved (onyx, peer, onyx, peer...), so that a noisy neighbour slows both
alike and the ratio of medians stays meaningful on a shared machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.errors import Fail, InvalidArgument, NoSuchFile

PEERS = ("onnxruntime",)


@dataclass
class Timings:
    """One engine's figures: session creation and per-run latencies, in seconds."""

    engine: str
    create_s: float
    latencies: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q))

    @property
    def mean(self) -> float:
        return float(np.mean(self.latencies))


@dataclass
class BenchResult:
    rows: int  # rows per run (the first dim of the first input): throughput counts these
    runs: list[Timings]


def _onyx_session(model: str, threads: int) -> Any:
    from onyx.runtime.options import SessionOptions
    from onyx.runtime.session import InferenceSession

    so = SessionOptions()
    so.intra_op_num_threads = threads
    return InferenceSession(model, so)


def _ort_session(model: str, threads: int) -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise InvalidArgument(
            "--against onnxruntime needs the onnxruntime package: pip install onnxruntime"
        ) from None
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    try:
        return onnxruntime.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types: reported as onyx's
        raise Fail(f"onnxruntime cannot load the model: {e}") from None


def bench(
    model: str | os.PathLike,
    given: dict[str, np.ndarray] | None = None,
    *,
    batch: int | None = None,
    dims: dict[str, int] | None = None,
    threads: int = 0,
    runs: int = 20,
    warmup: int = 3,
    against: str | None = None,
    each: Callable[[Iterable[int]], Iterable[int]] = lambda it: it,
) -> BenchResult:
    """Time ``runs`` runs after ``warmup`` ones, interleaved with ``against`` (a peer engine) if given.

    Missing inputs are random, with symbolic dims from ``dims``, else ``batch`` for the first dim, else 1.
    """
    from onyx.debug.profile import random_feeds

    model = os.fspath(model)
    if not os.path.exists(model):
        raise NoSuchFile(f"model {model!r} does not exist")
    if runs < 1 or warmup < 0 or threads < 0 or (batch is not None and batch < 1):
        raise InvalidArgument(
            f"--runs must be >= 1, --warmup and --threads >= 0, --batch >= 1 "
            f"(got runs={runs}, warmup={warmup}, threads={threads}, batch={batch})"
        )
    if against is not None and against not in PEERS:
        raise InvalidArgument(f"--against {against!r}: the peers are {', '.join(PEERS)}")
    engines: list[tuple[str, Any, float]] = []
    makers = [("onyx", _onyx_session)] + ([(against, _ort_session)] if against else [])
    for name, make in makers:
        t0 = time.perf_counter()
        sess = make(model, threads)
        engines.append((name, sess, time.perf_counter() - t0))
    feeds = random_feeds(engines[0][1].get_inputs(), given, dims, batch)
    first = next(iter(feeds.values()), None)
    rows = int(first.shape[0]) if first is not None and first.ndim else 1
    results = [Timings(name, created) for name, _, created in engines]
    for _ in range(warmup):
        for _, sess, _ in engines:
            sess.run(None, feeds)
    for _ in each(range(runs)):
        for (_, sess, _), timings in zip(engines, results):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            timings.latencies.append(time.perf_counter() - t0)
    return BenchResult(rows, results)


def format_result(result: BenchResult) -> str:
    """The latency table (ms), throughput (rows/s) and, with a peer, onyx's ratio to it."""
    lines = [
        f"{'engine':<12} {'session ms':>10} {'mean ms':>9} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9}"
        f" {'rows/s':>10}"
    ]
    for t in result.runs:
        lines.append(
            f"{t.engine:<12} {t.create_s * 1e3:>10.1f} {t.mean * 1e3:>9.3f} {t.percentile(50) * 1e3:>9.3f}"
            f" {t.percentile(90) * 1e3:>9.3f} {t.percentile(99) * 1e3:>9.3f} {result.rows / t.mean:>10.1f}"
        )
    lines.append(f"({len(result.runs[0].latencies)} runs of {result.rows} row(s) each)")
    if len(result.runs) > 1:
        me, peer = result.runs[0], result.runs[1]
        ratio = me.percentile(50) / peer.percentile(50)
        lines.append(
            f"ratio onyx/{peer.engine}: {ratio:.2f}x at the median"
            f" ({'slower' if ratio > 1 else 'faster or equal'}), {me.mean / peer.mean:.2f}x on the mean"
        )
    return "\n".join(lines)
