"""SessionOptions, RunOptions and the enums onnxruntime users set on them."""

from __future__ import annotations

import enum


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

    def register_custom_ops_library(self, path: str) -> None:
        from onyx.errors import NotImplemented as OnyxNotImplemented

        raise OnyxNotImplemented(
            "native custom-op libraries cannot load into onyx; register Python kernels with onyx.custom_op"
        )

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class RunOptions:
    """Per-run options, with onnxruntime's field names. Setting ``terminate`` stops runs, also in flight."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        from onyx.errors import Fail  # a RuntimeError, as onnxruntime raises

        if key not in self._config:
            raise Fail(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]
