"""One loaded version of a model: its sessions (one per instance), its configuration checked against the
model, request validation, and the scheduler that runs it.

The REST and gRPC front ends decode tensors and call :meth:`ServedModel.infer`; everything the protocol
says about names, datatypes, shapes and batch sizes is checked here, once, for both.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onyx.serve import datatypes
from onyx.serve.batcher import Job, Scheduler, Timing
from onyx.serve.config_pbtxt import ModelConfig, TensorConfig, infer_config
from onyx.serve.errors import BadRequest, ConfigError, ServeError
from onyx.serve.metrics import Metrics

log = logging.getLogger("onyx.serve")


@dataclass
class InferInput:
    name: str
    datatype: str
    shape: tuple[int, ...]
    array: np.ndarray


@dataclass
class RequestedOutput:
    name: str
    binary: bool | None = None  # REST: return as binary data (None: the request's default)


@dataclass
class InferRequest:
    inputs: list[InferInput]
    outputs: list[RequestedOutput] | None = None  # None: every output
    id: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class InferOutput:
    name: str
    datatype: str
    array: np.ndarray
    binary: bool | None = None


@dataclass
class InferResponse:
    model_name: str
    model_version: str
    outputs: list[InferOutput]
    id: str = ""
    timing: Timing | None = None


class ServedModel:
    """A model version ready to serve: ``infer(request) -> Future[InferResponse]``."""

    def __init__(
        self,
        name: str,
        version: int,
        path: str,
        config: ModelConfig | None,
        metrics: Metrics,
        threads: int = 0,
        default_max_batch_size: int = 4,
    ):
        from onyx.runtime.options import SessionOptions
        from onyx.runtime.session import InferenceSession

        self.name = name
        self.version = version
        self.path = path
        self.metrics = metrics
        opts = SessionOptions()
        intra = (config.parameters.get("intra_op_thread_count") if config else None) or threads
        try:
            opts.intra_op_num_threads = int(intra)
        except ValueError:
            raise ConfigError(
                f"{name}: parameter intra_op_thread_count must be an integer, got {intra!r}"
            ) from None
        first = InferenceSession(path, sess_options=opts)
        model_inputs = [
            (a.name, datatypes.from_onnx_type(a.type), list(a.shape or [])) for a in first.get_inputs()
        ]
        model_outputs = [
            (a.name, datatypes.from_onnx_type(a.type), list(a.shape or [])) for a in first.get_outputs()
        ]
        self.config = _complete(
            config, name, model_inputs, model_outputs, default_max_batch_size, os.path.basename(path)
        )
        self._inputs = {t.name: t for t in self.config.inputs}
        self._outputs = {t.name: t for t in self.config.outputs}
        self._output_order = [o[0] for o in model_outputs]
        sessions = [first] + [
            InferenceSession(path, sess_options=opts) for _ in range(self.config.instance_count - 1)
        ]
        db = self.config.dynamic_batching
        self.scheduler = Scheduler(
            f"{name}/{version}",
            [self._runner(s) for s in sessions],
            self.config.max_batch_size,
            db.max_queue_delay_microseconds if db is not None else None,
            db.preferred_batch_size if db is not None else (),
            on_execution=self._on_execution,
        )
        metrics.register(name, str(version), self.scheduler)

    def _runner(self, session: Any):
        names = self._output_order

        def run(feed: dict[str, np.ndarray]) -> dict[str, Any]:
            return dict(zip(names, session.run(None, feed)))

        return run

    def _on_execution(self, rows: int, jobs: list[Job], ok: bool) -> None:
        if ok:
            self.metrics.execution(self.name, str(self.version), rows)

    # -- metadata ----------------------------------------------------------------------------------
    def _shape(self, t: TensorConfig) -> list[int]:
        return ([-1] if self.config.max_batch_size > 0 else []) + list(t.dims)

    def metadata(self, versions: list[int]) -> dict[str, Any]:
        """GET /v2/models/{name}[/versions/{v}]: name, versions, platform, inputs and outputs."""
        return {
            "name": self.name,
            "versions": [str(v) for v in versions],
            "platform": self.config.platform,
            "inputs": [
                {"name": t.name, "datatype": t.datatype, "shape": self._shape(t)} for t in self.config.inputs
            ],
            "outputs": [
                {"name": t.name, "datatype": t.datatype, "shape": self._shape(t)} for t in self.config.outputs
            ],
        }

    # -- inference ---------------------------------------------------------------------------------
    def infer(self, request: InferRequest) -> Future:
        """Validate and queue a request; the future gives an :class:`InferResponse`."""
        t0 = time.perf_counter_ns()
        version = str(self.version)
        try:
            feed, rows = self._feed(request)
            wanted = self._wanted(request)
            job_future = self.scheduler.submit(feed, rows)
        except ServeError as e:
            self.metrics.failure(
                self.name,
                version,
                "REJECTED" if e.http_status == 503 else "OTHER",
                (time.perf_counter_ns() - t0) / 1e3,
            )
            raise
        out: Future = Future()

        def done(f: Future) -> None:
            try:
                values, timing = f.result()
                response = InferResponse(
                    self.name, version, self._response_outputs(values, wanted, rows), request.id, timing
                )
            except BaseException as e:  # noqa: BLE001 - every failure reaches the caller
                reason = "BACKEND" if not isinstance(e, BadRequest) else "OTHER"
                self.metrics.failure(self.name, version, reason, (time.perf_counter_ns() - t0) / 1e3)
                out.set_exception(e)
                return
            now = time.perf_counter_ns()
            self.metrics.success(
                self.name,
                version,
                (now - t0) / 1e3,
                (timing.started - timing.enqueued) / 1e3,
                (timing.finished - timing.started) / 1e3,
            )
            out.set_result(response)

        job_future.add_done_callback(done)
        return out

    async def infer_async(self, request: InferRequest) -> InferResponse:
        return await asyncio.wrap_future(self.infer(request))

    def _feed(self, request: InferRequest) -> tuple[dict[str, np.ndarray], int]:
        mbs = self.config.max_batch_size
        feed: dict[str, np.ndarray] = {}
        rows = None
        for inp in request.inputs:
            where = f"input {inp.name!r}"
            spec = self._inputs.get(inp.name)
            if spec is None:
                raise BadRequest(
                    f"unexpected input {inp.name!r} for model {self.name!r}; it takes {list(self._inputs)}"
                )
            if inp.name in feed:
                raise BadRequest(f"{where} is given twice")
            if inp.datatype != spec.datatype:
                raise BadRequest(
                    f"{where}: datatype {inp.datatype} does not match the model's {spec.datatype}"
                )
            expected = self._shape(spec)
            if len(inp.shape) != len(expected) or any(
                e != -1 and e != s for e, s in zip(expected, inp.shape)
            ):
                raise BadRequest(f"{where}: shape {list(inp.shape)} does not match the model's {expected}")
            arr = inp.array
            if mbs > 0:
                b = inp.shape[0]
                if not 1 <= b <= mbs:
                    raise BadRequest(f"{where}: batch size {b} is not within 1..max_batch_size ({mbs})")
                if rows is not None and b != rows:
                    raise BadRequest(f"inputs have different batch sizes ({rows} and {b})")
                rows = b
                if spec.reshape is not None:
                    arr = arr.reshape((b, *spec.reshape))
            elif spec.reshape is not None:
                arr = arr.reshape(spec.reshape)
            if spec.datatype == "BYTES":
                arr = _strings(arr, where)
            feed[inp.name] = arr
        missing = [n for n, t in self._inputs.items() if n not in feed and not t.optional]
        if missing:
            raise BadRequest(
                f"model {self.name!r} needs input(s) {missing}; got {[i.name for i in request.inputs]}"
            )
        return feed, rows if rows is not None else 1

    def _wanted(self, request: InferRequest) -> list[RequestedOutput]:
        if not request.outputs:
            return [RequestedOutput(n) for n in self._output_order]
        for o in request.outputs:
            if o.name not in self._outputs:
                raise BadRequest(
                    f"unknown output {o.name!r} of model {self.name!r}; it has {list(self._outputs)}"
                )
        return request.outputs

    def _response_outputs(
        self, values: dict[str, Any], wanted: list[RequestedOutput], rows: int
    ) -> list[InferOutput]:
        mbs = self.config.max_batch_size
        outs = []
        for o in wanted:
            value = values[o.name]
            if not isinstance(value, np.ndarray):
                raise BadRequest(
                    f"output {o.name!r} is a {type(value).__name__}, not a tensor: it cannot be served"
                )
            spec = self._outputs[o.name]
            if spec.reshape is not None:  # the model's reshape back to the declared dims
                value = value.reshape(((rows,) if mbs > 0 else ()) + tuple(spec.dims))
            datatype = spec.datatype if value.dtype.kind not in "OUS" else "BYTES"
            if datatype != "BYTES" and value.dtype != datatypes.NUMPY[datatype]:
                datatype = datatypes.from_numpy(value.dtype)
            outs.append(InferOutput(o.name, datatype, value, o.binary))
        return outs

    def close(self) -> None:
        """Refuse new requests, finish the queued ones, stop the workers."""
        self.scheduler.close(wait=True)
        self.metrics.unregister(self.name, str(self.version))


def _strings(arr: np.ndarray, where: str) -> np.ndarray:
    """BYTES elements for an ONNX string input: UTF-8 decoded to str."""
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(arr.reshape(-1)):
        try:
            flat[i] = v.decode("utf-8") if isinstance(v, bytes) else str(v)
        except UnicodeDecodeError as e:
            raise BadRequest(f"{where}: element {i} is not valid UTF-8 ({e.reason})") from None
    return out


def _complete(
    config: ModelConfig | None,
    name: str,
    model_inputs: list[tuple[str, str | None, list]],
    model_outputs: list[tuple[str, str | None, list]],
    default_max_batch_size: int,
    filename: str,
) -> ModelConfig:
    """The given config checked against the model, with missing inputs/outputs filled from it; or one
    inferred from the model."""
    if config is None:
        return infer_config(name, model_inputs, model_outputs, default_max_batch_size)
    inferred = infer_config(name, model_inputs, model_outputs, config.max_batch_size)
    batched = config.max_batch_size > 0
    for kind, declared, actual, filled in (
        ("input", config.inputs, model_inputs, inferred.inputs),
        ("output", config.outputs, model_outputs, inferred.outputs),
    ):
        by_name = {n: (dt, shape) for n, dt, shape in actual}
        for t in declared:
            if t.name not in by_name:
                raise ConfigError(
                    f"{name}: config.pbtxt declares {kind} {t.name!r}, but {filename} has "
                    f"{kind}s {list(by_name)}"
                )
            dt, shape = by_name[t.name]
            if dt is not None and dt != t.datatype:
                raise ConfigError(
                    f"{name}: {kind} {t.name!r} is {datatypes.to_config(t.datatype)} in "
                    f"config.pbtxt but {datatypes.to_config(dt)} in the model"
                )
            model_dims = [d if isinstance(d, int) and d >= 0 else -1 for d in shape]
            if batched:
                if model_dims and model_dims[0] != -1:
                    raise ConfigError(
                        f"{name}: max_batch_size {config.max_batch_size} needs a dynamic first "
                        f"dimension, but {kind} {t.name!r} has shape {model_dims}"
                    )
                model_dims = model_dims[1:]
            served = t.reshape if t.reshape is not None else t.dims
            if shape and not _compatible(served, model_dims):
                raise ConfigError(
                    f"{name}: {kind} {t.name!r} has dims {served} in config.pbtxt but "
                    f"{model_dims} in the model (batch dimension excluded)"
                )
        have = {t.name for t in declared}
        declared.extend(t for t in filled if t.name not in have)
    return config


def _compatible(a: list[int], b: list[int]) -> bool:
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))
