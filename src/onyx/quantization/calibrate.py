"""Calibration: run the float model on onyx over a data reader and keep, per tensor, what the chosen
method needs to pick a range.

Memory stays bounded by the model, never by the number of batches. onnxruntime's calibrators keep every
batch's intermediate outputs until the end (microsoft/onnxruntime#10503: calibrating a large model on
a few hundred batches runs out of memory); here each batch updates a running state and is dropped:

* MinMax keeps the running min and max (CalibMovingAverage keeps one min and max per batch of the
  current chunk, two scalars, and averages them as onnxruntime does);
* Entropy, Percentile and Distribution keep one histogram per tensor, eight times finer than asked,
  and grow it batch by batch by whole bins (onnxruntime's rule for merging a histogram into a wider
  one).

onnxruntime 1.32 builds each histogram once, over all batches together, on ``num_bins`` bins spanning
the final range. To get exactly its thresholds in bounded memory, a reader that can ``rewind()`` (as
onnxruntime's example readers can) is read twice: a first pass finds each tensor's range, the second
fills histograms on onnxruntime's final bins, and the thresholds are identical. A reader that cannot
rewind is read once and the fine running histogram is re-binned onto those bins at the end: identical
when the first batch holds the extremes; otherwise values within one fine bin of a coarse edge can land
one bin off, which moves a Percentile threshold by a few bins and an Entropy one (whose KL minimum is
flat) by up to a dozen of its bins. That is the deliberate difference: the price of one pass.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ir.model import Model
from onyx.quantization import _graph
from onyx.quantization.types import CalibrationMethod


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """Gives the calibration batches: ``get_next()`` returns a dict of input name -> array, or None."""

    @classmethod
    def __subclasshook__(cls, subclass):
        return (hasattr(subclass, "get_next") and callable(subclass.get_next)) or NotImplemented

    @abc.abstractmethod
    def get_next(self) -> dict:
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self):
        result = self.get_next()
        if result is None:
            raise StopIteration
        return result

    def __len__(self):
        raise NotImplementedError

    def set_range(self, start_index: int, end_index: int):
        raise NotImplementedError


class TensorData:
    """What calibration found for one tensor: its range (lowest, highest) and, for histogram methods,
    the histogram (and avg/std for Distribution)."""

    _allowed = frozenset(["avg", "std", "lowest", "highest", "hist", "hist_edges", "bins"])

    def __init__(self, **kwargs: Any):
        for k, v in kwargs.items():
            if k not in self._allowed:
                raise InvalidArgument(f"TensorData: unexpected field {k!r}")
            setattr(self, k, v)

    @property
    def range_value(self) -> tuple[np.ndarray, np.ndarray]:
        return (self.lowest, self.highest)

    @property
    def avg_std(self) -> tuple[np.ndarray, np.ndarray]:
        return (self.avg, self.std)

    def __repr__(self) -> str:
        return f"TensorData(lowest={self.lowest!r}, highest={self.highest!r})"


# ------------------------------------------------------------------------------------------------
# MinMax


class MinMaxCollector:
    """Running min/max per tensor; with ``moving_average`` the per-batch extremes of each chunk of
    ``max_intermediate_outputs`` batches are averaged and chunks merged by an exponential moving average.

    (onnxruntime 1.32 drops a chunk's batches without using them when CalibMaxIntermediateOutputs is
    reached; here a full chunk is folded into the range first, which is what that option is for.)
    """

    def __init__(
        self,
        symmetric: bool = False,
        moving_average: bool = False,
        averaging_constant: float = 0.01,
        max_intermediate_outputs: int | None = None,
    ):
        if moving_average and not 0 <= averaging_constant <= 1:
            raise InvalidArgument(f"CalibMovingAverageConstant must be in [0, 1], got {averaging_constant}")
        if max_intermediate_outputs is not None and int(max_intermediate_outputs) < 1:
            raise InvalidArgument(f"CalibMaxIntermediateOutputs must be >= 1, got {max_intermediate_outputs}")
        self.symmetric = symmetric
        self.moving_average = moving_average
        self.averaging_constant = averaging_constant
        self.chunk = int(max_intermediate_outputs) if max_intermediate_outputs else None
        self.batches_in_chunk = 0
        self.current: dict[str, list] = {}  # name -> [lo, hi] (running) or [[lo...], [hi...]] (moving)
        self.merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def collect(self, name: str, arr: np.ndarray) -> None:
        if arr.size == 0:
            return
        lo = np.array([np.min(arr)], dtype=arr.dtype)
        hi = np.array([np.max(arr)], dtype=arr.dtype)
        slot = self.current.get(name)
        if self.moving_average:
            if slot is None:
                self.current[name] = slot = [[], []]
            slot[0].append(lo)
            slot[1].append(hi)
        elif slot is None:
            self.current[name] = [lo, hi]
        else:
            slot[0] = np.fmin(slot[0], lo)
            slot[1] = np.fmax(slot[1], hi)

    def end_batch(self) -> None:
        self.batches_in_chunk += 1
        if self.chunk is not None and self.batches_in_chunk >= self.chunk:
            self._fold()

    def _fold(self) -> None:
        for name, (lo, hi) in self.current.items():
            if self.moving_average:
                lo, hi = np.nanmean(lo, axis=0), np.nanmean(hi, axis=0)
            if self.symmetric:
                m = np.nanmax([np.abs(lo), np.abs(hi)], axis=0)
                lo, hi = -m, m
            old = self.merged.get(name)
            if old is not None:
                if self.moving_average:
                    c = self.averaging_constant
                    lo, hi = old[0] + c * (lo - old[0]), old[1] + c * (hi - old[1])
                else:
                    lo, hi = np.minimum(old[0], lo), np.maximum(old[1], hi)
            self.merged[name] = (lo, hi)
        self.current = {}
        self.batches_in_chunk = 0

    def state_size(self) -> int:
        """Numbers held (for tests: bounded by the chunk, not the number of batches)."""
        n = sum(2 for _ in self.merged)
        for lo, hi in self.current.values():
            n += len(lo) + len(hi) if isinstance(lo, list) else 2
        return n

    def result(self) -> dict[str, TensorData]:
        self._fold()
        return {
            k: TensorData(lowest=np.asarray(lo).reshape(-1)[0], highest=np.asarray(hi).reshape(-1)[0])
            for k, (lo, hi) in self.merged.items()
        }


# ------------------------------------------------------------------------------------------------
# Histograms


class HistogramCollector:
    """One histogram per tensor, updated batch by batch (see the module docstring for why).

    The running histogram has ``FINE`` times more bins than asked for and grows outwards with whole
    bins when a batch goes past it (onnxruntime's merge rule). At the end it is re-binned onto exactly
    the bins onnxruntime would have used for all the data at once (``num_bins`` over the final range),
    so that the thresholds come out the same as onnxruntime's; they are identical when the first batch
    holds the extremes, and otherwise differ only by values that lie within one fine bin of a coarse edge.
    """

    FINE = 8

    def __init__(
        self,
        method: str,
        symmetric: bool = False,
        num_bins: int = 128,
        num_quantized_bins: int = 128,
        percentile: float = 99.999,
        scenario: str = "same",
    ):
        if method not in ("entropy", "percentile", "distribution"):
            raise InvalidArgument(f"unknown histogram method {method!r}")
        if method == "percentile" and not 0 <= percentile <= 100:
            raise InvalidArgument(f"percentile must be in [0, 100], got {percentile}")
        if method == "distribution" and num_bins < 512:
            raise InvalidArgument(f"the Distribution method needs num_bins >= 512, got {num_bins}")
        if method == "distribution" and scenario not in ("same", "p3"):
            raise InvalidArgument(f"scenario must be 'same' or 'p3', got {scenario!r}")
        self.method = method
        self.symmetric = symmetric
        self.num_bins = num_bins
        self.num_quantized_bins = num_quantized_bins
        self.percentile = percentile
        self.scenario = scenario
        self.absolute = method == "percentile" and symmetric
        self.histograms: dict[str, list] = {}  # name -> [hist, edges, min, max, amin, amax]
        self.final: set[str] = set()  # histograms already on onnxruntime's bins (two-pass calibration)

    def preset(self, name: str, lo: np.ndarray, hi: np.ndarray, amin: np.ndarray, amax: np.ndarray) -> None:
        """Start ``name``'s histogram on its final bins, the range being known from a first pass."""
        h = [None, None, lo, hi, amin, amax]
        edges = self._coarse_edges(h)
        h[0], h[1] = np.zeros(self.num_bins, np.int64), edges
        self.histograms[name] = h
        self.final.add(name)

    def end_batch(self) -> None:
        pass

    def state_size(self) -> int:
        return sum(h[0].size + h[1].size for h in self.histograms.values())

    def collect(self, name: str, arr: np.ndarray) -> None:
        data = np.asarray(arr).reshape(-1)
        if data.size == 0:
            return
        lo, hi = _extremes(data)
        if self.absolute:
            data = np.abs(data)
        amin, amax = _extremes(data)
        h = self.histograms.get(name)
        fine = self.num_bins * self.FINE
        if name in self.final:
            add, _ = np.histogram(np.clip(data, h[1][0], h[1][-1]), bins=h[1])
            h[0] = h[0] + add
            return
        if h is None:
            if self.absolute:
                hist, edges = np.histogram(data, bins=fine)
            else:
                t = np.array(max(abs(lo), abs(hi)), dtype=data.dtype)
                hist, edges = np.histogram(data, fine, range=(-t, t))
            self.histograms[name] = [hist, edges, lo, hi, amin, amax]
            return
        hist, edges = h[0], h[1]
        top = amax if self.absolute else np.array(max(abs(lo), abs(hi)), dtype=data.dtype)
        if top > edges[-1]:
            width = edges[1] - edges[0]
            extra = int(np.ceil((float(top) - float(edges[-1])) / float(width)))
            right = edges[-1] + width * np.arange(1, extra + 1, dtype=np.float64)
            if self.absolute:
                edges = np.concatenate((edges, right.astype(edges.dtype)))
                hist = np.concatenate((hist, np.zeros(extra, hist.dtype)))
            else:
                left = (edges[0] - width * np.arange(extra, 0, -1, dtype=np.float64)).astype(edges.dtype)
                edges = np.concatenate((left, edges, right.astype(edges.dtype)))
                hist = np.concatenate((np.zeros(extra, hist.dtype), hist, np.zeros(extra, hist.dtype)))
        # values outside the running range (below the first magnitude edge) land in the end bins
        add, _ = np.histogram(np.clip(data, edges[0], edges[-1]), bins=edges)
        h[0], h[1] = hist + add, edges
        h[2], h[3] = min(h[2], lo), max(h[3], hi)
        h[4], h[5] = min(h[4], amin), max(h[5], amax)

    def _coarse_edges(self, h: list) -> np.ndarray:
        """onnxruntime's bins for all data at once: num_bins over [-max|x|, max|x|] or [min|x|, max|x|]."""
        _, _, lo, hi, amin, amax = h
        if self.absolute:
            return np.histogram(np.array([amin, amax], dtype=np.asarray(amax).dtype), bins=self.num_bins)[1]
        t = np.array(max(abs(lo), abs(hi)), dtype=np.asarray(lo).dtype)
        return np.histogram(np.zeros(0, np.asarray(lo).dtype), self.num_bins, range=(-t, t))[1]

    def _coarse(self, h: list) -> tuple[np.ndarray, np.ndarray]:
        """The histogram on onnxruntime's bins for all the data at once (num_bins over the final range)."""
        hist, edges = h[0], h[1]
        coarse = self._coarse_edges(h)
        centers = (edges[:-1].astype(np.float64) + edges[1:].astype(np.float64)) / 2
        index = np.clip(np.searchsorted(coarse, centers, side="right") - 1, 0, self.num_bins - 1)
        return np.bincount(index, weights=hist, minlength=self.num_bins).astype(np.int64), coarse

    def result(self) -> dict[str, TensorData]:
        out = {}
        for name, h in self.histograms.items():
            hist, edges = (h[0], h[1]) if name in self.final else self._coarse(h)
            coarse = (hist, edges, h[2], h[3])
            if self.method == "percentile":
                out[name] = self._percentile(coarse)
            elif self.method == "entropy":
                lo, hi = entropy_threshold(coarse, self.num_quantized_bins)
                out[name] = TensorData(lowest=lo, highest=hi, hist=hist, hist_edges=edges)
            else:
                out[name] = self._distribution(coarse)
        return out

    def _percentile(self, h: tuple) -> TensorData:
        hist, edges, lo_seen, hi_seen = h[0], h[1], h[2], h[3]
        cdf = np.cumsum(hist / hist.sum())
        if self.symmetric:
            right = np.searchsorted(cdf, self.percentile / 100.0)
            lo, hi = -np.array(edges[right], edges.dtype), np.array(edges[right], edges.dtype)
        else:
            cut = (100.0 - self.percentile) / 200.0
            lo = np.array(edges[np.searchsorted(cdf, cut)], edges.dtype)
            hi = np.array(edges[np.searchsorted(cdf, 1.0 - cut)], edges.dtype)
        if lo < lo_seen:
            lo = lo_seen
        if hi > hi_seen:
            hi = hi_seen
        return TensorData(lowest=lo, highest=hi, hist=hist, hist_edges=edges)

    def _distribution(self, h: tuple) -> TensorData:
        hist, edges = h[0], h[1]
        power = 1.0 if self.scenario == "same" else 1.0 / 3.0
        avg, std = _avg_std(hist, edges, power)
        return TensorData(
            avg=avg, std=std, hist=hist, hist_edges=edges, lowest=edges.min(), highest=edges.max()
        )


def _extremes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if data.size == 0:
        z = np.array(0, dtype=data.dtype)
        return z, z
    return np.nanmin(data), np.nanmax(data)


def _avg_std(hist: np.ndarray, edges: np.ndarray, power: float) -> tuple[np.ndarray, np.ndarray]:
    values = (edges[:-1] + edges[1:]) * 0.5
    if power == 1:
        avg = (hist * values).sum() / hist.sum()
        std = ((hist * values**2).sum() / hist.sum() - avg**2) ** 0.5
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            sign = np.abs(values) / values
        sign[~np.isfinite(sign)] = 1
        values = np.abs(values) ** power * sign
        avg = (hist * values).sum() / hist.sum()
        std = ((hist * values**2).sum() / hist.sum() - avg**2) ** 0.5
    return np.array(avg, dtype=edges.dtype), np.array(std, dtype=edges.dtype)


def _smooth(p: np.ndarray, eps: float = 0.0001) -> np.ndarray | None:
    """Replace zero bins by eps, taking the same mass off the others (as MXNet and onnxruntime do)."""
    is_zero = (p == 0).astype(np.float32)
    is_nonzero = (p != 0).astype(np.float32)
    n_zero = is_zero.sum()
    n_nonzero = p.size - n_zero
    if not n_nonzero:
        return None
    eps1 = eps * float(n_zero) / float(n_nonzero)
    hist = p.astype(np.float32)
    hist += eps * is_zero + (-eps1) * is_nonzero
    return hist


def _kl(p: np.ndarray, q: np.ndarray) -> np.float32:
    pk = np.asarray(p).astype(np.float32)
    pk = 1.0 * pk / np.sum(pk, axis=0, keepdims=True)
    qk = np.asarray(q).astype(np.float32)
    qk = 1.0 * qk / np.sum(qk, axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = pk * np.log(pk / qk)
    res[(pk == 0) & (qk >= 0)] = 0
    res[~((pk > 0) & (qk > 0))] = np.inf
    return np.sum(res, axis=0).astype(np.float32)


def entropy_threshold(h: tuple, num_quantized_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The range whose clipped histogram is closest (KL divergence) to its num_quantized_bins-bin
    quantization; the TensorRT method, with onnxruntime's bin bookkeeping."""
    hist, edges, lo_seen, hi_seen = h[0], h[1], h[2], h[3]
    num_bins = hist.size
    zero_bin = num_bins // 2
    half_q = num_quantized_bins // 2
    count = zero_bin - half_q + 1
    if count < 1:
        return np.asarray(lo_seen), np.asarray(hi_seen)
    kl = np.zeros(count)
    thresholds: list[tuple] = []
    cum = np.concatenate(([0], np.cumsum(hist)))
    for i in range(half_q, zero_bin + 1):
        start = zero_bin - i
        end = min(zero_bin + i + 1, num_bins)
        thresholds.append((edges[start], edges[end]))
        sliced = hist[start:end]
        p = sliced.copy()
        p[0] += cum[start]
        p[-1] += cum[-1] - cum[end]
        nonzero = (p != 0).astype(np.int64)
        merged = sliced.size // num_quantized_bins
        body = num_quantized_bins * merged
        qbins = sliced[:body].reshape(num_quantized_bins, merged).sum(axis=1).astype(np.int64)
        qbins[-1] += sliced[body:].sum()
        norm = nonzero[:body].reshape(num_quantized_bins, merged).sum(axis=1)
        q = np.zeros(p.size, dtype=np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_bin = np.where(norm != 0, qbins / np.where(norm == 0, 1, norm), 0)
        q[:body] = np.repeat(per_bin, merged).astype(np.int64)
        ps, qs = _smooth(p), _smooth(q)
        kl[i - half_q] = np.inf if ps is None or qs is None else np.array(_kl(ps, qs), dtype=edges.dtype)
    lo, hi = thresholds[int(np.argmin(kl))]
    if lo < lo_seen:
        lo = lo_seen
    if hi > hi_seen:
        hi = hi_seen
    return np.asarray(lo), np.asarray(hi)


# ------------------------------------------------------------------------------------------------
# Driving the model


def make_collector(method: CalibrationMethod, options: dict[str, Any]):
    """The collector for ``method`` with onnxruntime's defaults for its options."""
    if method == CalibrationMethod.MinMax:
        return MinMaxCollector(
            symmetric=bool(options.get("symmetric", False)),
            moving_average=bool(options.get("moving_average", False)),
            averaging_constant=float(options.get("averaging_constant", 0.01)),
            max_intermediate_outputs=options.get("max_intermediate_outputs"),
        )
    if method == CalibrationMethod.Entropy:
        return HistogramCollector(
            "entropy",
            symmetric=bool(options.get("symmetric", False)),
            num_bins=int(options.get("num_bins", 128)),
            num_quantized_bins=int(options.get("num_quantized_bins", 128)),
        )
    if method == CalibrationMethod.Percentile:
        return HistogramCollector(
            "percentile",
            symmetric=bool(options.get("symmetric", True)),
            num_bins=int(options.get("num_bins", 2048)),
            percentile=float(options.get("percentile", 99.999)),
        )
    if method == CalibrationMethod.Distribution:
        return HistogramCollector(
            "distribution",
            num_bins=int(options.get("num_bins", 2048)),
            scenario=options.get("scenario", "same"),
        )
    raise InvalidArgument(f"unsupported calibration method {method!r}")


def tensors_to_calibrate(model: Model, op_types: set[str] | None) -> list[str]:
    """Float inputs and outputs (not initializers) of the nodes of ``op_types`` (all nodes if None)."""
    names: dict[str, None] = {}
    for node in model.graph.nodes:
        if op_types and node.op_type not in op_types:
            continue
        for v in (*node.inputs, *node.outputs):
            if v is not None and v.name and v.const is None and _graph.is_float(v):
                names[v.name] = None
    return list(names)


def iterate_reader(reader: Any) -> Iterator[dict]:
    if reader is None:
        raise InvalidArgument("static quantization needs a calibration_data_reader")
    if not callable(getattr(reader, "get_next", None)):
        raise InvalidArgument(
            f"calibration_data_reader must have get_next() (a CalibrationDataReader), "
            f"got {type(reader).__name__}"
        )
    while True:
        batch = reader.get_next()
        if not batch:
            return
        yield batch


def collect(
    model: Model,
    reader: Any,
    names: list[str],
    method: CalibrationMethod = CalibrationMethod.MinMax,
    options: dict[str, Any] | None = None,
    show_progress: bool = True,
) -> dict[str, TensorData]:
    """Run ``model`` (onyx, unoptimized) on every batch of ``reader`` and return each tensor's range."""
    collector = make_collector(method, options or {})
    sess = _graph.session(_graph.with_outputs(model, names))
    input_names = _graph.graph_input_names(model.graph)
    out_names = [o.name for o in sess.get_outputs()]
    wanted = [(i, n) for i, n in enumerate(out_names) if n in set(names)]
    batches = iterate_reader(reader)
    total = None
    try:
        total = len(reader)
    except (TypeError, NotImplementedError):
        pass
    if show_progress:
        from onyx.cli._common import progress

        batches = progress(batches, total, "calibrating")
    two_pass = isinstance(collector, HistogramCollector) and callable(getattr(reader, "rewind", None))
    if two_pass:
        extremes = _run(sess, batches, input_names, wanted, _Extremes())
        reader.rewind()
        for name, (lo, hi, amin, amax) in extremes.seen.items():
            collector.preset(name, lo, hi, amin, amax)
        batches = iterate_reader(reader)
        if show_progress:
            from onyx.cli._common import progress

            batches = progress(batches, total, "histograms")
    _run(sess, batches, input_names, wanted, collector)
    return collector.result()


class _Extremes:
    """First pass of two-pass histogram calibration: each tensor's min, max and magnitude range."""

    def __init__(self) -> None:
        self.seen: dict[str, list] = {}

    def collect(self, name: str, arr: np.ndarray) -> None:
        data = np.asarray(arr).reshape(-1)
        if data.size == 0:
            return
        lo, hi = _extremes(data)
        amin, amax = _extremes(np.abs(data))
        s = self.seen.get(name)
        self.seen[name] = (
            [lo, hi, amin, amax]
            if s is None
            else [min(s[0], lo), max(s[1], hi), min(s[2], amin), max(s[3], amax)]
        )

    def end_batch(self) -> None:
        pass


def _run(sess, batches, input_names, wanted, collector):
    seen = 0
    for batch in batches:
        feeds = _graph.check_feeds(batch, input_names, "the calibration data reader")
        outputs = sess.run(None, feeds)
        for i, name in wanted:
            collector.collect(name, np.asarray(outputs[i]))
        del outputs
        collector.end_batch()
        seen += 1
    if seen == 0:
        raise InvalidArgument("the calibration data reader gave no batch")
    return collector
