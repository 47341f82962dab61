"""Small models for the debug tests, built with onyx's builder: patterns the optimizer fuses."""

from __future__ import annotations

import numpy as np

from onyx.ir.builder import GraphBuilder

HIDDEN = 16


def bert_layer(seed: int = 0):
    """One encoder block's feed-forward half: MatMul+Add+Gelu (erf form), MatMul+Add, residual Add and a
    decomposed LayerNorm; every value named so that tests can ask for it."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["batch", 4, HIDDEN])
    w1 = b.initializer("w1", rng.standard_normal((HIDDEN, 32)).astype(np.float32) * 0.3)
    b1 = b.initializer("b1", rng.standard_normal(32).astype(np.float32) * 0.1)
    w2 = b.initializer("w2", rng.standard_normal((32, HIDDEN)).astype(np.float32) * 0.3)
    b2 = b.initializer("b2", rng.standard_normal(HIDDEN).astype(np.float32) * 0.1)
    gamma = b.initializer("gamma", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
    beta = b.initializer("beta", (0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
    c = lambda v, n: b.initializer(n, np.array(v, np.float32))  # noqa: E731

    def op(kind, *ins, out, **attrs):
        return b.op(kind, *ins, outputs=[out], name=f"{out}_node", **attrs)

    mm1 = op("MatMul", x, w1, out="mm1")
    fc1 = op("Add", mm1, b1, out="fc1")
    # Gelu: 0.5 * x * (1 + erf(x / sqrt(2)))
    div = op("Div", fc1, c(np.sqrt(2.0), "sqrt2"), out="gelu_div")
    erf = op("Erf", div, out="gelu_erf")
    one = op("Add", erf, c(1.0, "one"), out="gelu_add")
    mul = op("Mul", fc1, one, out="gelu_mul")
    gelu = op("Mul", mul, c(0.5, "half"), out="gelu")
    mm2 = op("MatMul", gelu, w2, out="mm2")
    fc2 = op("Add", mm2, b2, out="fc2")
    res = op("Add", fc2, x, out="residual")
    # LayerNorm over the last axis, decomposed
    mean = op("ReduceMean", res, out="ln_mean", axes=[-1])
    cen = op("Sub", res, mean, out="ln_centered")
    sq = op("Pow", cen, c(2.0, "two"), out="ln_sq")
    var = op("ReduceMean", sq, out="ln_var", axes=[-1])
    eps = op("Add", var, c(1e-5, "eps"), out="ln_var_eps")
    std = op("Sqrt", eps, out="ln_std")
    norm = op("Div", cen, std, out="ln_norm")
    scaled = op("Mul", norm, gamma, out="ln_scaled")
    y = op("Add", scaled, beta, out="ln_out")
    b.output(y, "y")
    return b.model()


def conv_bn_relu(seed: int = 0):
    """Conv -> BatchNormalization -> Relu -> Conv -> Relu -> GlobalAveragePool: Conv+BN and Conv+Relu fuse."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(opset=17)
    x = b.input("image", np.float32, ["N", 3, 8, 8])
    w = b.initializer("conv1_w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3)
    cb = b.initializer("conv1_b", rng.standard_normal(4).astype(np.float32) * 0.1)
    scale = b.initializer("bn_scale", (1 + 0.1 * rng.standard_normal(4)).astype(np.float32))
    bias = b.initializer("bn_bias", (0.1 * rng.standard_normal(4)).astype(np.float32))
    mean = b.initializer("bn_mean", (0.1 * rng.standard_normal(4)).astype(np.float32))
    var = b.initializer("bn_var", (1 + 0.2 * rng.random(4)).astype(np.float32))
    w2 = b.initializer("conv2_w", rng.standard_normal((5, 4, 3, 3)).astype(np.float32) * 0.3)
    conv = b.op("Conv", x, w, cb, outputs=["conv1"], name="conv1_node", pads=[1, 1, 1, 1])
    bn = b.op("BatchNormalization", conv, scale, bias, mean, var, outputs=["bn"], name="bn_node")
    relu = b.op("Relu", bn, outputs=["relu1"], name="relu1_node")
    conv2 = b.op("Conv", relu, w2, outputs=["conv2"], name="conv2_node", pads=[1, 1, 1, 1])
    relu2 = b.op("Relu", conv2, outputs=["relu2"], name="relu2_node")
    pool = b.op("GlobalAveragePool", relu2, outputs=["pool"], name="pool_node")
    b.output(pool, "pool")
    return b.model()


def torch_block() -> tuple[bytes, np.ndarray]:
    """A transformer block (self-attention, GELU feed-forward, two LayerNorms) exported by torch's
    TorchScript exporter, and an input for it: onyx fuses it into FusedMatMul, SkipLayerNormalization
    and BiasGelu."""
    import io

    import torch

    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, d: int = 16):
            super().__init__()
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.f1, self.f2 = torch.nn.Linear(d, 32), torch.nn.Linear(32, d)
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, -1)
            a = torch.softmax(q @ k.transpose(-1, -2) / 4.0, -1) @ v
            x = self.ln1(x + self.o(a))
            return self.ln2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))

    x = torch.randn(2, 5, 16)
    buf = io.BytesIO()
    torch.onnx.export(
        Block().eval(), (x,), buf, dynamo=False, input_names=["x"], output_names=["y"], opset_version=17
    )
    return buf.getvalue(), x.numpy()
