"""MatMul + Add -> Gemm: ``Add(MatMul(A, B), C)`` with 2-D A and B and a constant bias C.

C must broadcast to the (M, N) result without growing it (shape (N,), (1, N), (M, N), (M, 1), (1,)
or a scalar) and have A's element type (float or double). Higher-rank MatMuls are kept, as
onnxruntime keeps them. Gemm exists with unidirectional broadcasting of C from opset 7; older
models are left alone.
"""

from __future__ import annotations

from onyx.ir.dtypes import DataType
from onyx.ir.model import Model, Node
from onyx.optimizer._util import Scope, is_op, value_elem

_TYPES = {int(DataType.FLOAT), int(DataType.DOUBLE)}  # float16 Gemm would round A @ B before adding C


def _fits(c_shape: tuple, m, n) -> bool:
    if len(c_shape) > 2:
        return False
    if len(c_shape) >= 1 and c_shape[-1] != 1 and not (isinstance(n, int) and c_shape[-1] == n):
        return False
    if len(c_shape) == 2 and c_shape[0] != 1 and not (isinstance(m, int) and c_shape[0] == m):
        return False
    return True


def fuse_matmul_add(model: Model) -> bool:
    sc = Scope(model)
    changed = False
    for entry in sc.graphs():
        if entry.opset("") < 7:
            continue
        g = entry.graph
        for add in sc.nodes(entry):
            if not is_op(add, "Add") or len(add.inputs) != 2 or len(add.outputs) != 1:
                continue
            for k in (0, 1):
                y, c_val = add.inputs[k], add.inputs[1 - k]
                mm = y.producer if y is not None else None
                if mm is None or mm.graph is not g or not is_op(mm, "MatMul") or len(mm.inputs) != 2:
                    continue
                if not sc.single_use(y, add):
                    continue
                a, b = mm.inputs
                c = sc.const_value(c_val)
                a_dims, b_dims = sc.dims(a), sc.dims(b)
                elem = value_elem(a)
                if c is None or a_dims is None or b_dims is None or len(a_dims) != 2 or len(b_dims) != 2:
                    continue
                if elem not in _TYPES or value_elem(b) != elem or value_elem(c_val) != elem:
                    continue
                if not _fits(c.shape, a_dims[0], b_dims[1]):
                    continue
                out = add.outputs[0]
                gemm = Node("Gemm", [a, b, c_val], [], name=mm.name or add.name)
                sc.replace_node(add, [gemm])
                add.outputs = []
                gemm.append_output(out)
                sc.remove(mm)
                changed = True
                break
    sc.flush()
    return changed
