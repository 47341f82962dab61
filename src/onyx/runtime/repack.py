"""Weights repacked once, when a session is created, into the layout their kernels read fastest.

The B operands of GEMMs (MatMul, Gemm, FusedGemm, Attention weights) are stored transposed: the plan
holds ``np.ascontiguousarray(w.T).T``, the same matrix, F-contiguous. onyx.kernels.products.product
then runs ``y^T = w^T @ x^T`` where OpenBLAS is faster in that orientation (few rows: a transformer at
batch 1), and ``x @ w`` reading the transposed copy in place everywhere else (as fast as before).
The original is released: the plan and the model's tensor hold the copy instead (the same values,
so saving the model writes the same bytes), and the model file's pages under the original are given
back to the kernel at once, so that the copy does not add to peak memory.

onnxruntime prepacks GEMM weights at session creation too, and its session config entry
``session.disable_prepacking`` = "1" turns that off; onyx honours the same key.
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Graph
from onyx.ir.tensor import Tensor, _release_pages, prefaulted_empty
from onyx.kernels import blas
from onyx.ops.registry import normalize_domain
from onyx.runtime.plan import Plan

DISABLE_KEY = "session.disable_prepacking"

#: (domain, op type) -> (input index of the B operand, attribute that must be 0 for it to be (K, N))
_GEMM_B = {
    ("", "MatMul"): (1, None),
    ("", "Gemm"): (1, "transB"),
    ("com.microsoft", "FusedGemm"): (1, "transB"),
    ("com.microsoft", "Attention"): (1, None),
}
#: smallest side of a weight worth repacking (smaller ones gain nothing measurable)
MIN_SIDE = 256


#: rows of a weight transposed per block: a whole-matrix transpose strides through memory and runs
#: 3-5x slower on BERT-sized weights (768 x 3072: 20 ms against 4.5)
_BLOCK_ROWS = 128


def transposed_copy(w: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(w.T)`` for a 2-D ``w``, in blocks of rows that stay in cache."""
    out = prefaulted_empty((w.shape[1], w.shape[0]), w.dtype)
    for r0 in range(0, w.shape[0], _BLOCK_ROWS):
        out[:, r0 : r0 + _BLOCK_ROWS] = w[r0 : r0 + _BLOCK_ROWS].T
    return out


def _b_operand_only(value, nodes: set[int]) -> bool:
    """True when every use of ``value`` is the (K, N) B operand of a GEMM-like node of this graph."""
    if not value.uses:
        return False
    for node, index in value.uses:
        spec = _GEMM_B.get((normalize_domain(node.domain), node.op_type))
        if id(node) not in nodes or spec is None or index != spec[0] or (spec[1] and node.attr(spec[1], 0)):
            return False
    return True


def transpose_gemm_weights(plan: Plan, graph: Graph) -> int:
    """Store the float32 GEMM weights of ``plan`` (top-level graph ``graph``) transposed; returns how
    many were. Initializers that are also graph inputs (a caller may feed them) stay as they are.
    None are where MKL is onyx's BLAS (onyx.runtime.mkl): it runs the file's layout as fast or faster
    (BERT 105.7 against 102.9 ms a run, ViT 163.6 against 161.2), with no copy to make."""
    if not blas.transposed_weights_pay():
        return 0
    nodes = {id(n) for n in graph.nodes}
    inputs = {v.name for v in graph.inputs}
    done = 0
    for name, value in graph.initializers.items():
        const = value.const
        if name in inputs or not isinstance(const, Tensor) or not _b_operand_only(value, nodes):
            continue
        slot = plan.slot_of.get(id(value))
        w = plan.template[slot] if slot is not None else None
        if (
            not isinstance(w, np.ndarray)
            or w.dtype != np.float32
            or w.ndim != 2
            or min(w.shape) < MIN_SIDE
            or not w.flags.c_contiguous
        ):
            continue
        packed = transposed_copy(w).T
        packed.flags.writeable = False
        plan.template[slot] = packed
        del w
        const._array = packed  # the same values: the tensor serves the copy from now on
        if const.raw is not None and const._owner is not None:
            _release_pages(const._owner, const.raw)
        done += 1
    return done
