"""com.microsoft BeamSearch for decoder-only (GPT-2 style, ``model_type=0``) models, the op
onnxruntime's convert_generation.py writes by default; the decoder subgraph is GreedySearch's (see
greedy_search.py).

The steps follow onnxruntime's CPU kernel and its beam scorer (Hugging Face's algorithm): every
batch entry's prompt is copied into ``num_beams`` beams (the first scoring 0, the others -1e9); each
step takes log_softmax of the last logits, applies the logits processors, adds each beam's score and
keeps the 2 * num_beams best (beam, token) pairs of the batch entry. Pairs ending in
``eos_token_id`` among the first num_beams become finished hypotheses (score: the sum of log
probabilities / length ** length_penalty), the others continue, num_beams of them. An entry is done
once it has num_beams hypotheses and (unless ``early_stopping``) no running beam can beat the worst.
At the end the running beams join the hypotheses and the best ``num_return_sequences`` are returned,
padded with ``pad_token_id``, with their scores and (third output) every step's scores.

Encoder-decoder models (``model_type`` 1 and 2) and the logits_processor / decoder_input_ids inputs
are not implemented.
"""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.contrib._generation import checked_subgraph, empty_pasts, first_feeds, process_logits, scalar
from onyx.ops.registry import op, shape_rule

INT32, FLOAT = 6, 1
OP = "BeamSearch"


class _Hypotheses:
    """A batch entry's finished sequences, best first, at most ``size`` of them."""

    def __init__(self, size: int, length_penalty: float):
        self.size, self.length_penalty = size, length_penalty
        self.items: list[tuple[float, np.ndarray]] = []
        self.done = False

    def add(self, tokens: np.ndarray, sum_logprobs: float) -> None:
        score = float(np.float32(sum_logprobs) / np.float32(len(tokens)) ** np.float32(self.length_penalty))
        if len(self.items) == self.size:
            if score <= self.items[-1][0]:
                return
            self.items.pop()
        at = len(self.items)
        while at > 0 and score > self.items[at - 1][0]:
            at -= 1
        self.items.insert(at, (score, tokens.copy()))

    def can_improve(self, best_sum_logprobs: float, length: int) -> bool:
        current = np.float32(best_sum_logprobs) / np.float32(length) ** np.float32(self.length_penalty)
        return self.items[-1][0] < current


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    shifted = x - m
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _top(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest of each row, sorted, ties to the lower index (as onnxruntime's TopK)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


def _advance(hyps, top_scores, top_index, seqs, length, vocab, eos, pad, early_stopping):
    """onnxruntime's beam scorer step: from each batch entry's 2 * num_beams best (beam, token) pairs,
    finish the eos ones among the first num_beams and keep num_beams others running. Returns their
    scores, tokens and source rows, (batch, num_beams) each; finished entries continue row 0 with pad."""
    batch, beams = len(hyps), top_scores.shape[1] // 2
    next_scores = np.zeros((batch, beams), np.float32)
    next_tokens = np.full((batch, beams), pad, np.int32)
    next_rows = np.zeros((batch, beams), np.int64)
    flat = top_scores.reshape(-1)
    for b, h in enumerate(hyps):
        if h.done:
            continue
        kept = 0
        for j in range(2 * beams):
            token = int(top_index[b, j] % vocab)
            row = b * beams + int(top_index[b, j] // vocab)
            if eos >= 0 and token == eos:
                if j < beams:
                    h.add(seqs[row, :length], float(top_scores[b, j]))
            else:
                next_scores[b, kept], next_tokens[b, kept], next_rows[b, kept] = top_scores[b, j], token, row
                kept += 1
            if kept == beams:
                break
        if len(h.items) < beams:
            continue
        # onnxruntime reads the best score at offset b * num_beams of the flat (batch, 2 * num_beams) list
        if not early_stopping and h.can_improve(float(flat[b * beams : b * beams + 2 * beams].max()), length):
            continue
        h.done = True
    return next_scores, next_tokens, next_rows


@op("BeamSearch", domain="com.microsoft", since=1)
def beam_search(
    input_ids,
    max_length,
    min_length=None,
    num_beams=None,
    num_return_sequences=None,
    length_penalty=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    decoder_input_ids=None,
    logits_processor=None,
    *,
    decoder,
    eos_token_id,
    pad_token_id,
    decoder_start_token_id=-1,
    early_stopping=0,
    encoder=None,
    init_decoder=None,
    model_type=0,
    no_repeat_ngram_size=0,
    vocab_size=-1,
    _num_outputs=1,
):
    if model_type != 0 or encoder is not None or decoder_input_ids is not None:
        raise OnyxNotImplemented(f"{OP}: only decoder-only models (model_type 0) are implemented")
    if logits_processor is not None and scalar(logits_processor, "logits_processor", OP) != 0:
        raise OnyxNotImplemented(f"{OP}: model-specific logits processors are not implemented")
    ids = np.asarray(input_ids)
    if ids.ndim != 2 or ids.dtype != np.int32:
        raise InvalidArgument(f"{OP}: input_ids must be int32 (batch, length), got {ids.dtype} {ids.shape}")
    batch, prompt = ids.shape
    max_len = int(scalar(max_length, "max_length", OP))
    beams = int(scalar(num_beams, "num_beams", OP, 1))
    returned = int(scalar(num_return_sequences, "num_return_sequences", OP, 1))
    if max_len <= prompt:
        raise InvalidArgument(f"{OP}: max_length {max_len} must exceed the prompt's length {prompt}")
    if beams < 1 or not 1 <= returned <= beams:
        raise InvalidArgument(f"{OP}: need 1 <= num_return_sequences ({returned}) <= num_beams ({beams})")
    min_len = scalar(min_length, "min_length", OP)
    penalty = float(scalar(repetition_penalty, "repetition_penalty", OP, 1.0))
    lp = float(scalar(length_penalty, "length_penalty", OP, 1.0))
    if attention_mask is not None and np.shape(attention_mask) != ids.shape:
        raise InvalidArgument(
            f"{OP}: attention_mask {np.shape(attention_mask)} must match input_ids {ids.shape}"
        )
    decoder = checked_subgraph(decoder, "decoder", OP)
    first = checked_subgraph(init_decoder, "init_decoder", OP) if init_decoder is not None else decoder

    rows = batch * beams
    mask, positions, lengths = first_feeds(ids, attention_mask, pad_token_id)
    mask, positions, lengths = (np.repeat(a, beams, axis=0) for a in (mask, positions, lengths))
    seqs = np.full((rows, max_len), pad_token_id, dtype=np.int32)
    seqs[:, :prompt] = np.repeat(ids, beams, axis=0)
    beam_scores = np.zeros((batch, beams), np.float32)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.reshape(-1)
    hyps = [_Hypotheses(beams, lp) for _ in range(batch)]
    all_scores = []
    feeds = [np.repeat(ids, beams, axis=0), positions, mask, *empty_pasts(first, rows, OP)]
    length, step = prompt, 0
    while length < max_len:
        step += 1
        outs = (first if step == 1 else decoder)(*feeds)
        logits = np.asarray(outs[0])
        if logits.ndim != 3 or logits.shape[0] != rows:
            raise InvalidArgument(
                f"{OP}: the decoder's logits must be (batch * beams, length, vocab), got {logits.shape}"
            )
        vocab = logits.shape[2]
        if vocab_size > 0 and vocab != vocab_size:
            raise InvalidArgument(f"{OP}: logits have {vocab} entries, vocab_size is {vocab_size}")
        scores = _log_softmax(logits[:, -1, :].astype(np.float32))
        process_logits(
            scores, seqs, length, step, penalty, no_repeat_ngram_size, vocab_mask, prefix_vocab_mask,
            min_len, eos_token_id, beams,
        )  # fmt: skip
        scores += beam_scores[:, None]
        if _num_outputs >= 3:
            all_scores.append(scores.reshape(batch, beams, vocab).copy())
        top_scores, top_index = _top(scores.reshape(batch, beams * vocab), 2 * beams)
        next_scores, next_tokens, next_rows = _advance(
            hyps, top_scores, top_index, seqs, length, vocab, eos_token_id, pad_token_id, early_stopping
        )
        beam_scores = next_scores.reshape(-1)
        seqs = seqs[next_rows.reshape(-1)]
        seqs[:, length] = next_tokens.reshape(-1)
        if all(h.done for h in hyps):
            break
        length += 1
        if length < max_len:
            positions = positions + 1 if step > 1 else lengths[:, None].copy()
            mask = np.concatenate([mask, np.ones((rows, 1), np.int32)], axis=1)
            pasts = [np.asarray(p)[:, next_rows.reshape(-1)] for p in outs[1:]]
            feeds = [next_tokens.reshape(-1, 1), positions, mask, *pasts]
    for b, h in enumerate(hyps):
        if not h.done:
            for r in range(b * beams, (b + 1) * beams):
                h.add(seqs[r, : length if length == max_len else length + 1], float(beam_scores[r]))
    out = np.full((batch, returned, max_len), pad_token_id, dtype=np.int32)
    out_scores = np.zeros((batch, returned), np.float32)
    for b, h in enumerate(hyps):
        for k, (score, tokens) in enumerate(h.items[:returned]):
            out[b, k, : len(tokens)] = tokens
            out_scores[b, k] = score
    results = [out, out_scores]
    if _num_outputs >= 3:
        vocab = all_scores[0].shape[2]
        full = np.zeros((max_len - prompt, batch, beams, vocab), np.float32)
        full[: len(all_scores)] = np.stack(all_scores)
        results.append(full)
    return tuple(results[:_num_outputs]) if _num_outputs > 1 else out


def _known_int(v) -> int | None:
    return int(np.asarray(v).reshape(-1)[0]) if v is not None and np.asarray(v).size == 1 else None


@shape_rule("BeamSearch", domain="com.microsoft")
def _shape(ctx) -> None:
    ids = ctx.input_shape(0)
    batch = ids[0] if ids is not None and len(ids) == 2 else None
    length, returned = (_known_int(ctx.input_value(i)) if ctx.has_input(i) else None for i in (1, 4))
    ctx.set_output(0, INT32, [batch, returned, length])
    if ctx.num_outputs > 1:
        ctx.set_output(1, FLOAT, [batch, returned])
    if ctx.num_outputs > 2:
        ctx.set_output(2, FLOAT, [None, batch, None, None])
