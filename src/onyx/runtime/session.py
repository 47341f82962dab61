"""InferenceSession: onnxruntime's Python API over onyx's loader, optimizer and executor."""

from __future__ import annotations

import json
import os
import threading
import time
import weakref
from typing import Any

import numpy as np

from onyx import config
from onyx.errors import InvalidArgument, InvalidGraph, OnyxError
from onyx.ir.dtypes import DataType
from onyx.ir.model import Model, Value
from onyx.ir.types import MapType, OptionalType, SequenceType, Shape, SparseTensorType, TensorType, TypeBase
from onyx.kernels import blas_threads, mkl
from onyx.kernels.arena import DEFAULT_LIMIT as DEFAULT_ARENA_LIMIT
from onyx.kernels.arena import Arena
from onyx.model_io import release_mapped_pages
from onyx.ops.registry import KernelContext
from onyx.runtime import cancellation, feeds, release, repack
from onyx.runtime.limits import max_tensor_bytes
from onyx.runtime.options import GraphOptimizationLevel, RunOptions, SessionOptions
from onyx.runtime.plan import CompileContext, Plan
from onyx.runtime.providers import resolve_providers
from onyx.runtime.session_api import (
    SessionExtras,
    dense_feed,
    load_for_session,
    options_from_model,
    seeded_generator,
    session_threads,
)


class NodeArg:
    """An input or output of a session: name, type string and shape, as onnxruntime reports them."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name: str, type: str, shape: list[int | str | None] | None):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What :meth:`InferenceSession.get_modelmeta` returns."""

    def __init__(self, model: Model):
        self.producer_name = model.producer_name or ""
        self.graph_name = (model.graph.name if model.graph is not None else "") or ""
        self.domain = model.domain or ""
        self.description = model.doc_string or ""
        self.graph_description = (model.graph.doc_string if model.graph is not None else "") or ""
        # onnxruntime reports INT64_MAX for a model that does not set model_version
        self.version = model.model_version if model.model_version is not None else (1 << 63) - 1
        self.custom_metadata_map = dict(model.metadata_props)


def _type_string(t: TypeBase | None) -> str:
    if t is None:
        return "unknown"
    return t.ort_name()


def _shape_list(t: TypeBase | None) -> list[int | str | None]:
    if isinstance(t, OptionalType):  # onnxruntime reports the shape of an optional tensor's element
        t = t.elem
    if isinstance(t, TensorType) and t.shape is not None:
        return [d if d is not None else None for d in t.shape.dims]
    return []


def reported_type(declared: TypeBase | None, inferred: TypeBase | None) -> TypeBase | None:
    """A graph output's type as onnxruntime reports it: what the model declares, completed by inference
    where it says nothing (an element type, a shape, a dim), a known size replacing a symbolic one;
    sizes that depend on data are unknown (None), never an ``unk__`` name of onyx's own."""
    if declared is not None and not isinstance(declared, TensorType):
        return declared
    if not isinstance(inferred, TensorType):
        return declared if declared is not None else inferred
    elem = declared.elem_type if declared is not None and declared.elem_type else inferred.elem_type
    dshape = declared.shape if declared is not None else None
    ishape = inferred.shape
    if ishape is None or (dshape is not None and len(dshape.dims) != len(ishape.dims)):
        return TensorType(elem, dshape)
    known = [None if isinstance(d, str) and "unk__" in d else d for d in ishape.dims]
    if dshape is None:
        return TensorType(elem, Shape(known))
    dims = [i if isinstance(i, int) or d is None else d for d, i in zip(dshape.dims, known)]
    return TensorType(elem, Shape(dims))


class InferenceSession(SessionExtras):
    """Load a model and run it: ``InferenceSession(path).run(None, {"x": array})``."""

    def __init__(
        self,
        path_or_bytes: str | bytes | os.PathLike | Model,
        sess_options: SessionOptions | None = None,
        providers: list[Any] | None = None,
        provider_options: list[dict] | None = None,
        **kwargs: Any,
    ):
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._providers, self._provider_options = resolve_providers(providers, provider_options)
        self._source = path_or_bytes
        if isinstance(path_or_bytes, Model):
            self._model_path = None
            model = path_or_bytes.clone()  # the session rewrites its copy, never the caller's model
        elif isinstance(path_or_bytes, str | os.PathLike):
            self._model_path = os.fspath(path_or_bytes)
            model = load_for_session(path_or_bytes, self._options)
            self._file_stamp = _file_stamp(self._model_path)
        elif isinstance(path_or_bytes, bytes | bytearray | memoryview):
            self._model_path = None
            # one immutable copy: the model's weights view it, and pickling sends it
            self._source = data = path_or_bytes if isinstance(path_or_bytes, bytes) else bytes(path_or_bytes)
            model = load_for_session(data, self._options)
        else:
            raise InvalidArgument(
                f"InferenceSession expects a path, bytes or an onyx Model, got {type(path_or_bytes).__name__}"
            )
        self._profiling = bool(self._options.enable_profiling)
        self._profile: list = []  # (thread id, run start, run end, [(node, t0, t1), ...]) per run
        self._profile_start = time.perf_counter()
        self._profile_start_ns = time.time_ns() if self._profiling else 0
        self._lock = threading.Lock()
        self._options = options_from_model(model, self._options)  # ORT_LOAD_CONFIG_FROM_MODEL=1
        self._build(model)
        if self._options._config.get("session.keep_values"):  # onyx's own entry: runtime/intermediates.py
            from onyx.runtime.intermediates import keep_values

            keep_values(self)
        # the last attribute: freed after the plan and the model, it frees what remains of the model's
        # cycles (its weights, its mapped files) at once, unless something else still holds them; the
        # model given (when one was) too, when nothing else holds it either
        self._release_token = release.release_when_dropped(self._model, self._source)

    # -- building ------------------------------------------------------------------------------
    def _build(self, model: Model) -> None:
        from onyx.checker import check

        switches = config.reload()  # the environment's switches as this session is created
        # the stages: check, infer shapes, optimize, plan (each a public function one can stop after)
        check(model, full=False)
        by_name = getattr(self._options, "_free_dims_by_name", None)
        by_denotation = getattr(self._options, "_free_dims_by_denotation", None)
        if by_name or by_denotation:
            _override_free_dims(model, dict(by_name or {}), dict(by_denotation or {}))
        declared_outputs = [v.type for v in model.graph.outputs]  # before inference refines them
        level = int(self._options.graph_optimization_level)
        from onyx.optimizer.levels import infer_shapes_stage, run_pass

        run_pass(infer_shapes_stage, model)  # types (and known values) onto the session's copy
        if level > 0:
            from onyx.optimizer import optimize

            model = optimize(model, level, infer=False)
        if self._options.optimized_model_filepath:
            from onyx.model_io import save, weight_bytes

            # past ~1.8 GB of weights the file would cross protobuf's 2 GB limit: weights go beside it
            big = weight_bytes(model) > (1800 << 20)
            conf = self._options._config  # onnxruntime's entries naming the weights' file and threshold
            ext_file = conf.get("session.optimized_model_external_initializers_file_name")
            min_size = int(conf.get("session.optimized_model_external_initializers_min_size_in_bytes", 1024))
            save(
                model,
                self._options.optimized_model_filepath,
                save_as_external_data=big or bool(ext_file),
                location=ext_file or None,
                size_threshold=min_size if ext_file else 1024,
            )
        self._model = model
        g = model.graph
        threads = session_threads(self._options)  # its own count, or the global pool's
        if self._options.enable_cpu_mem_arena and switches.mallopt:
            # asked for (ONYX_MALLOPT=1): glibc keeps freed intermediates for the next run, process-wide
            from onyx.runtime.allocator import keep_freed_memory

            keep_freed_memory()
        # the run's intermediates come from and go back to this session's own cache (onnxruntime's
        # CPU arena); emptied when the session goes. Its allocator also refuses any one tensor past
        # session.max_tensor_bytes, so a memory bomb fails its node instead of the process (limits.py)
        self._arena = Arena(DEFAULT_ARENA_LIMIT if self._options.enable_cpu_mem_arena else 0)
        self._arena.bound_requests(max_tensor_bytes(self._options))
        self._arena_hooks = self._arena.hooks()
        weakref.finalize(self, self._arena.close)
        # after onyx.set_seed: one generator per session, its stream advancing node by node and run by run
        # use_deterministic_compute: one path per kernel and shape whatever the load (BLAS on one thread
        # during runs, onyx's own fixed partitions: see kernels.blas_threads.for_run)
        self._deterministic = bool(getattr(self._options, "use_deterministic_compute", False))
        kctx = KernelContext(
            intra_op_num_threads=threads, seed=seeded_generator(), deterministic=self._deterministic
        )
        kctx.extra["opsets"] = model.opsets
        self._blas_threads = threads  # BLAS's count for the duration of each run (kernels.blas_threads)
        cc = CompileContext(model.opsets, model.function_map(), kctx)
        init_names = set(g.initializers)
        self._feed_values: list[Value] = [v for v in g.inputs if v.name not in init_names]
        # IR < 4 (as onnxruntime reads it): an initializer listed among the inputs is a constant, not an
        # input the caller may override
        overridable = (model.ir_version or 0) >= 4
        self._overridable: list[Value] = [v for v in g.inputs if v.name in init_names and overridable]
        with self._arena.installed():  # kernels' prepare steps allocate under max_tensor_bytes too (fuzz)
            self._plan = Plan(g, cc)
        if self._options._config.get(repack.DISABLE_KEY, "0") != "1":
            repack.transpose_gemm_weights(self._plan, g)
        release_mapped_pages(model)  # weights are in place: pages read only while optimizing may go
        self._input_index = {
            v.name: i for i, v in enumerate(g.inputs) if overridable or v.name not in init_names
        }
        self._output_index = {v.name: i for i, v in enumerate(g.outputs)}
        self._inputs = [NodeArg(v.name, _type_string(v.type), _shape_list(v.type)) for v in self._feed_values]
        self._outputs = [
            NodeArg(v.name, _type_string(t), _shape_list(t))
            for v, t in ((v, reported_type(d, v.type)) for v, d in zip(g.outputs, declared_outputs))
        ]
        self._override_args = [
            NodeArg(v.name, _type_string(v.type), _shape_list(v.type)) for v in self._overridable
        ]
        self._meta = ModelMetadata(model)
        self._defaults = [v.const.numpy() if v.const is not None else None for v in g.inputs]
        # an input of optional type may be left out: it is then an empty optional (as in onnxruntime)
        self._required = {v.name for v in self._feed_values if not isinstance(v.type, OptionalType)}
        self._all_outputs = list(range(len(g.outputs)))
        # feeds that need no conversion: name -> (input index, dtype, rank, fixed dims as (axis, size))
        self._plain_feeds: dict[str, tuple] = {}
        for name, i in self._input_index.items():
            t = g.inputs[i].type
            if not isinstance(t, TensorType) or not t.elem_type or t.shape is None:
                continue
            try:
                dt = DataType(t.elem_type).numpy_dtype
            except (ValueError, OnyxError):
                continue
            if dt != np.dtype(object):
                fixed = tuple((a, d) for a, d in enumerate(t.shape.dims) if isinstance(d, int) and d >= 0)
                self._plain_feeds[name] = (i, dt, len(t.shape.dims), fixed)

    # -- introspection ------------------------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return list(self._override_args)

    def get_modelmeta(self) -> ModelMetadata:
        return self._meta

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict]:
        return {p: dict(o) for p, o in zip(self._providers, self._provider_options)}

    def get_session_options(self) -> SessionOptions:
        return self._options

    def set_providers(
        self, providers: list[Any] | None = None, provider_options: list[dict] | None = None
    ) -> None:
        """Choose the providers again; an unknown one raises (the constructor alone warns and falls back)."""
        self._providers, self._provider_options = resolve_providers(providers, provider_options, strict=True)

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started, in ns since the epoch (0 when profiling is off), as onnxruntime."""
        return self._profile_start_ns

    @property
    def model(self) -> Model:
        """The (optimized) model this session runs."""
        return self._model

    # -- running -------------------------------------------------------------------------------
    def run(
        self,
        output_names: list[str] | None,
        input_feed: dict[str, Any],
        run_options: RunOptions | None = None,
    ) -> list[Any]:
        """Run the model; returns the requested outputs (all when ``output_names`` is None) in order."""
        if not isinstance(input_feed, dict):
            raise InvalidArgument(
                f"input_feed must be a dict of input name -> value, got {type(input_feed).__name__}"
            )
        if not output_names:  # None or [] (as in onnxruntime): every output
            out_idx = self._all_outputs
        else:
            if isinstance(output_names, str):
                raise InvalidArgument("output_names must be a list of names (or None), not a string")
            out_idx = []
            for name in output_names:
                i = self._output_index.get(name)
                if i is None:  # any value of the original graph (onyx only): see runtime/intermediates.py
                    return self._run_values(list(output_names), input_feed, run_options)
                out_idx.append(i)
        inputs = list(self._defaults)
        fed_roots: set[int] = set()
        plain = self._plain_feeds
        for name, value in input_feed.items():
            spec = plain.get(name)
            if (
                spec is not None
                and type(value) is np.ndarray
                and value.dtype == spec[1]
                and value.ndim == spec[2]
                and all(value.shape[a] == d for a, d in spec[3])
            ):
                inputs[spec[0]] = value  # the common case: the right dtype and shape, nothing to convert
                fed_roots.add(id(_owner(value)))
                continue
            i = self._input_index.get(name)
            if i is None:
                raise InvalidArgument(
                    f"Invalid input name: {name} ({name!r} is not one of the model's inputs "
                    f"{[a.name for a in self._inputs]})"
                )
            inputs[i] = x = _convert_feed(self._model.graph.inputs[i], dense_feed(value))
            if isinstance(x, np.ndarray):
                fed_roots.add(id(_owner(x)))
        missing = [n for n in self._required if n not in input_feed]
        if missing:
            raise InvalidArgument(
                f"Required inputs ({sorted(missing)}) are missing from input feed ({list(input_feed)}): "
                f"the model needs {[a.name for a in self._inputs]}"
            )
        # raises at once when terminate is already set; None without RunOptions: nothing to check
        stop = cancellation.for_run(run_options) if run_options is not None else None
        arena = self._arena_hooks  # this run's arrays come from the session's arena, where there is one
        previous = arena[0](arena[2]) if arena is not None else None
        try:
            if self._blas_threads or self._deterministic or mkl.loaded() is not None:
                with blas_threads.for_run(self._blas_threads, deterministic=self._deterministic):
                    outs = self._run_plan(inputs, stop)
            else:  # a default session on numpy's BLAS: nothing to scope
                outs = self._run_plan(inputs, stop)
            # outputs the caller owns are copied under the same bound (a broadcast view may be huge)
            return [self._owned_output(outs[i], fed_roots, i) for i in out_idx]
        finally:
            if arena is not None:
                arena[1](previous)
                if stop is not None and cancellation.shrinks_arena(run_options):
                    self._arena.release()  # onnxruntime's memory.enable_memory_arena_shrinkage

    def _owned_output(self, x: Any, fed_roots: set[int], index: int) -> Any:
        try:
            return _output(x, fed_roots)
        except MemoryError as e:
            from onyx.errors import Fail

            name = self._outputs[index].name if index < len(self._outputs) else f"#{index}"
            raise Fail(f"output {name!r} cannot be returned: {e}") from None

    def _run_values(self, names: list[str], input_feed: dict[str, Any], run_options) -> list:
        """``run`` for names that are not graph outputs: values of the original graph, from a plan
        where they survive (unknown names raise InvalidArgument naming them)."""
        from onyx.runtime.intermediates import run_values

        return run_values(self, names, input_feed, run_options)

    def _run_plan(self, inputs: list, stop: cancellation.RunStop | None) -> list:
        if stop is not None:  # the run's kernels see it too: long ones check it between blocks
            kctx = self._plan.cc.kctx
            previous = kctx.enter_run(stop)
            try:
                return self._run_plan_timed(inputs, stop)
            finally:
                kctx.exit_run(previous)
        if not self._profiling:
            return self._plan.run(inputs, None)
        return self._run_plan_timed(inputs, None)

    def _run_plan_timed(self, inputs: list, stop: cancellation.RunStop | None) -> list:
        if not self._profiling:
            return self._plan.run(inputs, None, None, stop)
        profile: list = []
        t0 = time.perf_counter()
        outs = self._plan.run(inputs, None, profile, stop)
        record = (threading.get_native_id(), t0, time.perf_counter(), profile)
        with self._lock:
            if self._profiling:
                self._profile.append(record)
        return outs

    def end_profiling(self) -> str:
        """Write the timings (Chrome trace JSON, like onnxruntime's) and return the file name.

        One ``model_run`` event per run and one ``<node name>_kernel_time`` event per node run. Profiling
        stops here: a second call returns "" (as in onnxruntime).
        """
        with self._lock:
            if not self._profiling:
                return ""
            self._profiling = False
            runs, self._profile = self._profile, []
        index = {id(n): i for i, n in enumerate(self._model.graph.nodes)}
        pid = os.getpid()
        start = self._profile_start

        def us(t: float) -> int:
            return int((t - start) * 1e6)

        events = []
        for tid, r0, r1, nodes in runs:
            for node, t0, t1, ins, outs in nodes:
                args = {"op_name": node.op_type, "provider": self._providers[0]}
                if id(node) in index:
                    args["node_index"] = str(index[id(node)])
                args.update(_profile_sizes(node, ins, outs))
                events.append(
                    {
                        "cat": "Node",
                        "pid": pid,
                        "tid": tid,
                        "dur": us(t1) - us(t0),
                        "ts": us(t0),
                        "ph": "X",
                        "name": f"{node.name or node.op_type}_kernel_time",
                        "args": args,
                    }
                )
            events.append(
                {
                    "cat": "Session",
                    "pid": pid,
                    "tid": tid,
                    "dur": us(r1) - us(r0),
                    "ts": us(r0),
                    "ph": "X",
                    "name": "model_run",
                    "args": {},
                }
            )
        now = time.time()
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(now)) + f"_{int(now * 1000) % 1000:03d}"
        base = f"{self._options.profile_file_prefix}_{stamp}"
        path = f"{base}.json"
        k = 1
        while os.path.exists(path):  # two sessions ending in the same millisecond keep both files
            path = f"{base}_{k}.json"
            k += 1
        with open(path, "w") as fh:
            json.dump(events, fh)
        return path

    # -- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        from onyx.model_io import serialize

        if isinstance(self._source, str | os.PathLike) and self._model_path:
            if _file_stamp(self._model_path) == self._file_stamp:
                from onyx.model_io import load

                data = serialize(load(self._model_path))
            else:
                # the file is gone or was rewritten: send the model this session holds
                data = serialize(self._model)
        elif isinstance(self._source, bytes | bytearray | memoryview):
            data = bytes(self._source)
        else:
            data = serialize(self._source)
        return {
            "model_bytes": data,
            "options": self._options,
            "providers": self._providers,
            "provider_options": self._provider_options,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(  # type: ignore[misc]
            state["model_bytes"], state["options"], state["providers"], state["provider_options"]
        )


def _override_free_dims(model: Model, by_name: dict[str, int], by_denotation: dict[str, int]) -> None:
    """SessionOptions.add_free_dimension_override_by_name/_by_denotation: fix symbolic dims of the main
    graph (an input dim with a denotation fixes its symbol wherever the symbol appears)."""
    g = model.graph
    for v in g.inputs:
        t = v.type.elem if isinstance(v.type, OptionalType) else v.type
        if not (isinstance(t, TensorType) and t.shape is not None and t.shape.denotations):
            continue
        for i, den in enumerate(t.shape.denotations):
            if den and den in by_denotation:
                d = t.shape.dims[i]
                if isinstance(d, str):
                    by_name.setdefault(d, by_denotation[den])
                else:
                    t.shape.dims[i] = by_denotation[den]
    if not by_name:
        return
    for v in [*g.inputs, *g.outputs, *g.value_info]:
        t = v.type.elem if isinstance(v.type, OptionalType) else v.type
        if isinstance(t, TensorType) and t.shape is not None:
            t.shape.dims = [by_name.get(d, d) if isinstance(d, str) else d for d in t.shape.dims]


def _profile_sizes(node, ins: list, outs: list) -> dict:
    """onnxruntime's per-node profile fields: input/output types and shapes, and bytes of weights
    (initializers), of other inputs (activations) and of outputs, as strings as onnxruntime writes them."""
    params = acts = out_bytes = 0
    in_shapes, out_shapes = [], []
    for i, rec in enumerate(ins):
        if rec is None:
            continue
        name, shape, nbytes = rec
        in_shapes.append({name: shape})
        v = node.inputs[i] if i < len(node.inputs) else None
        if v is not None and v.const is not None:
            params += nbytes
        else:
            acts += nbytes
    for rec in outs:
        if rec is not None:
            out_shapes.append({rec[0]: rec[1]})
            out_bytes += rec[2]
    return {
        "activation_size": str(acts),
        "parameter_size": str(params),
        "output_size": str(out_bytes),
        "input_type_shape": in_shapes,
        "output_type_shape": out_shapes,
    }

def _file_stamp(path: str) -> tuple | None:
    """What identifies a file's contents cheaply: inode, size and modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# ---------------------------------------------------------------------------------------------
# Feeds


def _to_array(value: Any, name: str) -> Any:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and not isinstance(value, np.generic):
        if str(getattr(value, "dtype", "")) == "torch.bfloat16":
            # numpy has no bfloat16: read the bits as int16 and view them as ml_dtypes.bfloat16
            import sys

            import ml_dtypes

            torch = sys.modules.get("torch")
            if torch is not None:
                try:
                    return np.from_dlpack(value.view(torch.int16)).view(ml_dtypes.bfloat16)
                except (TypeError, RuntimeError, BufferError, ValueError):
                    pass
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError, ValueError):
            pass
    if hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except Exception as e:  # noqa: BLE001 - a foreign array type: report it as a bad feed
            raise InvalidArgument(
                f"input {name!r}: cannot convert {type(value).__name__} to a numpy array: "
                f"{type(e).__name__}: {e}"
            ) from None
    return value


def _convert_feed(v: Value, value: Any) -> Any:
    t = v.type
    if isinstance(t, SequenceType):
        if not isinstance(value, list | tuple):
            raise InvalidArgument(
                f"input {v.name!r}: expected {t.ort_name()} (a list), got {type(value).__name__}"
            )
        return [_convert_feed(Value(v.name, t.elem), x) for x in value]
    if isinstance(t, MapType):
        if not isinstance(value, dict):
            raise InvalidArgument(
                f"input {v.name!r}: expected {t.ort_name()} (a dict), got {type(value).__name__}"
            )
        return _convert_map(v.name, t, value)
    if isinstance(t, OptionalType):
        if value is None:
            return None
        return _convert_feed(Value(v.name, t.elem), value)
    if value is None:
        raise InvalidArgument(f"input {v.name!r}: expected {_type_string(t)}, got None")
    arr = _to_array(value, v.name)
    if isinstance(t, TensorType | SparseTensorType) and t.elem_type:
        try:
            expected = DataType(t.elem_type).numpy_dtype
        except (ValueError, OnyxError):
            expected = None
        if not isinstance(arr, np.ndarray):
            try:
                arr = np.asarray(arr, dtype=expected)
            except (TypeError, ValueError) as e:
                raise InvalidArgument(
                    f"input {v.name!r}: cannot convert {type(value).__name__} to {t.ort_name()}: {e}"
                ) from None
        if expected is not None and arr.dtype != expected:
            if expected == np.dtype(object) and feeds.is_string_array(arr):
                arr = feeds.string_tensor(arr)  # bytes, void, unicode as onnxruntime reads them
            else:
                got = _dtype_name(arr.dtype)
                raise InvalidArgument(
                    f"Unexpected input data type. Actual: (tensor({got})) , expected: ({t.ort_name()}) "
                    f"for input {v.name!r}"
                )
        if arr.dtype == object:
            arr = feeds.string_tensor(arr)
        shape = t.shape
        if shape is not None:
            if arr.ndim != len(shape.dims):
                raise InvalidArgument(
                    f"Invalid rank for input: {v.name} Got: {arr.ndim} Expected: {len(shape.dims)} "
                    f"(input {v.name!r}: expected rank {len(shape.dims)}, shape {_fmt_shape(shape.dims)}; "
                    f"got rank {arr.ndim}, shape {list(arr.shape)})"
                )
            for axis, (want, got) in enumerate(zip(shape.dims, arr.shape)):
                if isinstance(want, int) and want >= 0 and want != got:
                    raise InvalidArgument(
                        f"Got invalid dimensions for input: {v.name} for the following indices index: {axis} "
                        f"Got: {got} Expected: {want} (input {v.name!r}: dimension {axis} must be {want}, "
                        f"expected shape {_fmt_shape(shape.dims)}, got {list(arr.shape)})"
                    )
        return arr
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    return arr


def _convert_map(name: str, t: MapType, value: dict) -> dict:
    """Keys and values of a map feed checked and converted to the declared types (values become numpy
    scalars of the element type, so that kernels see float32 where the model says float)."""
    key_type = t.key_type
    if key_type == DataType.STRING:

        def key(k: Any) -> Any:
            if isinstance(k, str):
                return k
            if isinstance(k, bytes):
                return k.decode("utf-8", "surrogateescape")
            return None

    else:

        def key(k: Any) -> Any:
            return int(k) if isinstance(k, int | np.integer) and not isinstance(k, bool) else None

    conv = None
    vt = t.value
    if isinstance(vt, TensorType) and vt.elem_type:
        try:
            dt = DataType(vt.elem_type).numpy_dtype
        except (ValueError, OnyxError):
            dt = None
        if dt is not None:
            conv = str if dt == np.dtype(object) else dt.type
    out = {}
    for k, x in value.items():
        kk = key(k)
        if kk is None:
            raise InvalidArgument(
                f"input {name!r}: expected {t.ort_name()}, got a key {k!r} of type {type(k).__name__}"
            )
        if conv is not None:
            try:
                x = conv(x)
            except (TypeError, ValueError) as e:
                raise InvalidArgument(
                    f"input {name!r}: expected {t.ort_name()}, the value {x!r} of key {k!r} does not "
                    f"convert: {e}"
                ) from None
        out[kk] = x
    return out


def _dtype_name(dt: np.dtype) -> str:
    from onyx.ir.dtypes import from_numpy

    try:
        return from_numpy(dt).onnx_name
    except OnyxError:
        return str(dt)


def _fmt_shape(dims: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _owner(a: np.ndarray) -> Any:
    """The object that owns an array's memory (numpy keeps ``base`` pointing at it)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def _output(x: Any, fed_roots: set[int]) -> Any:
    """An output the caller owns, as onnxruntime gives: writable, C-contiguous (kernels may leave
    channels-last or transposed views) and never a view of a feed or weight."""
    if isinstance(x, np.ndarray):
        if not x.flags.writeable or (fed_roots and id(_owner(x)) in fed_roots):
            return x.copy()
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    if isinstance(x, np.generic):
        return np.asarray(x)
    if isinstance(x, list):
        return [_output(a, fed_roots) for a in x]
    return x


__all__ = ["InferenceSession", "NodeArg", "ModelMetadata", "GraphOptimizationLevel", "InvalidGraph"]
