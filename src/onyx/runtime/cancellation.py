"""Stopping a run in flight: RunOptions.terminate set from another thread, or a deadline.

onnxruntime stops every run made with a RunOptions once its ``terminate`` is set, between nodes, and
raises Fail("Exiting due to terminate flag being set to true."). It has no timeout among its run config
entries (onnxruntime_run_options_config_keys.h); onyx reads its own entry :data:`TIMEOUT_KEY`
(milliseconds, a float) and stops the run the same way once that much time has passed since it began.

A run made with a RunOptions gets one :class:`RunStop`, checked before every node (plan.py), before
every call of a subgraph (each Loop or Scan iteration) and, for kernels long enough to matter, between
blocks of their work (through :meth:`onyx.ops.registry.KernelContext.stop`). There is no timer thread:
the deadline is compared with ``time.monotonic()`` where the flag is read. Runs without a RunOptions
never see any of this (the plan's fast loop).

Also here: onnxruntime's run config entry ``memory.enable_memory_arena_shrinkage`` (:func:`shrinks_arena`),
which gives the session arena's cached blocks back at the end of the run.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from onyx.errors import Fail, InvalidArgument

#: onyx's run config entry: stop the run after this many milliseconds (``add_run_config_entry``)
TIMEOUT_KEY = "run.timeout_ms"

#: onnxruntime's message when a run stops on its terminate flag
TERMINATE_MESSAGE = "Exiting due to terminate flag being set to true."


class Terminated(Fail):
    """A run stopped because its RunOptions.terminate was set or its ``run.timeout_ms`` ran out."""


class RunStop:
    """What a run checks to know whether it must stop: the caller's RunOptions (its ``terminate``
    may be set at any time, from any thread) and this run's own deadline (None: no timeout)."""

    __slots__ = ("options", "deadline", "timeout_ms")

    def __init__(self, options: Any, timeout_ms: float | None = None):
        self.options = options
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms is not None else None

    def check(self, where: str | Any = "") -> None:
        """Raise :class:`Terminated` when the run must stop. ``where`` names what was about to run (a
        string, or anything with ``describe()``, such as a node), for the message."""
        if self.options.terminate:
            raise Terminated(f"{TERMINATE_MESSAGE} (RunOptions.terminate: the run stopped{_at(where)})")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise Terminated(
                f"{TERMINATE_MESSAGE} (the run's {TIMEOUT_KEY}={self.timeout_ms:g} ran out: the run stopped"
                f"{_at(where)})"
            )


class PerThreadStop(threading.local):
    """The stop of the run each thread is in (a KernelContext holds one: a session's runs share it)."""

    stop: RunStop | None = None


def _at(where: Any) -> str:
    if not where:
        return ""
    text = where.describe() if hasattr(where, "describe") else str(where)
    return f" before {text}"


def timeout_ms(run_options: Any) -> float | None:
    """The run's :data:`TIMEOUT_KEY` in milliseconds, None when absent or 0 (no timeout)."""
    config = getattr(run_options, "_config", None)
    raw = config.get(TIMEOUT_KEY) if config else None
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise InvalidArgument(
            f"RunOptions {TIMEOUT_KEY}={raw!r}: expected a number of milliseconds"
        ) from None
    if not value >= 0:  # negative or NaN
        raise InvalidArgument(f"RunOptions {TIMEOUT_KEY}={raw!r}: expected a number of milliseconds >= 0")
    return value or None


def for_run(run_options: Any) -> RunStop | None:
    """The stop a run made with ``run_options`` checks (None without RunOptions: nothing to check).
    Raises :class:`Terminated` at once when ``terminate`` is already set, as onnxruntime does."""
    if run_options is None:
        return None
    stop = RunStop(run_options, timeout_ms(run_options))
    stop.check()
    return stop


#: onnxruntime's run config entry naming the devices whose arenas shrink at the end of the run
#: ("cpu:0", or several separated by ';'): onyx's one arena per session gives its cached blocks back
SHRINK_ARENA_KEY = "memory.enable_memory_arena_shrinkage"


def shrinks_arena(run_options: Any) -> bool:
    """Whether ``run_options`` asks for the CPU arena to shrink after the run (onnxruntime's entry)."""
    config = getattr(run_options, "_config", None)
    value = config.get(SHRINK_ARENA_KEY) if config else None
    return bool(value) and any(part.strip().lower().startswith("cpu") for part in value.split(";"))
