"""Optimization levels: each is an ordered list of passes run to a fixed point."""

from __future__ import annotations

from collections.abc import Callable

from onyx.ir.model import Model

Pass = Callable[[Model], bool]


def _basic() -> list[Pass]:
    from onyx.optimizer.cast_elimination import eliminate_cast
    from onyx.optimizer.constant_folding import fold_constants
    from onyx.optimizer.conv_bn_fusion import fuse_conv_bn
    from onyx.optimizer.conv_mul_add_fusion import fuse_conv_mul_add
    from onyx.optimizer.cse import eliminate_common_subexpressions
    from onyx.optimizer.dead_code import eliminate_dead_code
    from onyx.optimizer.dropout_elimination import eliminate_dropout
    from onyx.optimizer.expand_elimination import eliminate_expand
    from onyx.optimizer.identity_elimination import eliminate_identity
    from onyx.optimizer.matmul_add_gemm import fuse_matmul_add
    from onyx.optimizer.reshape_chain import fold_reshape_chains
    from onyx.optimizer.shape_folding import fold_shapes
    from onyx.optimizer.slice_elimination import eliminate_slice
    from onyx.optimizer.squeeze_unsqueeze import fold_squeeze_unsqueeze

    return [
        fold_constants,  # Constant nodes and constant subexpressions -> initializers
        fold_shapes,  # shape subgraphs known to inference -> initializers; types for the passes below
        eliminate_identity,
        eliminate_dropout,
        eliminate_cast,
        eliminate_expand,
        eliminate_slice,
        fold_squeeze_unsqueeze,
        fold_reshape_chains,
        eliminate_common_subexpressions,
        fuse_conv_bn,
        fuse_conv_mul_add,
        fuse_matmul_add,
        eliminate_dead_code,
    ]


# level -> passes (levels are cumulative: level 2 runs level 1's passes, then its own).
LEVELS: dict[int, list[Pass]] = {0: [], 1: _basic(), 2: [], 3: [], 99: []}


def _extended() -> list[Pass]:
    """The EXTENDED level (onnxruntime's ORT_ENABLE_EXTENDED): fusions into com.microsoft ops."""
    from onyx.optimizer.attention_fusion import attention_fusion
    from onyx.optimizer.bias_gelu_fusion import bias_gelu_fusion
    from onyx.optimizer.conv_activation_fusion import conv_activation_fusion
    from onyx.optimizer.dq_matmul_nbits_fusion import fuse_dq_matmul_nbits
    from onyx.optimizer.dynamic_quantize_matmul_fusion import dynamic_quantize_matmul_fusion
    from onyx.optimizer.gelu_fusion import gelu_fusion
    from onyx.optimizer.gemm_activation_fusion import gemm_activation_fusion
    from onyx.optimizer.layer_norm_fusion import layer_norm_fusion
    from onyx.optimizer.matmul_fusion import matmul_fusion
    from onyx.optimizer.normalizer_elimination import eliminate_softmax_normalizer
    from onyx.optimizer.qdq_binary_fusion import qdq_binary_fusion
    from onyx.optimizer.qdq_conv_fusion import qdq_conv_fusion
    from onyx.optimizer.qdq_matmul_fusion import qdq_matmul_fusion
    from onyx.optimizer.qdq_pool_fusion import qdq_pool_fusion
    from onyx.optimizer.qdq_propagation import qdq_propagation
    from onyx.optimizer.quick_gelu_fusion import quick_gelu_fusion
    from onyx.optimizer.skip_layer_norm_fusion import skip_layer_norm_fusion

    return [
        qdq_propagation,  # quantized models first: 8-bit ops replace DQ -> op -> Q groups
        qdq_conv_fusion,
        qdq_matmul_fusion,
        qdq_binary_fusion,
        qdq_pool_fusion,
        dynamic_quantize_matmul_fusion,
        gelu_fusion,
        quick_gelu_fusion,
        layer_norm_fusion,
        attention_fusion,
        skip_layer_norm_fusion,
        bias_gelu_fusion,
        conv_activation_fusion,
        gemm_activation_fusion,
        fuse_dq_matmul_nbits,  # blockwise int4 DequantizeLinear + MatMul -> MatMulNBits
        matmul_fusion,
        eliminate_softmax_normalizer,
    ]


LEVELS[2] = _extended()


def _layout() -> list[Pass]:
    """Level 3 (onnxruntime's ORT_ENABLE_ALL / ORT_ENABLE_LAYOUT): layout choices."""
    from onyx.optimizer.channels_last_layout import mark_channels_last

    return [mark_channels_last]


LEVELS[3] = _layout()


def passes_for(level: int) -> list[Pass]:
    """The passes of a level (levels are cumulative)."""
    out: list[Pass] = []
    for lvl in sorted(LEVELS):
        if lvl <= level:
            out.extend(LEVELS[lvl])
    return out


def optimize(
    model: Model,
    level: int = 99,
    max_iterations: int = 10,
    *,
    infer: bool = True,
    report: Callable[[str, int, int, bool], None] | None = None,
) -> Model:
    """Run the passes of ``level`` on ``model`` (in place) until none changes it; return the model.

    ``level`` is an onnxruntime level: 0 (ORT_DISABLE_ALL), 1 (basic), 2 (extended), 3 or 99 (all).
    The passes read the types (and known values) that shape inference left on the model's values, so
    the model is first given them by :func:`onyx.infer_shapes`; ``infer=False`` when the caller has just
    run that stage itself (the session does: check, infer shapes, optimize, plan). ``report``, when
    given, is called after each pass run as ``report(pass name, nodes before, nodes after, changed)``
    (nodes of every graph, subgraphs included): how ``onyx optimize`` shows what each pass did.
    """
    from onyx.errors import InvalidArgument

    if not isinstance(model, Model):
        raise InvalidArgument(f"optimize expects an onyx Model, got {type(model).__name__}")
    try:
        level = int(level)
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"optimization level must be an int or GraphOptimizationLevel, got {level!r}"
        ) from None
    if level < 0:
        raise InvalidArgument(f"optimization level must not be negative, got {level}")
    passes = passes_for(level)
    if infer and passes:
        run_pass(infer_shapes_stage, model)
    for _ in range(max_iterations):
        changed = False
        for p in passes:
            if report is None:
                changed |= run_pass(p, model)
                continue
            before = _count_nodes(model)
            did = run_pass(p, model)
            report(_pass_name(p), before, _count_nodes(model), did)
            changed |= did
        if not changed:
            break
    return model


def run_pass(p: Pass, model: Model) -> bool:
    """Run one pass; a pass that raises fails the whole optimization with an error naming the pass (as
    onnxruntime fails session creation when a graph transformer fails): the model may be half rewritten,
    so continuing without the pass would run a graph nobody checked."""
    from onyx.errors import Fail, OnyxError

    try:
        return bool(p(model))
    except OnyxError as e:
        raise type(e)(f"optimizer pass {_pass_name(p)} failed: {e}") from e
    except Exception as e:  # noqa: BLE001 - a bug in a pass: reported with its name
        raise Fail(f"optimizer pass {_pass_name(p)} failed: {type(e).__name__}: {e}") from e


def _count_nodes(model: Model) -> int:
    return sum(1 for _ in model.graph.walk())


def _pass_name(p: Pass) -> str:
    return getattr(p, "__name__", None) or type(p).__name__


def infer_shapes_stage(model: Model) -> bool:
    """The stage before the passes: :func:`onyx.infer_shapes` (not strict: what cannot be inferred stays
    as declared). Run through :func:`run_pass`, so that a crash is reported with this name."""
    from onyx.shape_inference import infer_shapes

    infer_shapes(model)
    return False


infer_shapes_stage.__name__ = "infer_shapes"
