"""Debugging tools: every intermediate value of a model by name, value-by-value comparison of two models
or two runtimes (``onyx compare``), and the modules behind the other inspection commands."""

from __future__ import annotations

# the function ``compare`` is bound after its module ``onyx.debug.compare`` is imported, so the package
# attribute is the function (the module stays reachable as sys.modules["onyx.debug.compare"])
from onyx.debug.compare import CompareResult, Divergence, ValueReport, compare
from onyx.debug.intermediates import run_all

__all__ = ["run_all", "compare", "CompareResult", "Divergence", "ValueReport"]
