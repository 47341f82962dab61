"""Blockwise int4 DequantizeLinear of a constant weight feeding MatMul -> com.microsoft MatMulNBits
(onnxruntime's DQ -> MatMulNBits fusion, EXTENDED level).

Matches ``MatMul(A, DequantizeLinear(W, scales[, zero_points], axis=0, block_size=B))`` where W is a
2-D INT4/UINT4 initializer (K, N), scales (and zero points) 2-D initializers (ceil(K / B), N), B a power
of two >= 16, and the dequantized weight read by this MatMul alone. The weight is repacked as
MatMulNBits stores it: transposed to (N, k_blocks, B / 2) bytes; signed codes move to unsigned by
adding 8 (MatMulNBits's default zero point is 8); unsigned codes without zero points get explicit
zero points 0. The result is exact: the same products of the same dequantized values.
``accuracy_level`` is 4, as onnxruntime's session default for this fusion writes it (onyx computes
in float32 at every level; onnxruntime running the saved model may quantize A to int8).
"""

from __future__ import annotations

import numpy as np

from onyx.ir.model import Model, Node
from onyx.kernels.nbits import pack_codes
from onyx.optimizer._pattern import Ctx, attr, is_op, make_node, prod, run_on_graphs

_INT4, _UINT4 = 22, 21
ACCURACY_LEVEL = 4


def _visit(ctx: Ctx, mm: Node) -> bool:
    if not is_op(mm, "MatMul") or len(mm.inputs) != 2 or mm.inputs[0] is None:
        return False
    w = mm.inputs[1]
    dq = prod(w, "DequantizeLinear")
    if dq is None or not ctx.single_use(w) or ctx.opset < 21 or len(dq.inputs) < 2:
        return False
    q_v, s_v = dq.inputs[0], dq.inputs[1]
    z_v = dq.inputs[2] if len(dq.inputs) > 2 else None
    q, s = ctx.const(q_v), ctx.const(s_v)
    z = ctx.const(z_v) if z_v is not None else None
    elem = ctx.elem(q_v)
    if q is None or s is None or (z_v is not None and z is None) or elem not in (_INT4, _UINT4):
        return False
    block = int(attr(dq, "block_size", 0) or 0)
    axis = int(attr(dq, "axis", 1))
    if q.ndim != 2 or axis not in (0, -2) or block < 16 or block & (block - 1):
        return False
    k, n = q.shape
    kb = -(-k // block)
    if s.shape != (kb, n) or s.dtype.kind != "f" or (z is not None and z.shape != (kb, n)):
        return False
    if ctx.elem(mm.inputs[0]) != ctx.elem(s_v) or ctx.elem(w) != ctx.elem(s_v):
        return False
    res = mm.outputs[0]
    if not ctx.private([dq, mm], res):
        return False
    codes = q.view(np.uint8) & np.uint8(0x0F)
    signed = elem == _INT4
    zp_codes = None if z is None else z.view(np.uint8) & np.uint8(0x0F)
    if signed:  # two's-complement nibble -> code + 8 (the zero point moves with it)
        codes = codes ^ np.uint8(8)
        zp_codes = None if zp_codes is None else zp_codes ^ np.uint8(8)
    elif zp_codes is None:
        zp_codes = np.zeros((kb, n), np.uint8)
    padded = np.zeros((kb * block, n), np.uint8)
    padded[:k] = codes
    b = pack_codes(np.ascontiguousarray(padded.T).reshape(n, kb, block), 4)
    inputs = [
        mm.inputs[0],
        ctx.new_const(b, (q_v.name or "W") + "_nbits"),
        ctx.new_const(np.ascontiguousarray(s.T), (s_v.name or "scales") + "_nbits"),
    ]
    if zp_codes is not None and not (signed and z is not None and np.all(zp_codes == 8)):
        inputs.append(ctx.new_const(pack_codes(np.ascontiguousarray(zp_codes.T), 4, 0), "zero_points_nbits"))
    new = make_node(
        "MatMulNBits", inputs, name=(mm.name or "matmul") + "_MatMulNBits",
        K=k, N=n, bits=4, block_size=block, accuracy_level=ACCURACY_LEVEL,
    )  # fmt: skip
    ctx.replace([dq, mm], res, new)
    return True


def fuse_dq_matmul_nbits(model: Model) -> bool:
    """Replace blockwise int4 DequantizeLinear + MatMul by MatMulNBits; returns whether it changed."""
    return run_on_graphs(model, _visit)
