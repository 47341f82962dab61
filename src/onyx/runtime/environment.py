"""onnxruntime's process-wide functions: logging levels, telemetry switches, build information.

onnxruntime keeps these in its environment object; onyx maps logging onto Python's ``logging`` (the
``onyx`` logger) and has no telemetry to switch.
"""

from __future__ import annotations

import enum
import logging
import platform
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onyx.errors import InvalidArgument

# onnxruntime's severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}
_state: dict[str, Any] = {"severity": 2, "verbosity": 0, "telemetry": False, "callback": None}
logger = logging.getLogger("onyx")


def set_default_logger_severity(severity: int) -> None:
    """The minimum severity logged (0 verbose ... 4 fatal): the level of the ``onyx`` logger."""
    severity = int(severity)
    if severity not in _LEVELS:
        raise InvalidArgument(f"log severity must be 0 (verbose) to 4 (fatal), got {severity}")
    _state["severity"] = severity
    logger.setLevel(_LEVELS[severity])


def set_default_logger_verbosity(verbosity: int) -> None:
    """The verbosity of VERBOSE messages (stored; onyx writes none at higher verbosity)."""
    _state["verbosity"] = int(verbosity)


def get_default_logger_severity() -> int:
    return _state["severity"]


def set_default_logger_callback(callback: Callable[[int, str, str, str, str], None] | None) -> None:
    """onnxruntime calls ``callback(severity, category, logid, code_location, message)`` per message;
    onyx forwards the records of its ``onyx`` logger to it (None removes it)."""
    old = _state["callback"]
    if old is not None:
        logger.removeHandler(old)
        _state["callback"] = None
    if callback is None:
        return
    if not callable(callback):
        raise InvalidArgument("the logger callback must be callable")
    back = {v: k for k, v in _LEVELS.items()}

    class _Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            where = f"{record.pathname}:{record.lineno}"
            callback(back.get(record.levelno, 2), record.name, "", where, record.getMessage())

    handler = _Forward()
    logger.addHandler(handler)
    _state["callback"] = handler


def enable_telemetry_events() -> None:
    """onyx sends no telemetry; the switch is recorded."""
    _state["telemetry"] = True


def disable_telemetry_events() -> None:
    _state["telemetry"] = False


def get_build_info() -> str:
    from onyx import __version__

    return (
        f"onyx Build Info: version={__version__}, python={platform.python_version()}, "
        f"numpy={np.__version__}, build type=Release, providers=CPUExecutionProvider"
    )


def has_collective_ops() -> bool:
    """Collective (multi-device) operators: not in onyx."""
    return False


def get_ep_devices() -> list:
    """onnxruntime lists its plugin execution-provider devices; onyx has none to list."""
    return []


class OrtDeviceVendorId(enum.IntEnum):
    """PCI vendor ids onnxruntime names devices by (onyx's CPU is vendor NONE)."""

    NONE = 0
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


def print_debug_info() -> None:
    """What helps a bug report: versions and the provider."""
    print(get_build_info())


def preload_dlls(*args: Any, **kwargs: Any) -> None:
    """onnxruntime preloads CUDA and cuDNN libraries here; onyx loads no native GPU library."""


def register_execution_provider_library(registration_name: str, path: str) -> None:
    """onnxruntime loads a plugin provider (a native library) here; onyx cannot."""
    from onyx.errors import NotImplemented as OnyxNotImplemented

    raise OnyxNotImplemented(
        f"register_execution_provider_library({registration_name!r}, {str(path)!r}): a plugin execution "
        "provider is a native library built against onnxruntime's C API, which onyx cannot load; onyx "
        "providers register in Python (onyx.runtime.providers.register_provider)"
    )


def unregister_execution_provider_library(registration_name: str) -> None:
    raise InvalidArgument(f"no execution provider library is registered as {registration_name!r}")


def copy_tensors(src: Sequence[Any], dst: Sequence[Any], stream: Any = None) -> None:
    """Copy each source OrtValue's tensor into the matching destination (same type and size)."""
    if len(src) != len(dst):
        raise InvalidArgument(f"copy_tensors: {len(src)} sources for {len(dst)} destinations")
    for s, d in zip(src, dst):
        d.update_inplace(s)


__all__ = [
    "set_default_logger_severity",
    "set_default_logger_verbosity",
    "set_default_logger_callback",
    "enable_telemetry_events",
    "disable_telemetry_events",
    "get_build_info",
    "has_collective_ops",
    "get_ep_devices",
    "copy_tensors",
    "OrtDeviceVendorId",
    "print_debug_info",
    "preload_dlls",
    "register_execution_provider_library",
    "unregister_execution_provider_library",
]
