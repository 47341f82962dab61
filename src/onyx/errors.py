"""One exception tree for onyx.

Names mirror onnxruntime's status codes so that code catching by name keeps working:
InvalidArgument, NoSuchFile, NoModel, InvalidProtobuf, InvalidGraph, ModelLoaded, NotImplemented,
RuntimeException, EPFail and Fail all derive from :class:`OnyxError`.
"""

from __future__ import annotations


class OnyxError(Exception):
    """Base class of every error onyx raises on purpose."""


class Fail(OnyxError, RuntimeError):
    """A generic failure, for example a kernel that failed while running a node."""


class InvalidArgument(OnyxError, ValueError):
    """A bad argument: an unknown input name, a wrong element type, rank or dimension."""


class NoSuchFile(OnyxError, FileNotFoundError):
    """A model or data file that does not exist."""


class NoModel(OnyxError):
    """An operation that needs a model was called without one."""


class InvalidProtobuf(OnyxError, ValueError):
    """Bytes that are not a well-formed ONNX protobuf message."""

    def __init__(self, message: str, offset: int | None = None):
        self.offset = offset
        if offset is not None:
            message = f"{message} (at byte offset {offset})"
        super().__init__(message)


class InvalidGraph(OnyxError, ValueError):
    """A model that parses but breaks the ONNX IR rules."""


class ModelLoaded(OnyxError):
    """An operation that is not allowed once a model is loaded."""


class NotImplemented(OnyxError, NotImplementedError):  # noqa: A001 - mirrors onnxruntime's name
    """An operator, version, type or feature onyx does not implement."""


class RuntimeException(OnyxError, RuntimeError):
    """An unexpected state inside the runtime."""


class EPFail(OnyxError, RuntimeError):
    """An execution provider failed."""


class EngineError(OnyxError, RuntimeError):
    """The engine could not do what was asked (onnxruntime's ENGINE_ERROR)."""


class NotFound(OnyxError, LookupError):
    """Something looked up by name is not there (onnxruntime's NOT_FOUND)."""


class ModelLoadCanceled(OnyxError):
    """Loading a model was cancelled (onnxruntime's MODEL_LOAD_CANCELED)."""


class ModelRequiresCompilation(OnyxError):
    """A model that must be compiled for a provider first (onnxruntime's MODEL_REQUIRES_COMPILATION)."""


class DeviceReset(OnyxError, RuntimeError):
    """A device was reset (onnxruntime's DEVICE_RESET); onyx's CPU never is."""


__all__ = [
    "OnyxError",
    "Fail",
    "InvalidArgument",
    "NoSuchFile",
    "NoModel",
    "InvalidProtobuf",
    "InvalidGraph",
    "ModelLoaded",
    "NotImplemented",
    "RuntimeException",
    "EPFail",
    "EngineError",
    "NotFound",
    "ModelLoadCanceled",
    "ModelRequiresCompilation",
    "DeviceReset",
]
