"""onyx's kernels: every compiled loop, behind typed functions that operators call.

An operator calls e.g. ``kernels.max_pool2d(x, out, ...)`` and never sees pointers, threads, BLAS
or a compiler. Each function has a numpy path, complete and the reference the compiled path is
tested against (tests/kernels), and a C path (``onyx/kernels/_*.c``, built with OpenMP when onyx is
installed) used when it was built and ``ONYX_NO_PERF`` is not set.
"""

from __future__ import annotations

import glob
import importlib.machinery
import os

from onyx import config
from onyx.kernels._loader import built


def compiled_modules() -> list[str]:
    """The compiled kernel modules installed with onyx (``_conv``, ``_norm``, ...), importable or not."""
    found = set()
    for folder in __path__:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            found.update(
                os.path.basename(p)[: -len(suffix)] for p in glob.glob(os.path.join(folder, "_*" + suffix))
            )
    return sorted(found)


def describe() -> list[str]:
    """What runs the kernels and products in this process, one line each (``onyx info``)."""
    from onyx.kernels import blas_threads, mkl, parallel

    names = compiled_modules()
    working = [n for n in names if built(n)]
    if config.switches().no_perf:
        kernels = "numpy (ONYX_NO_PERF is set)"
    elif working:
        kernels = f"compiled C with OpenMP ({', '.join(n.lstrip('_') for n in working)})"
    else:
        kernels = "numpy: no compiled kernels (installed without a C compiler, or with ONYX_NO_COMPILE=1)"
    blas = "MKL" if mkl.expected() else "numpy's OpenBLAS" if blas_threads.openblas_libraries() else "numpy's"
    from onyx.kernels import int8

    int8_gemm = "numpy (float64 BLAS, exact)"
    if int8.available():
        int8_gemm = "AVX-512 VNNI" if int8.vnni() else "compiled C loop"
    return [
        f"kernels: {kernels}",
        f"BLAS: {blas}",
        f"8-bit integer GEMM: {int8_gemm}",
        f"threads: {parallel.default_threads()} by default (intra_op_num_threads)",
    ]
