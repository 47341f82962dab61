"""How many threads a compiled kernel may use.

Compiled kernels run their loops with OpenMP (gcc's libgomp). Where MKL runs the products it runs on
the same libgomp threads (onyx selects MKL's GNU threading layer, :mod:`onyx.kernels.mkl`), so a
kernel right after a GEMM finds those threads awake and uses them all. With numpy's OpenBLAS, whose
own workers spin after a product, a kernel uses more than one thread only while BLAS runs on one: a
second thread would share a core with a spinning BLAS worker.
"""

from __future__ import annotations

from onyx.kernels import mkl
from onyx.kernels.blas_threads import single_threaded
from onyx.kernels.parallel import default_threads


def resolve(threads: int) -> int:
    """The threads a compiled kernel runs on for a session's ``intra_op_num_threads`` (0: default)."""
    n = threads if threads > 0 else default_threads()
    if n == 1:
        return 1
    if (mkl.loaded() is not None and mkl.threading_layer() == "gnu") or single_threaded():
        return n
    return 1
