"""com.microsoft GreedySearch for decoder-only (GPT-2 style, ``model_type=0``) models, as onnxruntime's
convert_generation.py writes them: the ``decoder`` subgraph takes ``input_ids``, ``position_ids``,
``attention_mask`` (int32) and ``past_0..past_{L-1}`` ((2, batch, heads, past length, head size)) and
returns the logits (batch, length, vocab) and ``present_0..``.

The steps follow onnxruntime's CPU kernel: the first run sees the whole prompt (pad tokens masked,
positions counting the others; ``init_decoder`` instead of ``decoder`` when given) with empty pasts;
each later run sees the chosen tokens, the next positions and a mask one longer, and the previous
presents as pasts. The next token is the argmax of the last position's logits after the logits
processors (repetition penalty, no-repeat n-grams, vocabulary mask, the first step's prefix mask,
min_length). A sequence that produces ``eos_token_id`` is finished: it (and every later position) gets
``pad_token_id``; the search stops when all are finished or at ``max_length``. The output is
(batch, max_length) int32; positions never generated hold ``pad_token_id``.

Encoder-decoder models (``model_type`` 1 and 2, the ``encoder`` subgraph) are not implemented.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.contrib._generation import checked_subgraph, empty_pasts, first_feeds, process_logits, scalar
from onyx.ops.registry import op, shape_rule

INT32 = 6
OP = "GreedySearch"


@op("GreedySearch", domain="com.microsoft", since=1)
def greedy_search(
    input_ids,
    max_length,
    min_length=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    *,
    decoder,
    eos_token_id,
    pad_token_id,
    decoder_start_token_id=-1,
    encoder=None,
    init_decoder=None,
    model_type=0,
    no_repeat_ngram_size=0,
    vocab_size=-1,
):
    if model_type != 0 or encoder is not None:
        raise OnyxNotImplemented("GreedySearch: only decoder-only models (model_type 0) are implemented")
    ids = np.asarray(input_ids)
    if ids.ndim != 2 or ids.dtype != np.int32:
        raise InvalidArgument(
            f"GreedySearch: input_ids must be int32 (batch, length), got {ids.dtype} {ids.shape}"
        )
    batch, prompt = ids.shape
    max_len = int(scalar(max_length, "max_length", OP))
    if max_len <= prompt:
        raise InvalidArgument(f"GreedySearch: max_length {max_len} must exceed the prompt's length {prompt}")
    min_len = scalar(min_length, "min_length", OP)
    penalty = float(scalar(repetition_penalty, "repetition_penalty", OP, 1.0))
    if penalty <= 0:
        raise InvalidArgument(f"GreedySearch: repetition_penalty must be positive, got {penalty}")
    if attention_mask is not None and np.shape(attention_mask) != ids.shape:
        raise InvalidArgument(
            f"GreedySearch: attention_mask {np.shape(attention_mask)} must match input_ids {ids.shape}"
        )
    decoder = checked_subgraph(decoder, "decoder", OP)
    first = checked_subgraph(init_decoder, "init_decoder", OP) if init_decoder is not None else decoder

    mask, positions, lengths = first_feeds(ids, attention_mask, pad_token_id)
    seqs = np.full((batch, max_len), pad_token_id, dtype=np.int32)
    seqs[:, :prompt] = ids
    done = np.zeros(batch, dtype=bool)
    feeds = [ids, positions, mask, *empty_pasts(first, batch, OP)]
    length, step = prompt, 0
    while length < max_len:
        step += 1
        outs = (first if step == 1 else decoder)(*feeds)
        logits = np.asarray(outs[0])
        if logits.ndim != 3 or logits.shape[0] != batch:
            raise InvalidArgument(
                f"GreedySearch: the decoder's logits must be (batch, length, vocab), got {logits.shape}"
            )
        if vocab_size > 0 and logits.shape[2] != vocab_size:
            raise InvalidArgument(
                f"GreedySearch: logits have {logits.shape[2]} entries, vocab_size is {vocab_size}"
            )
        scores = logits[:, -1, :].astype(np.float32, copy=True)
        process_logits(
            scores,
            seqs,
            length,
            step,
            penalty,
            no_repeat_ngram_size,
            vocab_mask,
            prefix_vocab_mask,
            min_len,
            eos_token_id,
        )
        tokens = np.argmax(scores, axis=1).astype(np.int32)
        done |= tokens == eos_token_id
        tokens[done] = pad_token_id
        seqs[:, length] = tokens
        if done.all():
            break
        length += 1
        if length < max_len:
            if step > 1:
                positions = positions + 1
            else:
                positions = lengths[:, None].copy()
            mask = np.concatenate([mask, np.ones((batch, 1), np.int32)], axis=1)
            feeds = [tokens[:, None], positions, mask, *outs[1:]]
    return seqs


@shape_rule("GreedySearch", domain="com.microsoft")
def _shape(ctx) -> None:
    ids, m = ctx.input_shape(0), ctx.input_value(1)
    batch = ids[0] if ids is not None and len(ids) == 2 else None
    length = int(np.asarray(m).reshape(-1)[0]) if m is not None and np.asarray(m).size == 1 else None
    ctx.set_output(0, INT32, [batch, length])
