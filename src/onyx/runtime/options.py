"""SessionOptions, RunOptions and the enums onnxruntime users set on them."""

from __future__ import annotations

import enum
from typing import Any


class GraphOptimizationLevel(enum.IntEnum):
    """How much the session optimizes the graph (onnxruntime's values)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class SessionOptions:
    """Options for :class:`~onyx.InferenceSession`, with onnxruntime's field names."""

    def __init__(self) -> None:
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.optimized_model_filepath = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onyx_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config: dict[str, str] = {}
        self._free_dims_by_name: dict[str, int] = {}
        self._free_dims_by_denotation: dict[str, int] = {}
        self._initializers: dict = {}  # name -> array: add_initializer, add_external_initializers
        self._external_files: dict = {}  # external data file name -> bytes held in memory

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        from onyx.errors import Fail  # a RuntimeError, as onnxruntime raises

        if key not in self._config:
            raise Fail(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_free_dimension_override_by_name(self, name: str, value: int) -> None:
        self._free_dims_by_name[name] = int(value)

    def add_free_dimension_override_by_denotation(self, denotation: str, value: int) -> None:
        self._free_dims_by_denotation[denotation] = int(value)

    def add_initializer(self, name: str, ortvalue: Any) -> None:
        """Use ``ortvalue`` (an OrtValue or array) for the model's initializer ``name`` (same type and shape);
        the session uses its memory, which must stay alive, as in onnxruntime."""
        from onyx.runtime.ortvalue import OrtValue

        if not isinstance(ortvalue, OrtValue) or not ortvalue.is_tensor():
            from onyx.errors import InvalidArgument

            raise InvalidArgument(f"add_initializer({name!r}): expects an OrtValue holding a tensor")
        self._initializers[str(name)] = ortvalue.numpy()

    def add_external_initializers(self, names: list[str], ortvalues: list[Any]) -> None:
        """Initializers the model keeps in external data, given in memory instead (name by name)."""
        if len(names) != len(ortvalues):
            from onyx.errors import InvalidArgument

            raise InvalidArgument(f"{len(names)} names for {len(ortvalues)} values")
        for name, value in zip(names, ortvalues):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(
        self, names: list[str], buffers: list[Any], lengths: list[int]
    ) -> None:
        """External data files given in memory: ``names`` are the file names the model's tensors refer to
        (their ``location``), ``buffers`` their bytes (bytes, bytearray, memoryview or a numpy array)."""
        from onyx.errors import InvalidArgument

        if not len(names) == len(buffers) == len(lengths):
            raise InvalidArgument("names, buffers and lengths must have the same length")
        for name, buf, n in zip(names, buffers, lengths):
            view = memoryview(buf).cast("B")
            if int(n) > len(view):
                raise InvalidArgument(f"external file {name!r}: length {n} is past its {len(view)} bytes")
            self._external_files[str(name)] = view[: int(n)]

    def add_provider(self, provider_name: str, provider_options: dict[str, str] | None = None) -> None:
        """Name a provider for sessions made with these options (only onyx's CPU provider exists)."""
        from onyx.runtime.providers import get_available_providers

        if provider_name not in get_available_providers():
            from onyx.errors import InvalidArgument

            raise InvalidArgument(
                f"Unknown Provider Type: {provider_name}. Available providers: {get_available_providers()}"
            )
        added = getattr(self, "_providers_added", [])
        self._providers_added = [*added, (provider_name, dict(provider_options or {}))]

    def has_providers(self) -> bool:
        return bool(getattr(self, "_providers_added", []))

    def set_load_cancellation_flag(self, value: bool) -> None:
        """While set, creating a session with these options raises ModelLoadCanceled."""
        self._load_cancelled = bool(value)

    def register_custom_ops_library(self, path: str) -> None:
        """onnxruntime loads a native library of C++ kernels here; onyx cannot."""
        from onyx.errors import NotImplemented as OnyxNotImplemented

        raise OnyxNotImplemented(
            f"register_custom_ops_library({str(path)!r}): a native custom-op library holds C++ kernels built "
            "against onnxruntime's C API, which onyx (Python on numpy) has no way to load. Register the "
            "operator's kernel in Python instead: @onyx.custom_op(\"OpType\", domain=\"your.domain\")"
        )

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class RunOptions:
    """Per-run options, with onnxruntime's field names. Setting ``terminate`` stops runs, also in flight
    (from any thread); onyx's run config entry ``run.timeout_ms`` stops a run after that many milliseconds
    (onnxruntime has none): both raise Fail, see onyx.runtime.cancellation."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    def add_active_adapter(self, adapter: Any) -> None:
        """onnxruntime activates a LoRA adapter (a native LoraAdapter) for the run; onyx has none."""
        from onyx.errors import NotImplemented as OnyxNotImplemented

        raise OnyxNotImplemented("LoRA adapters (onnxruntime.LoraAdapter) are not supported by onyx")

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        from onyx.errors import Fail  # a RuntimeError, as onnxruntime raises

        if key not in self._config:
            raise Fail(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]
