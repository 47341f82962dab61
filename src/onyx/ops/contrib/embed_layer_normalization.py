"""com.microsoft EmbedLayerNormalization: BERT's embedding layer in one node.

embedding_sum = word_embedding[input_ids] + position_embedding[position_ids] (arange(S) when
absent) + segment_embedding[segment_ids] (when given); output = LayerNorm(embedding_sum) over the
hidden axis * gamma + beta. mask_index (when ``mask_index_type`` is 1) is the number of non-zero
mask entries per batch row (zeros when there is no mask, as onnxruntime gives), int32.
"""

import numpy as np

from onyx.errors import InvalidArgument
from onyx.kernels.norm import layer_norm_rows
from onyx.ops.contrib._common import back, threads_of, to_compute
from onyx.ops.registry import op, shape_rule


def _take(table, ids, what):
    ids = np.asarray(ids).astype(np.int64, copy=False)
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise InvalidArgument(f"EmbedLayerNormalization: {what} out of range [0, {table.shape[0]})")
    return table[ids]


@op("EmbedLayerNormalization", domain="com.microsoft", since=1)
def embed_layer_normalization(
    input_ids,
    segment_ids,
    word_embedding,
    position_embedding,
    segment_embedding=None,
    gamma=None,
    beta=None,
    mask=None,
    position_ids=None,
    *,
    epsilon=1e-12,
    mask_index_type=1,
    _num_outputs=1,
    _ctx=None,
):
    if input_ids.ndim != 2:
        raise InvalidArgument(f"EmbedLayerNormalization: input_ids must be (B, S), got {input_ids.shape}")
    if gamma is None:
        raise InvalidArgument("EmbedLayerNormalization: gamma is required")
    b, s = input_ids.shape
    dtype = word_embedding.dtype
    e = to_compute(_take(word_embedding, input_ids, "input_ids"))
    pos = (
        np.broadcast_to(np.arange(s), (b, s))
        if position_ids is None
        else np.broadcast_to(position_ids, (b, s))
    )
    e = e + to_compute(_take(position_embedding, pos, "position_ids"))
    if segment_ids is not None and segment_embedding is not None:
        e += to_compute(_take(segment_embedding, segment_ids, "segment_ids"))
    hidden = e.shape[-1]
    inside = gamma.shape == (hidden,) and (beta is None or beta.shape == (hidden,))
    e2 = e.astype(np.float32 if e.dtype != np.float64 else e.dtype, copy=False).reshape(b * s, hidden)
    y = layer_norm_rows(
        e2, gamma if inside else None, beta if inside else None, epsilon=epsilon, threads=threads_of(_ctx)
    ).y.reshape(e.shape)
    if not inside:  # gamma / beta broadcast some other way
        y *= to_compute(gamma)
        if beta is not None:
            y += to_compute(beta)
    outs = [back(y, dtype)]
    if _num_outputs > 1:
        if mask is None:  # onnxruntime: no mask, mask_index all 0
            outs.append(np.zeros((b,), np.int32))
        else:
            outs.append(np.count_nonzero(np.asarray(mask), axis=1).astype(np.int32))
    if _num_outputs > 2:
        outs.append(back(e, dtype))
    return outs[0] if _num_outputs == 1 else tuple(outs)


@shape_rule("EmbedLayerNormalization", domain="com.microsoft")
def _shape(ctx):
    ids, w = ctx.input_shape(0), ctx.input_shape(2)
    out = None if ids is None or w is None or len(ids) != 2 or len(w) != 2 else [ids[0], ids[1], w[1]]
    ctx.set_output(0, ctx.input_elem(2), out)
    if ctx.num_outputs > 1:
        ctx.set_output(1, 6, None if ids is None else [ids[0]])
    if ctx.num_outputs > 2:
        ctx.set_output(2, ctx.input_elem(2), out)
