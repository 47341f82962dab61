"""onyx: ONNX models read, checked, optimized and run in Python on numpy.

``import onyx as ort`` gives onnxruntime's API (InferenceSession, SessionOptions, ...), plus onyx's own
pipeline: :func:`load` -> :func:`check` -> :func:`infer_shapes` -> :func:`optimize` -> session.
"""

from onyx import errors
from onyx.checker import check
from onyx.errors import (
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    OnyxError,
    RuntimeException,
)
from onyx.ir.model import Attr, AttrType, Function, Graph, Model, Node, Value
from onyx.ir.tensor import Tensor
from onyx.model_io import load, load_from_string, load_tensor, save, save_tensor, serialize
from onyx.ops.registry import custom_op
from onyx.optimizer import optimize
from onyx.runtime.environment import (
    OrtDeviceVendorId,
    copy_tensors,
    disable_telemetry_events,
    enable_telemetry_events,
    get_build_info,
    get_ep_devices,
    has_collective_ops,
    preload_dlls,
    print_debug_info,
    register_execution_provider_library,
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
    unregister_execution_provider_library,
)
from onyx.runtime.iobinding import IOBinding, SessionIOBinding
from onyx.runtime.options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
)
from onyx.runtime.ortvalue import (
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDevice,
    OrtDeviceMemoryType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    OrtValue,
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
from onyx.runtime.sparse import OrtSparseFormat, SparseTensor  # onnxruntime's (the IR's: onyx.ir.tensor)
from onyx.shape_inference import infer_shapes

__version__ = "0.1.0"
version = __version__  # onnxruntime.version
package_name = "onyx"  # onnxruntime.package_name
cuda_version = ""  # onnxruntime's CPU build says "" too


def get_device() -> str:
    """onnxruntime's get_device(): onyx runs on the CPU."""
    return "CPU"


def get_version_string() -> str:
    return __version__


def install_as_onnxruntime(force: bool = False) -> bool:
    """Serve ``import onnxruntime`` (and its submodules) from onyx in this process, unless a real
    onnxruntime is installed (``force=True`` replaces it). Returns whether onyx was installed."""
    from onyx.shim import install_as_onnxruntime as install

    return install(force=force)


from onyx import capi  # noqa: E402 - onnxruntime.capi's names; needs the classes above

__all__ = [
    "errors",
    "check",
    "load",
    "load_from_string",
    "load_tensor",
    "save",
    "save_tensor",
    "serialize",
    "optimize",
    "infer_shapes",
    "custom_op",
    "InferenceSession",
    "SessionOptions",
    "RunOptions",
    "GraphOptimizationLevel",
    "ExecutionMode",
    "ExecutionOrder",
    "NodeArg",
    "ModelMetadata",
    "get_available_providers",
    "get_all_providers",
    "get_device",
    "Model",
    "Graph",
    "Node",
    "Value",
    "Attr",
    "AttrType",
    "Function",
    "Tensor",
    "SparseTensor",
    "OnyxError",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "NoSuchFile",
    "NoModel",
    "ModelLoaded",
    "RuntimeException",
    "EPFail",
    "OrtValue",
    "OrtDevice",
    "OrtMemoryInfo",
    "OrtArenaCfg",
    "OrtAllocatorType",
    "OrtMemType",
    "OrtDeviceMemoryType",
    "OrtMemoryInfoDeviceType",
    "OrtSparseFormat",
    "IOBinding",
    "SessionIOBinding",
    "create_and_register_allocator",
    "create_and_register_allocator_v2",
    "copy_tensors",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_build_info",
    "get_ep_devices",
    "get_version_string",
    "has_collective_ops",
    "set_default_logger_callback",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_global_thread_pool_sizes",
    "set_seed",
    "install_as_onnxruntime",
    "capi",
    "OrtDeviceVendorId",
    "OrtEpAssignedNode",
    "OrtEpAssignedSubgraph",
    "preload_dlls",
    "print_debug_info",
    "register_execution_provider_library",
    "unregister_execution_provider_library",
    "version",
    "package_name",
    "cuda_version",
]
