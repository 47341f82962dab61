"""The names of onnxruntime's compiled module (``onnxruntime.capi.onnxruntime_pybind11_state``), served
by onyx: exception classes users catch (``except C.InvalidArgument``), the session classes and the
process-wide functions."""

from onyx.errors import (
    DeviceReset,
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoadCanceled,
    ModelLoaded,
    ModelRequiresCompilation,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    RuntimeException,
)
from onyx.runtime.environment import (
    copy_tensors,
    disable_telemetry_events,
    enable_telemetry_events,
    get_build_info,
    get_ep_devices,
    has_collective_ops,
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
from onyx.runtime.iobinding import SessionIOBinding
from onyx.runtime.options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
)
from onyx.runtime.ortvalue import (
    ArenaExtendStrategy,
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDevice,
    OrtDeviceMemoryType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    OrtValue,
    OrtValueVector,
    create_and_register_allocator,
    create_and_register_allocator_v2,
)
from onyx.runtime.providers import get_all_providers, get_available_providers
from onyx.runtime.session import InferenceSession, ModelMetadata, NodeArg
from onyx.runtime.session_api import (
    OrtEpAssignedNode,
    OrtEpAssignedSubgraph,
    set_global_thread_pool_sizes,
    set_seed,
)
from onyx.runtime.sparse import (
    OrtSparseFormat,
    SparseBlockSparseView,
    SparseCooView,
    SparseCsrView,
    SparseTensor,
)

kNextPowerOfTwo = ArenaExtendStrategy.kNextPowerOfTwo  # noqa: N816 - onnxruntime's names
kSameAsRequested = ArenaExtendStrategy.kSameAsRequested  # noqa: N816


def get_device() -> str:
    return "CPU"


def get_version_string() -> str:
    from onyx import __version__

    return __version__


def get_default_session_options() -> SessionOptions:
    return SessionOptions()


__all__ = [
    "DeviceReset",
    "EngineError",
    "EPFail",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoadCanceled",
    "ModelLoaded",
    "ModelRequiresCompilation",
    "NoModel",
    "NoSuchFile",
    "NotFound",
    "NotImplemented",
    "RuntimeException",
    "ArenaExtendStrategy",
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OrtAllocatorType",
    "OrtArenaCfg",
    "OrtDevice",
    "OrtDeviceMemoryType",
    "OrtEpAssignedNode",
    "OrtEpAssignedSubgraph",
    "OrtMemType",
    "OrtMemoryInfo",
    "OrtMemoryInfoDeviceType",
    "OrtSparseFormat",
    "OrtValue",
    "OrtValueVector",
    "RunOptions",
    "SessionIOBinding",
    "SessionOptions",
    "SparseBlockSparseView",
    "SparseCooView",
    "SparseCsrView",
    "SparseTensor",
    "copy_tensors",
    "create_and_register_allocator",
    "create_and_register_allocator_v2",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_default_session_options",
    "get_device",
    "get_ep_devices",
    "get_version_string",
    "has_collective_ops",
    "kNextPowerOfTwo",
    "kSameAsRequested",
    "set_default_logger_callback",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_global_thread_pool_sizes",
    "set_seed",
]
