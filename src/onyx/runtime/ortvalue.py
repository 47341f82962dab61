"""OrtValue, OrtDevice, OrtMemoryInfo and the allocator settings of onnxruntime's Python API, on numpy.

An OrtValue holds what a session takes or gives: a numpy array (a tensor), a list (a sequence), a dict (a
map), a :class:`~onyx.runtime.sparse.SparseTensor`, or nothing (an empty optional). A CPU tensor made from
a numpy array shares that array's memory, as onnxruntime's does; everything lives in host memory, so the
only device is ``cpu``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from onyx.errors import EPFail, Fail, InvalidArgument
from onyx.ir.dtypes import DataType, from_numpy, to_numpy

# -- devices and memory ------------------------------------------------------------------------------

_DEVICE_TYPES = {"cpu": 0, "gpu": 1, "cuda": 1, "dml": 1, "fpga": 2, "npu": 3, "cann": 3, "webgpu": 1}


def _device_error(device_type: str) -> EPFail:
    return EPFail(f"device {device_type!r} is not available: onyx runs on the CPU only (device_type='cpu')")


def check_cpu(device_type: Any) -> None:
    """Raise unless ``device_type`` names the CPU (a name, an OrtDevice or a device type code)."""
    if isinstance(device_type, OrtDevice):
        if device_type.device_type() != OrtDevice.cpu():
            raise _device_error(device_type.name)
        return
    name = str(device_type).lower()
    if name not in _DEVICE_TYPES:
        raise InvalidArgument(f"Unsupported device type: {device_type}")
    if name != "cpu":
        raise _device_error(name)


class OrtDevice:
    """A device: a type code (0 = CPU), a memory type, a vendor id and an index."""

    _NAMES = {0: "cpu", 1: "gpu", 2: "fpga", 3: "npu"}

    def __init__(self, device_type: int = 0, mem_type: int = 0, device_id: int = 0, vendor_id: int = 0):
        self._type = int(device_type)
        self._mem = int(mem_type)
        self._id = int(device_id)
        self._vendor = int(vendor_id)

    @staticmethod
    def make(ort_device_name: str, device_id: int = 0, vendor_id: int = -1) -> OrtDevice:
        name = str(ort_device_name).lower()
        if name not in _DEVICE_TYPES:
            raise InvalidArgument(f"Unsupported device type: {ort_device_name}")
        return OrtDevice(_DEVICE_TYPES[name], 0, int(device_id), max(int(vendor_id), 0))

    # the type codes, as onnxruntime's C.OrtDevice exposes them
    @staticmethod
    def cpu() -> int:
        return 0

    @staticmethod
    def gpu() -> int:
        return 1

    cuda = gpu

    @staticmethod
    def fpga() -> int:
        return 2

    @staticmethod
    def npu() -> int:
        return 3

    @staticmethod
    def default_memory() -> int:
        return 0

    def device_type(self) -> int:
        return self._type

    def device_id(self) -> int:
        return self._id

    def device_mem_type(self) -> int:
        return self._mem

    mem_type = device_mem_type

    def device_vendor_id(self) -> int:
        return self._vendor

    vendor_id = device_vendor_id

    @property
    def name(self) -> str:
        return self._NAMES.get(self._type, str(self._type))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrtDevice) and (self._type, self._mem, self._id, self._vendor) == (
            other._type,
            other._mem,
            other._id,
            other._vendor,
        )

    def __hash__(self) -> int:
        return hash((self._type, self._mem, self._id, self._vendor))

    def __repr__(self) -> str:
        return f"OrtDevice({self.name}, id={self._id})"


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class ArenaExtendStrategy(enum.IntEnum):
    kNextPowerOfTwo = 0  # noqa: N815 - onnxruntime's names
    kSameAsRequested = 1  # noqa: N815


class OrtMemoryInfo:
    """Where a value lives: a name ("Cpu"), an allocator type, a device id and a memory type."""

    def __init__(
        self,
        name: str = "Cpu",
        allocator_type: OrtAllocatorType = OrtAllocatorType.ORT_ARENA_ALLOCATOR,
        device_id: int = 0,
        mem_type: OrtMemType = OrtMemType.DEFAULT,
    ):
        self.name = str(name)
        self.allocator_type = OrtAllocatorType(allocator_type)
        self.device_id = int(device_id)
        self.mem_type = OrtMemType(mem_type)
        self.device_mem_type = OrtDeviceMemoryType.DEFAULT
        self.device_vendor_id = 0

    @staticmethod
    def create_v2(
        name: str,
        device_type: int,
        vendor_id: int,
        device_id: int,
        mem_type: int,
        alignment: int = 0,
        allocator_type: OrtAllocatorType = OrtAllocatorType.ORT_DEVICE_ALLOCATOR,
    ) -> OrtMemoryInfo:
        info = OrtMemoryInfo(name, allocator_type, device_id, OrtMemType.DEFAULT)
        info.device_mem_type = OrtDeviceMemoryType(mem_type)
        info.device_vendor_id = int(vendor_id)
        return info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrtMemoryInfo) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (
            f"OrtMemoryInfo(name={self.name!r}, id={self.device_id}, mem_type={self.mem_type.name}, "
            f"allocator_type={self.allocator_type.name})"
        )


CPU_MEMORY_INFO = OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, OrtMemType.DEFAULT)


class OrtArenaCfg:
    """An arena's settings: ``OrtArenaCfg(max_mem, arena_extend_strategy, initial_chunk_size_bytes,
    max_dead_bytes_per_chunk)`` or ``OrtArenaCfg({"max_mem": ..., ...})``. onyx stores them; its session
    arena sizes itself (see onyx.kernels.arena)."""

    _KEYS = (
        "max_mem",
        "arena_extend_strategy",
        "initial_chunk_size_bytes",
        "max_dead_bytes_per_chunk",
        "initial_growth_chunk_size_bytes",
        "max_power_of_two_extend_bytes",
    )

    def __init__(self, *args: Any):
        values = dict.fromkeys(self._KEYS, -1)
        values["max_mem"] = 0
        if len(args) == 1 and isinstance(args[0], dict):
            for k, v in args[0].items():
                if k not in values:
                    raise InvalidArgument(f"OrtArenaCfg: unknown key {k!r}; the keys are {list(self._KEYS)}")
                values[k] = int(v)
        elif len(args) == 4:
            values.update(zip(self._KEYS[:4], (int(a) for a in args)))
        elif args:
            raise InvalidArgument("OrtArenaCfg takes four integers or one dict of settings")
        for k, v in values.items():
            setattr(self, k, v)


_registered_allocators: list[tuple[OrtMemoryInfo, OrtArenaCfg | None]] = []


def create_and_register_allocator(mem_info: OrtMemoryInfo, arena_cfg: OrtArenaCfg | None = None) -> None:
    """Register a shared CPU allocator for the process (onnxruntime's environment allocator). onyx's
    sessions keep their own arenas; the registration is recorded so that code which sets it up runs."""
    if not isinstance(mem_info, OrtMemoryInfo):
        raise InvalidArgument(f"mem_info must be an OrtMemoryInfo, got {type(mem_info).__name__}")
    if mem_info.name.lower() != "cpu":
        raise _device_error(mem_info.name)
    _registered_allocators.append((mem_info, arena_cfg))


def create_and_register_allocator_v2(
    provider_type: str, mem_info: OrtMemoryInfo, provider_options: dict, arena_cfg: OrtArenaCfg | None = None
) -> None:
    """As :func:`create_and_register_allocator`, naming the provider that owns the allocator."""
    from onyx.runtime.providers import get_available_providers

    if provider_type not in get_available_providers():
        raise InvalidArgument(f"Unknown Provider Type: {provider_type}")
    create_and_register_allocator(mem_info, arena_cfg)


# -- values ------------------------------------------------------------------------------------------


def numpy_dtype_of(element_type: Any) -> np.dtype:
    """A numpy dtype from a numpy type or an ONNX element type code (TensorProto.FLOAT = 1...)."""
    if isinstance(element_type, int | np.integer) and not isinstance(element_type, bool):
        return to_numpy(int(element_type))
    try:
        return np.dtype(element_type)
    except TypeError:
        raise InvalidArgument(f"unknown element type {element_type!r}") from None


def type_string(value: Any) -> str:
    """onnxruntime's type string of a value: tensor(float), seq(tensor(int64)), map(string,tensor(float))."""
    from onyx.runtime.sparse import SparseTensor

    if isinstance(value, np.ndarray | np.generic):
        return f"tensor({from_numpy(value.dtype).onnx_name})"
    if isinstance(value, SparseTensor):
        return value.data_type()
    if isinstance(value, list | tuple):
        return f"seq({type_string(value[0]) if value else 'tensor(undefined)'})"
    if isinstance(value, dict):
        if not value:
            return "map(undefined,undefined)"
        k, v = next(iter(value.items()))
        key = "string" if isinstance(k, str) else "int64"
        return f"map({key},{type_string(np.asarray(v))})"
    return "undefined"


class OrtValue:
    """One value a session takes or gives (tensor, sequence, map, sparse tensor or empty optional)."""

    __slots__ = ("_value", "_numpy_obj", "_type", "__weakref__")

    def __init__(self, value: Any, numpy_obj: Any = None, type_name: str | None = None):
        if isinstance(value, OrtValue):
            value = value._value
        self._value = value
        # keeps the array whose memory this value uses alive, as onnxruntime's wrapper does
        self._numpy_obj = numpy_obj
        # the type a session declares for its output (a map's values do not say float from double)
        self._type = type_name

    # -- factories ----------------------------------------------------------------------------------
    @classmethod
    def ortvalue_from_numpy(
        cls, numpy_obj: np.ndarray, /, device_type: str = "cpu", device_id: int = 0, vendor_id: int = -1
    ) -> OrtValue:
        """A tensor over ``numpy_obj``'s memory (no copy when it is C-contiguous, as in onnxruntime)."""
        check_cpu(device_type)
        if not isinstance(numpy_obj, np.ndarray):
            raise InvalidArgument(
                f"ortvalue_from_numpy expects a numpy.ndarray, got {type(numpy_obj).__name__}"
            )
        arr = numpy_obj
        if arr.dtype.kind in "US":
            arr = arr.astype(object)  # onyx's string tensors hold Python str (onnxruntime refuses strings)
        else:
            from_numpy(arr.dtype)  # an element type ONNX has, or InvalidArgument
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
        return cls(arr, numpy_obj)

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data: np.ndarray, /, onnx_element_type: int) -> OrtValue:
        """A tensor of ``onnx_element_type`` over ``data``'s bytes, for types numpy lacks (bfloat16 held
        as uint16...); the element sizes must agree."""
        if not isinstance(data, np.ndarray):
            raise InvalidArgument(f"expects a numpy.ndarray, got {type(data).__name__}")
        target = to_numpy(onnx_element_type)
        if target.itemsize != data.dtype.itemsize or target == np.dtype(object):
            raise InvalidArgument(
                f"Items size in the incoming array: {data.dtype.itemsize} specified by onnxtype: "
                f"{target.itemsize} ({DataType(onnx_element_type).name} cannot reinterpret {data.dtype})"
            )
        arr = (data if data.flags.c_contiguous else data.copy(order="C")).view(target)
        return cls(arr, data)

    @classmethod
    def ortvalue_from_shape_and_type(
        cls,
        shape: Sequence[int],
        element_type: Any,
        device_type: str = "cpu",
        device_id: int = 0,
        vendor_id: int = -1,
        memory_info: OrtMemoryInfo | None = None,
    ) -> OrtValue:
        """A new tensor of ``shape`` (contents unspecified, as onnxruntime's allocation)."""
        if memory_info is not None:
            check_cpu(memory_info.name)
        else:
            check_cpu(device_type)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise InvalidArgument(f"shape {dims} has a negative dimension")
        dt = numpy_dtype_of(element_type)
        return cls(np.zeros(dims, dtype=dt) if dt == np.dtype(object) else np.empty(dims, dtype=dt))

    @classmethod
    def ort_value_from_sparse_tensor(cls, sparse_tensor: Any) -> OrtValue:
        from onyx.runtime.sparse import SparseTensor

        if not isinstance(sparse_tensor, SparseTensor):
            raise InvalidArgument(f"expects a SparseTensor, got {type(sparse_tensor).__name__}")
        return cls(sparse_tensor)

    @classmethod
    def from_dlpack(cls, data: Any, /) -> OrtValue:
        """A tensor sharing memory with a DLPack producer (numpy, torch on CPU...)."""
        source = (
            data if hasattr(data, "__dlpack__") else _Capsule(data)
        )  # a raw capsule, as onnxruntime takes
        try:
            arr = np.from_dlpack(source)
        except (TypeError, RuntimeError, BufferError, ValueError, AttributeError) as e:
            raise InvalidArgument(
                f"from_dlpack: {type(data).__name__} gives no CPU DLPack tensor: {e}"
            ) from None
        return cls(arr, data)

    # -- what it holds ------------------------------------------------------------------------------
    def _tensor(self, what: str) -> np.ndarray:
        v = self._value
        if isinstance(v, np.generic):
            self._value = v = np.asarray(v)
        if not isinstance(v, np.ndarray):
            raise Fail(
                f"{what}: this OrtValue holds {type_string(v)}, not a tensor. Only OrtValues that are "
                f"Tensors are convertible to Numpy objects"
            )
        return v

    def numpy(self) -> np.ndarray:
        """The tensor as a numpy array sharing this value's memory."""
        return self._tensor("numpy()")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.numpy()
        if copy:
            return np.array(arr, dtype=dtype, copy=True)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        return self.numpy().__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    def data_ptr(self) -> int:
        arr = self.numpy()
        if arr.dtype == np.dtype(object):
            raise Fail("data_ptr: a string tensor has no flat data buffer")
        return arr.__array_interface__["data"][0]

    def device_name(self) -> str:
        return "cpu"

    def shape(self) -> list[int]:
        return list(self._tensor("shape()").shape)

    def data_type(self) -> str:
        return self._type or type_string(self._value)

    def element_type(self) -> int:
        return int(from_numpy(self._tensor("element_type()").dtype))

    def tensor_size_in_bytes(self) -> int:
        arr = self._tensor("tensor_size_in_bytes()")
        if arr.dtype == np.dtype(object):
            raise Fail("tensor_size_in_bytes: a string tensor has no fixed byte size")
        return int(arr.nbytes)

    def has_value(self) -> bool:
        return self._value is not None

    def is_tensor(self) -> bool:
        return isinstance(self._value, np.ndarray | np.generic)

    def is_sparse_tensor(self) -> bool:
        from onyx.runtime.sparse import SparseTensor

        return isinstance(self._value, SparseTensor)

    def is_tensor_sequence(self) -> bool:
        """A sequence of tensors (a sequence of maps is not, as in onnxruntime)."""
        return isinstance(self._value, list | tuple) and self.data_type().startswith("seq(tensor(")

    def as_sparse_tensor(self) -> Any:
        if not self.is_sparse_tensor():
            raise Fail(
                f"This OrtValue does not contain SparseTensor (it holds {self.data_type()}). "
                f"Check data_type() value."
            )
        return self._value

    def update_inplace(self, data: Any) -> None:
        """Copy ``data`` (same element type and count) into this tensor's memory, which stays in place."""
        dst = self._tensor("update_inplace()")
        src = data.numpy() if isinstance(data, OrtValue) else data
        if not isinstance(src, np.ndarray):
            raise InvalidArgument("data must be a numpy.ndarray or an OrtValue.")
        if src.size != dst.size:
            raise InvalidArgument(
                f"The input size of numpy arrays does not match the size of the OrtValue: {src.size} "
                f"elements given, the OrtValue holds {dst.size} ({list(dst.shape)})"
            )
        if src.dtype != dst.dtype and not (dst.dtype == np.dtype(object) and src.dtype.kind in "OUS"):
            raise InvalidArgument(
                f"update_inplace: the data is {src.dtype}, the OrtValue holds {self.data_type()}"
            )
        dst.reshape(-1)[...] = src.reshape(-1)

    def _get_c_value(self) -> OrtValue:
        return self

    def __repr__(self) -> str:
        if self.is_tensor():
            return f"OrtValue({self.data_type()}, shape={self.shape()})"
        return f"OrtValue({self.data_type()})"


class _Capsule:
    """A raw DLPack capsule (a CPU tensor) presented as a producer numpy can read."""

    def __init__(self, capsule: Any):
        if type(capsule).__name__ != "PyCapsule":
            raise InvalidArgument(
                "from_dlpack expects an object with __dlpack__ or a DLPack capsule, "
                f"got {type(capsule).__name__}"
            )
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class OrtValueVector(list):
    """A list of OrtValues (onnxruntime's C.OrtValueVector): ``push_back``, indexing, ``len``."""

    def push_back(self, value: OrtValue) -> None:
        self.append(value if isinstance(value, OrtValue) else OrtValue(value))

    def reserve(self, n: int) -> None:  # nothing to reserve in a Python list
        pass

    def numpy(self) -> list[np.ndarray]:
        return [v.numpy() for v in self]

    def bool_tensor_indices(self) -> list[int]:
        return [i for i, v in enumerate(self) if v.is_tensor() and v.numpy().dtype == np.bool_]


def unwrap(value: Any) -> Any:
    """The plain value a kernel takes: an OrtValue's contents, else the value itself."""
    return value._value if isinstance(value, OrtValue) else value


__all__ = [
    "OrtValue",
    "OrtValueVector",
    "OrtDevice",
    "OrtMemoryInfo",
    "OrtArenaCfg",
    "OrtAllocatorType",
    "OrtMemType",
    "OrtDeviceMemoryType",
    "OrtMemoryInfoDeviceType",
    "ArenaExtendStrategy",
    "create_and_register_allocator",
    "create_and_register_allocator_v2",
]
