"""Every version of every operator of the math, activation and linalg families has a kernel, and
that kernel declares exactly the attributes (and the inputs) of the spec version it serves."""

import functools

import onnx.defs
import pytest

from onyx.ops import registry

MATH = (
    "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor "
    "BitCast Ceil Clip Cos Cosh CumProd CumSum Div Equal Erf Exp Floor Greater GreaterOrEqual IsInf "
    "IsNaN Less LessOrEqual Log Max Mean Min Mod Mul Neg Not Or Pow Reciprocal Round Sign Sin Sinh "
    "Sqrt Sub Sum Tan Where Xor"
).split()
ACTIVATION = (
    "Celu Elu Gelu HardSigmoid HardSwish LeakyRelu Mish PRelu Relu Selu Shrink Sigmoid Softplus "
    "Softsign Swish SwiGLU ThresholdedRelu Tanh Softmax LogSoftmax Hardmax"
).split()
LINALG = "MatMul Gemm Einsum Det MatMulInteger".split()
LATEST = onnx.defs.onnx_opset_version()


@functools.cache
def _all_versions():
    out = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            out.setdefault(s.name, {})[s.since_version] = s
    return out


def _versions(op_type):
    return sorted(_all_versions().get(op_type, {}))


@pytest.mark.parametrize("op_type", MATH + ACTIVATION + LINALG)
def test_every_opset_has_a_kernel_with_the_spec_attributes(op_type):
    versions = _versions(op_type)
    assert versions, op_type
    for opset in range(versions[0], LATEST + 1):
        schema = _all_versions()[op_type][max(v for v in versions if v <= opset)]
        kernel = registry.lookup(op_type, "", opset)
        assert set(kernel.attributes) == set(schema.attributes), (op_type, opset)
        for name, attr in schema.attributes.items():
            assert attr.required == registry.is_required(kernel.attributes[name]), (op_type, opset, name)
        variadic = any(i.option == onnx.defs.OpSchema.FormalParameterOption.Variadic for i in schema.inputs)
        assert kernel.variadic == variadic, (op_type, opset)
        if not variadic:
            assert len(kernel.inputs) == len(schema.inputs), (op_type, opset)
            assert kernel.min_inputs == schema.min_input, (op_type, opset)
