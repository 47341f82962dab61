"""Intel oneMKL as onyx's GEMM library, where the ``perf`` extra installed it (the ``mkl`` wheel, x86-64).

numpy's OpenBLAS packs both operands on every call and reaches 190-210 GFLOP/s on a transformer's
128 x 768 @ 768 x 3072 products on two AVX-512 cores, where MKL's ``cblas_sgemm`` reaches 260-285
(bench/README.md, stop 15). When MKL is found, the GEMMs of onyx's kernels go to it (see
:func:`onyx.kernels.blas.matmul`).

One threading runtime: MKL is loaded with its GNU OpenMP layer (``libmkl_gnu_thread``, chosen with the
documented ``MKL_Set_Threading_Layer``), the same libgomp that onyx's compiled kernels are built with,
so a kernel right after a product runs on the threads the product used, and no second team spins
beside them. Where libgomp cannot be found MKL keeps its default (Intel OpenMP). Thread counts are
scoped to a run (:mod:`onyx.kernels.blas_threads`).

Loaded once, on first use. ``ONYX_BLAS=openblas`` (or ``ONYX_NO_PERF=1``) set before that keeps numpy's
BLAS for everything.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import platform
import sys
from functools import cache

from onyx import config


def _candidates() -> list[str]:
    """Paths of the MKL runtime library (``libmkl_rt``): where the ``mkl`` wheel puts its libraries
    under this environment's prefix (a directory listing), else from the distribution's file list
    (``importlib.metadata``: ~30 ms, so only as the fallback)."""
    found = []
    for folder in (os.path.join(sys.prefix, "lib"), os.path.join(sys.prefix, "Library", "bin")):
        for pattern in ("libmkl_rt.so*", "mkl_rt*.dll"):
            found += glob.glob(os.path.join(folder, pattern))
    if not found:
        found = _listed_candidates()
    return sorted({os.path.realpath(p) for p in found if os.path.exists(p)})


def _listed_candidates() -> list[str]:
    """``libmkl_rt`` as the ``mkl`` distribution's file list names it (an unusual install layout)."""
    try:
        from importlib import metadata
    except ImportError:
        return []
    try:
        files = metadata.distribution("mkl").files or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for f in files:
        name = f.name.lower()
        if name.startswith("libmkl_rt.so") or (name.startswith("mkl_rt") and name.endswith(".dll")):
            out.append(str(f.locate()))
    return out


def _declare(lib: ctypes.CDLL) -> None:
    """Argument types of the functions used (LP64 interface: 32-bit integers)."""
    i, p = ctypes.c_int, ctypes.c_void_p
    for name, scalar in (("cblas_sgemm", ctypes.c_float), ("cblas_dgemm", ctypes.c_double)):
        fn = getattr(lib, name)
        fn.argtypes = [i] * 6 + [scalar, p, i, p, i, scalar, p, i]
        fn.restype = None
        batch = getattr(lib, name + "_batch_strided")
        batch.argtypes = [i] * 6 + [scalar, p, i, i, p, i, i, scalar, p, i, i, i]
        batch.restype = None
    lib.MKL_Set_Num_Threads_Local.argtypes = [i]
    lib.MKL_Set_Num_Threads_Local.restype = i
    lib.MKL_Get_Max_Threads.argtypes = []
    lib.MKL_Get_Max_Threads.restype = i
    lib.MKL_Set_Threading_Layer.argtypes = [i]
    lib.MKL_Set_Threading_Layer.restype = i


def _loaded_libraries() -> list[str]:
    """Paths of the shared libraries mapped into this process (Linux; empty elsewhere)."""
    try:
        with open("/proc/self/maps") as fh:
            return sorted({line.split()[-1] for line in fh if "/" in line})
    except OSError:
        return []


def foreign_runtime(mkl_dir: str, loaded: list[str]) -> str | None:
    """A loaded MKL or Intel OpenMP runtime from another directory than ``mkl_dir`` (numpy built on
    MKL, a conda environment's own copy): a second copy would abort the process (Intel OpenMP's "OMP:
    Error #15"), so onyx then keeps numpy's BLAS. Returns that library's path, or None."""
    for path in loaded:
        name = os.path.basename(path).lower()
        if name.startswith(("libiomp5", "libmkl_", "mkl_")) and os.path.dirname(path) != mkl_dir:
            return path
    return None


@cache
def _chosen() -> tuple[str, ...]:
    """The MKL runtimes onyx would load, in order; empty: not installed, not x86-64, switched off
    (ONYX_BLAS=openblas), numpy not on OpenBLAS, or another copy of MKL or Intel OpenMP already loaded (see
    foreign_runtime). Decided without loading anything."""
    switches = config.switches()
    if switches.blas == "openblas" or switches.no_perf:
        return ()
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    from onyx.kernels.blas_threads import openblas_libraries

    if not openblas_libraries():
        return ()  # numpy on another BLAS (perhaps MKL itself): leave it in charge
    loaded = _loaded_libraries()
    paths = _candidates()
    if any(foreign_runtime(os.path.dirname(path), loaded) is not None for path in paths):
        return ()
    return tuple(paths)


def expected() -> bool:
    """Whether onyx's GEMMs will run on MKL, without loading it (a session's creation asks this)."""
    return bool(_chosen())


#: MKL_Set_Threading_Layer's value for the GNU OpenMP layer (mkl_service.h: MKL_THREADING_GNU)
_THREADING_GNU = 3


@cache
def library() -> ctypes.CDLL | None:
    """The loaded MKL runtime (loaded on the first call), or None (see _chosen)."""
    for path in _chosen():
        try:
            lib = ctypes.CDLL(path)
            _declare(lib)
        except (OSError, AttributeError):
            continue
        if _libgomp_present():  # before any other MKL call, as MKL requires
            lib.MKL_Set_Threading_Layer(_THREADING_GNU)
        _loaded[0] = lib
        return lib
    return None


#: the library once loaded (read on every run: cheaper than asking the cache)
_loaded: list[ctypes.CDLL | None] = [None]


def active() -> bool:
    """Whether onyx's GEMMs run on MKL."""
    return library() is not None


def loaded() -> ctypes.CDLL | None:
    """MKL's runtime if a product has loaded it already, else None (this never loads it)."""
    return _loaded[0]


def threading_layer() -> str | None:
    """The OpenMP runtime MKL's threads come from ("gnu" or "intel"); None when MKL is not loaded."""
    if _loaded[0] is None:
        return None
    return "gnu" if _libgomp_present() else "intel"


@cache
def _libgomp_present() -> bool:
    return bool(ctypes.util.find_library("gomp"))


def gemm_function(dtype_char: str):
    """MKL's ``cblas_?gemm`` ("s" or "d"), or None when MKL is not onyx's BLAS."""
    lib = library()
    return None if lib is None else getattr(lib, f"cblas_{dtype_char}gemm")


def gemm_batch_function(dtype_char: str):
    """MKL's ``cblas_?gemm_batch_strided``, or None when MKL is not onyx's BLAS."""
    lib = library()
    return None if lib is None else getattr(lib, f"cblas_{dtype_char}gemm_batch_strided")
