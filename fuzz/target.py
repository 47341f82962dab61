"""The atheris (libFuzzer) target: ``python -m fuzz.target CORPUS_DIR [libFuzzer flags]``.

Half the mutations are libFuzzer's own byte-level ones, half structure-aware (fuzz/mutate.py). Any
exception that is not an ``onyx.OnyxError`` escapes and libFuzzer saves the input as a crash; hangs
and memory blow-ups are caught by libFuzzer's ``-timeout`` and ``-rss_limit_mb``.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import warnings

import atheris

#: onyx's packages outside the pipeline (tools, servers, converters): not imported, not instrumented
SKIPPED = (
    "onyx.cli",
    "onyx.serve",
    "onyx.ray",
    "onyx.debug",
    "onyx.quantization",
    "onyx.datasets",
    "onyx.version_converter",
    "onyx.capi",
    "onyx.backend",
    "onyx.shim",
    "onyx.compose",
)


def _import_pipeline_modules() -> None:
    """Import every module of the pipeline now: operators and passes are imported lazily, on first
    use, and only modules imported inside ``instrument_imports`` report coverage to libFuzzer."""
    import onyx

    for info in pkgutil.walk_packages(onyx.__path__, "onyx."):
        if info.name.startswith(SKIPPED) or info.name.rsplit(".", 1)[-1].startswith("__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional module (a missing extra) is just not covered
            pass


with atheris.instrument_imports(include=["onyx"]):
    _import_pipeline_modules()
    from fuzz.mutate import mutate_bytes
    from fuzz.pipeline import exercise


def test_one_input(data: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's RuntimeWarnings on NaN are not findings
        exercise(data)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    if seed % 2:
        mutated = mutate_bytes(data, seed)
        if mutated is not None and len(mutated) <= max_size:
            return mutated
    return atheris.Mutate(data, max_size)


def main(argv: list[str]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    atheris.Setup(argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
