"""IOBinding of onnxruntime's Python API: inputs and outputs bound once, runs that reuse them.

Everything lives in host memory. A bound input is used as it is (no copy). An output bound to a
pre-allocated buffer (a raw pointer, or an OrtValue) receives the run's result in that very memory; an
output bound without a buffer gets a fresh OrtValue each run.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from onyx.errors import InvalidArgument
from onyx.runtime.ortvalue import OrtValue, OrtValueVector, check_cpu, numpy_dtype_of, type_string

if TYPE_CHECKING:
    from onyx.runtime.session import InferenceSession


def array_at(buffer_ptr: int, element_type: Any, shape: Sequence[int]) -> np.ndarray:
    """A numpy array over memory the caller owns at ``buffer_ptr`` (ctypes' from_address, no copy)."""
    dt = numpy_dtype_of(element_type)
    if dt == np.dtype(object):
        raise InvalidArgument("a string tensor cannot be bound by pointer: bind an OrtValue or a numpy array")
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"shape {dims} has a negative dimension")
    ptr = int(buffer_ptr)
    nbytes = math.prod(dims) * dt.itemsize
    if ptr == 0 and nbytes:
        raise InvalidArgument("buffer_ptr is null")
    if nbytes == 0:
        return np.empty(dims, dtype=dt)
    raw = (ctypes.c_char * nbytes).from_address(ptr)
    return np.frombuffer(raw, dtype=dt).reshape(dims)


class IOBinding:
    """Inputs and outputs bound to a session: ``session.run_with_iobinding(binding)`` runs them."""

    def __init__(self, session: InferenceSession):
        self._session = session
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, OrtValue | None] = {}  # name -> pre-allocated value, or None
        self._results: OrtValueVector = OrtValueVector()

    # -- inputs -------------------------------------------------------------------------------------
    def _input_name(self, name: str) -> str:
        if name not in self._session._input_index:
            raise InvalidArgument(
                f"Failed to find NodeArg with name: {name} in the def list: the model's inputs are "
                f"{[a.name for a in self._session.get_inputs()]}"
            )
        return name

    def bind_cpu_input(self, name: str, arr_on_cpu: Any) -> None:
        """Bind an input to a host array (used in place, not copied)."""
        self._inputs[self._input_name(name)] = arr_on_cpu

    def bind_input(
        self,
        name: str,
        device_type: Any,
        device_id: int,
        element_type: Any,
        shape: Sequence[int],
        buffer_ptr: int,
    ) -> None:
        """Bind an input to memory at ``buffer_ptr`` holding ``shape`` elements of ``element_type``."""
        check_cpu(device_type)
        self._inputs[self._input_name(name)] = array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"input {name!r}: expects an OrtValue, got {type(ortvalue).__name__}")
        self._inputs[self._input_name(name)] = ortvalue

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: host memory is written synchronously."""

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    # -- outputs ------------------------------------------------------------------------------------
    def _output_name(self, name: str) -> str:
        if name not in self._session._output_index:
            raise InvalidArgument(
                f"Failed to find NodeArg with name: {name} in the def list: the model's outputs are "
                f"{[a.name for a in self._session.get_outputs()]}"
            )
        return name

    def bind_output(
        self,
        name: str,
        device_type: Any = "cpu",
        device_id: int = 0,
        element_type: Any = None,
        shape: Sequence[int] | None = None,
        buffer_ptr: int | None = None,
    ) -> None:
        """Bind an output: with ``buffer_ptr`` (and its element type and shape) the run writes there;
        without it, each run gives a new value."""
        check_cpu(device_type)
        self._output_name(name)
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise InvalidArgument(
                "`element_type` and `shape` are to be provided if pre-allocated memory is provided"
            )
        self._outputs[name] = OrtValue(array_at(buffer_ptr, element_type, shape))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Bind an output to an OrtValue: a tensor's memory receives the result of each run."""
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"output {name!r}: expects an OrtValue, got {type(ortvalue).__name__}")
        self._outputs[self._output_name(name)] = ortvalue if ortvalue.is_tensor() else None

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: runs finish before returning."""

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = OrtValueVector()

    # -- results ------------------------------------------------------------------------------------
    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run, in the order they were bound."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self) -> OrtValueVector:
        return self._results

    def copy_outputs_to_cpu(self) -> list[Any]:
        """The outputs of the last run as numpy arrays (copies: later runs may overwrite bound memory)."""
        out = []
        for v in self._results:
            x = v._value
            out.append(x.copy() if isinstance(x, np.ndarray) else x)
        return out

    # -- the run (called by InferenceSession.run_with_iobinding) ------------------------------------
    def _run(self, run_options: Any = None) -> None:
        if not self._outputs:
            raise InvalidArgument("At least one output should be requested: bind an output first")
        names = list(self._outputs)
        results = self._session.run(names, dict(self._inputs), run_options)
        fresh = self._session._ort_values(names, results)
        values = OrtValueVector()
        for name, res, value in zip(names, results, fresh):
            target = self._outputs[name]
            if target is None:
                values.append(value)
                continue
            write_into(target, res, name)
            values.append(target)
        self._results = values


def write_into(target: OrtValue, result: Any, name: str) -> None:
    """Copy a run's result into a pre-allocated output, whose shape and type must match."""
    dst = target._value
    if not isinstance(result, np.ndarray):
        raise InvalidArgument(
            f"output {name!r} is {type_string(result)}: it cannot be written into a pre-allocated tensor"
        )
    if dst.shape != result.shape:
        raise InvalidArgument(
            f"The output OrtValue provided for output '{name}' has shape {list(dst.shape)} but the computed "
            f"output shape for this run is {list(result.shape)}. Bind the output without a buffer, or "
            f"pre-allocate the shape this run computes"
        )
    if dst.dtype != result.dtype:
        raise InvalidArgument(
            f"output {name!r}: the pre-allocated buffer is {type_string(dst)}, the model gives "
            f"{type_string(result)}"
        )
    if dst is not result:
        np.copyto(dst, result)


SessionIOBinding = IOBinding

__all__ = ["IOBinding", "SessionIOBinding", "array_at"]
