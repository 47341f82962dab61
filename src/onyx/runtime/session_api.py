"""The rest of onnxruntime's InferenceSession API (OrtValues, IOBinding, async runs, memory infos...).

:class:`SessionExtras` is a base class of :class:`onyx.InferenceSession`: it only calls the session's
``run`` and reads its introspection, so the executor stays in session.py. Also here: the loading options
onnxruntime takes through SessionOptions (initializers given in memory, ``ort_config`` read from the
model) and the process-wide settings (global thread pool, seed).
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from onyx.errors import InvalidArgument, OnyxError
from onyx.runtime.ortvalue import CPU_MEMORY_INFO, OrtValue, OrtValueVector, check_cpu, unwrap

# -- process-wide settings -----------------------------------------------------------------------------

_global_threads: dict[str, int] = {"intra": 0, "inter": 0}
_seed: list[int | None] = [None]


def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None:
    """The thread counts of sessions that share the global pool (``use_per_session_threads = False`` or
    the config entry ``session.use_per_session_threads`` = "0")."""
    _global_threads["intra"] = max(int(intra_op_num_threads), 0)
    _global_threads["inter"] = max(int(inter_op_num_threads), 0)


def session_threads(options: Any) -> int:
    """The intra-op thread count a session runs with (its own, or the global pool's)."""
    per_session = options._config.get("session.use_per_session_threads")
    shared = per_session == "0" or (
        per_session is None and not getattr(options, "use_per_session_threads", True)
    )
    if shared:
        return _global_threads["intra"]
    return int(options.intra_op_num_threads or 0)


def set_seed(seed: int) -> None:
    """Seed the random operators (RandomNormal, RandomUniform, Bernoulli, Multinomial without a ``seed``
    attribute) of sessions created from now on."""
    _seed[0] = int(seed)


def seeded_generator() -> Any:
    """A session's random generator after :func:`set_seed` (None before: fresh entropy per draw). numpy's
    ``default_rng`` returns a Generator it is given unchanged, so the random kernels draw from this one
    stream: different values per node and per run, the same sequence in every process."""
    if _seed[0] is None:
        return None
    import numpy as np

    return np.random.default_rng(_seed[0])


# -- loading -------------------------------------------------------------------------------------------


def load_for_session(source: Any, options: Any) -> Any:
    """Load a model as a session does: initializers given through SessionOptions (add_initializer,
    add_external_initializers, external data files held in memory) replace what the file would give."""
    from onyx.ir.tensor import Tensor
    from onyx.model_io import load

    if getattr(options, "_load_cancelled", False):
        from onyx.errors import ModelLoadCanceled

        raise ModelLoadCanceled(
            "model loading was cancelled: SessionOptions.set_load_cancellation_flag(True)"
        )
    extra = getattr(options, "_initializers", None) or {}
    files = getattr(options, "_external_files", None) or {}
    if not extra and not files:
        return load(source)
    model = load(source, load_external_data=False)
    for name, value in model.graph.initializers.items():
        t = value.const
        if name in extra:
            new = Tensor.from_numpy(extra[name], name)
            if tuple(t.shape) != tuple(new.shape) or t.dtype != new.dtype:
                raise InvalidArgument(
                    f"initializer {name!r}: the model has {t.dtype.name} {list(t.shape)}, the value given is "
                    f"{new.dtype.name} {list(new.shape)}"
                )
            value.const = new
        elif t is not None and t.external is not None and t.external.location in files:
            buf = files[t.external.location]
            ext = t.external
            length = ext.length if ext.length is not None else len(buf) - ext.offset
            if ext.offset + length > len(buf):
                raise InvalidArgument(
                    f"initializer {name!r}: external data {ext.location!r} offset {ext.offset} + length "
                    f"{length} is past the end of the {len(buf)} bytes given in memory"
                )
            t.raw = buf[ext.offset : ext.offset + length]
            t.external = None
            t.data_location = 0
    unknown = sorted(set(extra) - set(model.graph.initializers))
    if unknown:
        raise InvalidArgument(
            f"add_initializer/add_external_initializers: {unknown} are not initializers of the model"
        )
    return model


def options_from_model(model: Any, options: Any) -> Any:
    """ORT_LOAD_CONFIG_FROM_MODEL=1: the session options the model's ``ort_config`` metadata names
    (JSON ``{"session_options": {"intra_op_num_threads": 2, ...}}``) over a copy of ``options``."""
    if os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") != "1":
        return options
    text = dict(model.metadata_props).get("ort_config")
    if not text:
        return options
    try:
        conf = json.loads(text)
    except ValueError as e:
        raise InvalidArgument(f"the model's ort_config metadata is not JSON: {e}") from None
    settings = conf.get("session_options", {}) if isinstance(conf, dict) else None
    if not isinstance(settings, dict):
        raise InvalidArgument("the model's ort_config must be a JSON object with a 'session_options' object")
    from onyx.runtime.options import ExecutionMode, GraphOptimizationLevel

    out = copy.copy(options)
    out._config = dict(options._config)
    kinds = {
        "intra_op_num_threads": int,
        "inter_op_num_threads": int,
        "execution_mode": ExecutionMode,
        "graph_optimization_level": GraphOptimizationLevel,
        "enable_profiling": lambda v: bool(int(v)),
        "enable_mem_pattern": lambda v: bool(int(v)),
        "enable_cpu_mem_arena": lambda v: bool(int(v)),
        "use_deterministic_compute": lambda v: bool(int(v)),
        "log_severity_level": int,
        "log_verbosity_level": int,
        "optimized_model_filepath": str,
        "profile_file_prefix": str,
        "session_logid": str,
    }
    for key, value in settings.items():
        conv = kinds.get(key)
        if conv is None:
            raise InvalidArgument(f"ort_config: unknown session option {key!r}; known: {sorted(kinds)}")
        try:
            setattr(out, "logid" if key == "session_logid" else key, conv(value))
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"ort_config: session option {key!r} = {value!r}: {e}") from None
    return out


# -- the session API -----------------------------------------------------------------------------------


class OrtEpAssignedNode:
    __slots__ = ("name", "op_type", "domain")

    def __init__(self, name: str, op_type: str, domain: str):
        self.name, self.op_type, self.domain = name, op_type, domain


class OrtEpAssignedSubgraph:
    def __init__(self, ep_name: str, nodes: list[OrtEpAssignedNode]):
        self.ep_name = ep_name
        self._nodes = nodes

    def get_nodes(self) -> list[OrtEpAssignedNode]:
        return list(self._nodes)


class SessionExtras:
    """onnxruntime's InferenceSession methods beyond ``run`` and introspection."""

    _enable_fallback = True

    # -- OrtValues ----------------------------------------------------------------------------------
    def run_with_ort_values(
        self,
        output_names: Sequence[str] | None,
        input_dict_ort_values: dict[str, Any],
        run_options: Any = None,
    ) -> list[OrtValue]:
        """``run`` with OrtValues in and out (tensors, sequences, maps, sparse tensors)."""
        feeds = {k: unwrap(v) for k, v in input_dict_ort_values.items()}
        return self._ort_values(output_names, self.run(output_names, feeds, run_options))

    def _ort_values(self, output_names: Sequence[str] | None, results: list) -> list[OrtValue]:
        """Results as OrtValues carrying the types the session reports for its outputs."""
        declared = {a.name: a.type for a in self.get_outputs()}
        names = list(output_names) if output_names else list(declared)
        return [OrtValue(r, type_name=_declared(declared.get(n), r)) for n, r in zip(names, results)]

    def run_with_ortvaluevector(
        self,
        run_options: Any,
        feed_names: Sequence[str],
        feeds: Sequence[OrtValue],
        fetch_names: Sequence[str],
        fetches: list,
        fetch_devices: Sequence[Any] | None = None,
    ) -> None:
        """The lowest-overhead form: feeds and fetches as vectors; ``fetches`` receives the outputs."""
        if len(feed_names) != len(feeds):
            raise InvalidArgument(f"{len(feed_names)} feed names for {len(feeds)} feeds")
        for d in fetch_devices or ():
            check_cpu(d)
        results = self.run(list(fetch_names), {n: unwrap(v) for n, v in zip(feed_names, feeds)}, run_options)
        del fetches[:]
        fetches.extend(self._ort_values(fetch_names, results))

    def create_ortvalue_from_shape_and_type(
        self,
        shape: Sequence[int],
        element_type: Any,
        device_type: str = "cpu",
        device_id: int = 0,
        vendor_id: int = -1,
    ) -> OrtValue:
        return OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type, device_id, vendor_id)

    # -- IOBinding ----------------------------------------------------------------------------------
    def io_binding(self) -> Any:
        from onyx.runtime.iobinding import IOBinding

        return IOBinding(self)

    def run_with_iobinding(self, iobinding: Any, run_options: Any = None) -> None:
        """Run with the inputs and outputs bound in ``iobinding`` (made by this session's io_binding())."""
        if getattr(iobinding, "_session", None) is not self:
            raise InvalidArgument("IOBinding must be used with the session that created it.")
        iobinding._run(run_options)

    # -- asynchronous runs --------------------------------------------------------------------------
    def run_async(
        self,
        output_names: Sequence[str] | None,
        input_feed: dict[str, Any],
        callback: Callable[[list, Any, str], None],
        user_data: Any,
        run_options: Any = None,
    ) -> None:
        """Run on a worker thread; then ``callback(results, user_data, err)`` is called on that thread,
        with ``err`` "" on success, or ``results`` [] and ``err`` the error's message."""
        if not callable(callback):
            raise InvalidArgument("callback must be callable: callback(results, user_data, err)")
        feed = dict(input_feed)

        def work() -> None:
            try:
                results = self.run(output_names, feed, run_options)
            except Exception as e:  # noqa: BLE001 - the error goes to the callback, as onnxruntime's
                callback([], user_data, str(e) or type(e).__name__)
                return
            callback(results, user_data, "")

        threading.Thread(target=work, name="onyx-run-async", daemon=True).start()

    # -- introspection ------------------------------------------------------------------------------
    def get_input_memory_infos(self) -> list[Any]:
        return [CPU_MEMORY_INFO for _ in self.get_inputs()]

    def get_output_memory_infos(self) -> list[Any]:
        return [CPU_MEMORY_INFO for _ in self.get_outputs()]

    def get_provider_graph_assignment_info(self) -> list[OrtEpAssignedSubgraph]:
        """Which provider runs which node: every node runs on onyx's CPU provider. As in onnxruntime, the
        session config entry ``session.record_ep_graph_assignment_info`` must be "1"."""
        from onyx.errors import Fail

        if self._options._config.get("session.record_ep_graph_assignment_info") != "1":
            raise Fail(
                "Session configuration entry 'session.record_ep_graph_assignment_info' must be set to \"1\" "
                "to retrieve EP graph assignment information."
            )
        nodes = [OrtEpAssignedNode(n.name or "", n.op_type, n.domain or "") for n in self.model.graph.nodes]
        return [OrtEpAssignedSubgraph(self.get_providers()[0], nodes)]

    def get_tuning_results(self) -> list:
        """Kernel tuning results (onnxruntime's GPU tunable ops): onyx tunes nothing."""
        return []

    def set_tuning_results(self, results: list, *, error_on_invalid: bool = False) -> None:
        """Accepted and ignored: onyx has no tunable kernels."""

    def release_captured_graph(self, graph_annotation_id: int = 0) -> None:
        """Nothing to release: onyx captures no device graphs."""

    def set_ep_dynamic_options(self, options: dict[str, str]) -> None:
        raise InvalidArgument(
            f"set_ep_dynamic_options({sorted(options)}): onyx's CPU provider has no dynamic options"
        )

    def disable_fallback(self) -> None:
        self._enable_fallback = False

    def enable_fallback(self) -> None:
        self._enable_fallback = True

    # -- what libraries read on onnxruntime's InferenceSession -------------------------------------
    @property
    def _sess_options(self) -> Any:
        return self._options

    @property
    def _model_bytes(self) -> bytes | None:
        src = self._source
        return src if isinstance(src, bytes) else None

    @property
    def _inputs_meta(self) -> list:
        return self.get_inputs()

    @property
    def _outputs_meta(self) -> list:
        return self.get_outputs()

    @property
    def _overridable_initializers(self) -> list:
        return self.get_overridable_initializers()

    @property
    def _model_meta(self) -> Any:
        return self.get_modelmeta()

    @property
    def _read_config_from_model(self) -> bool:
        return os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1"

    @property
    def _sess(self) -> CSession:
        return CSession(self)


def _declared(type_name: str | None, value: Any) -> str | None:
    """A declared output type worth keeping: a sequence's or map's (its elements cannot tell float from
    double); a tensor's own dtype says it exactly."""
    if type_name and type_name.startswith(("seq(", "map(")) and isinstance(value, list | dict):
        return type_name
    return None


class CSession:
    """What onnxruntime's ``InferenceSession._sess`` (the C session) offers, with its argument orders,
    for libraries that call it directly."""

    def __init__(self, session: Any):
        self._session = session

    def run(self, output_names: Sequence[str], input_feed: dict[str, Any], run_options: Any = None) -> list:
        return self._session.run(output_names, input_feed, run_options)

    def run_with_ort_values(
        self, input_dict: dict[str, Any], output_names: Sequence[str], run_options: Any = None
    ):
        return OrtValueVector(self._session.run_with_ort_values(output_names, input_dict, run_options))

    def run_with_iobinding(self, iobinding: Any, run_options: Any = None) -> None:
        iobinding._run(run_options)

    def end_profiling(self) -> str:
        return self._session.end_profiling()

    @property
    def get_profiling_start_time_ns(self) -> int:  # a property on onnxruntime's C session
        return self._session.get_profiling_start_time_ns()

    def __getattr__(self, name: str) -> Any:
        # get_inputs, get_outputs, get_modelmeta, get_providers, get_session_options...
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._session, name)


def dense_feed(value: Any) -> Any:
    """A feed as session.run converts it: an OrtValue's contents, a SparseTensor made dense."""
    from onyx.runtime.sparse import SparseTensor

    value = unwrap(value)
    if isinstance(value, SparseTensor):
        return value.to_dense()
    return value


__all__ = [
    "SessionExtras",
    "set_global_thread_pool_sizes",
    "set_seed",
    "load_for_session",
    "options_from_model",
    "OnyxError",
]
