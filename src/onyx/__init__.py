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
from onyx.ir.tensor import SparseTensor, Tensor
from onyx.model_io import load, load_from_string, load_tensor, save, save_tensor, serialize
from onyx.ops.registry import custom_op
from onyx.optimizer import optimize
from onyx.runtime.options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
)
from onyx.runtime.providers import get_all_providers, get_available_providers
from onyx.runtime.session import InferenceSession, ModelMetadata, NodeArg
from onyx.shape_inference import infer_shapes

__version__ = "0.1.0"


def get_device() -> str:
    """onnxruntime's get_device(): onyx runs on the CPU."""
    return "CPU"


def get_version_string() -> str:
    return __version__


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
]
