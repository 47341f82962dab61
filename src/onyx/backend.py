"""onyx as an ONNX backend (``onnx.backend.base.Backend``), so that onnx's BackendTest runner runs onyx.

    import onnx.backend.test, onyx.backend
    tests = onnx.backend.test.BackendTest(onyx.backend, __name__)

The ``onnx`` package is imported lazily: onyx itself never needs it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.runtime.options import GraphOptimizationLevel, SessionOptions
from onyx.runtime.session import InferenceSession

# SessionOptions fields the backend API may set through prepare(**kwargs), as onnxruntime's backend allows
ALLOWED_SESSION_OPTIONS = frozenset(
    {
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "enable_mem_reuse",
        "execution_mode",
        "execution_order",
        "graph_optimization_level",
        "inter_op_num_threads",
        "intra_op_num_threads",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "use_deterministic_compute",
        "use_per_session_threads",
    }
)


def _model_source(model: Any) -> Any:
    """A path, bytes, or anything with SerializeToString() (an onnx ModelProto), or an onyx Model."""
    if isinstance(model, str | os.PathLike):
        return os.fspath(model)
    if isinstance(model, bytes | bytearray | memoryview):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    from onyx.ir.model import Model

    if isinstance(model, Model):
        return model
    raise InvalidArgument(
        f"cannot prepare a {type(model).__name__}: give a path, bytes, an onnx ModelProto or an onyx Model"
    )


class BackendRep:
    """A prepared model: ``run(inputs)`` takes a list (in input order) or a dict of arrays."""

    def __init__(self, session: InferenceSession):
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        return tuple(self.session.run(None, feeds))


class Backend:
    """The onnx backend API over onyx sessions."""

    @classmethod
    def is_compatible(cls, model: Any, device: str | None = None, **kwargs: Any) -> bool:
        return cls.supports_device("CPU" if device is None else device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper() == "CPU"

    @classmethod
    def prepare(cls, model: Any, device: str | None = None, **kwargs: Any) -> BackendRep:
        """A prepared model from a path, bytes, an onnx ModelProto, an onyx Model, a session or a
        prepared model; ``kwargs`` set SessionOptions fields (those of ALLOWED_SESSION_OPTIONS)."""
        if device is not None and not cls.supports_device(device):
            raise InvalidArgument(f"Incompatible device expected '{device}', got 'CPU': onyx runs on the CPU")
        if isinstance(model, BackendRep):
            return model
        if isinstance(model, InferenceSession):
            return BackendRep(model)
        opts = SessionOptions()
        for key, value in kwargs.items():
            if key in ALLOWED_SESSION_OPTIONS:
                if key == "graph_optimization_level":
                    value = GraphOptimizationLevel(value)
                setattr(opts, key, value)
            elif hasattr(opts, key):
                raise InvalidArgument(
                    f"SessionOptions attribute '{key}' is not permitted via the backend API. "
                    f"Allowed attributes: {', '.join(sorted(ALLOWED_SESSION_OPTIONS))}"
                )
        return BackendRep(InferenceSession(_model_source(model), opts))

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str | None = None, **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU", outputs_info: Any = None, **kwargs: Any):
        """Run a single onnx NodeProto by wrapping it in a model."""
        from onnx import helper

        opset = kwargs.get("opset_version")
        in_vi = []
        feeds = []
        for name, value in zip(node.input, inputs):
            arr = np.asarray(value)
            if not name:
                continue
            in_vi.append(
                helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)
            )
            feeds.append(arr)
        out_vi = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = helper.make_graph([node], "run_node", in_vi, out_vi)
        opsets = [helper.make_opsetid(node.domain or "", opset or 21)]
        model = helper.make_model(graph, opset_imports=opsets)
        return cls.run_model(model, feeds, device)


# module-level functions, as onnx's runner calls them on the backend module
is_compatible = Backend.is_compatible
prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
run = run_model  # onnxruntime.backend.run
supports_device = Backend.supports_device
backend_rep = BackendRep  # onnxruntime.backend's OnnxRuntimeBackendRep
OnnxRuntimeBackendRep = BackendRep
