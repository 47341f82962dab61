"""What the generation ops (GreedySearch, BeamSearch) share: onnxruntime's GPT-2 decoder feeds and
logits processors."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument

LOWEST = np.finfo(np.float32).min


def scalar(x, name: str, op: str, default=None):
    """The one value of the optional input ``x`` (``default`` when absent)."""
    if x is None:
        return default
    a = np.asarray(x)
    if a.size != 1:
        raise InvalidArgument(f"{op}: {name} must hold one value, got shape {a.shape}")
    return a.reshape(-1)[0].item()


def first_feeds(ids: np.ndarray, mask, pad: int):
    """The prompt's attention mask (given, or 0 on pad tokens) and positions (0 on pad tokens, else
    the count of non-pad tokens before), and each row's count of non-pad tokens."""
    not_pad = ids != pad
    positions = np.where(not_pad, np.cumsum(not_pad, axis=1) - 1, 0).astype(np.int32)
    if mask is None:
        mask = not_pad.astype(np.int32)
    return np.asarray(mask, dtype=np.int32), positions, not_pad.sum(axis=1).astype(np.int32)


def empty_pasts(decoder, batch: int, op: str) -> list[np.ndarray]:
    """Zero-length past states, (2, batch, num_heads, 0, head_size) as the decoder declares them."""
    pasts = []
    for v in decoder.plan.graph.inputs[3:]:
        name, dims = v.name, getattr(getattr(v.type, "shape", None), "dims", None)
        if dims is None or len(dims) != 5 or not all(isinstance(d, int) for d in (dims[0], dims[2], dims[4])):
            raise InvalidArgument(
                f"{op}: the decoder's input {name!r} must be a past state of shape "
                "(2, batch, num_heads, past_length, head_size) with num_heads and head_size known"
            )
        pasts.append(np.zeros((dims[0], batch, dims[2], 0, dims[4]), np.float32))
    return pasts


def process_logits(
    scores, seqs, length, step, penalty, ngram, vocab_mask, prefix_mask, min_length, eos, beams: int = 1
) -> None:
    """onnxruntime's logits processors, in its order, on the (rows, vocab) ``scores`` in place: row r
    continues the sequence ``seqs[r, :length]`` of batch entry r // beams."""
    if penalty != 1.0:
        for b in range(scores.shape[0]):
            tokens = np.unique(seqs[b, :length])
            s = scores[b, tokens]
            scores[b, tokens] = np.where(s < 0, s * penalty, s / penalty)
    if ngram > 0 and length + 1 >= ngram:
        for b in range(scores.shape[0]):
            seq = seqs[b, :length]
            tail = list(seq[length - ngram + 1 :])
            for i in range(length - ngram + 1):
                if list(seq[i : i + ngram - 1]) == tail:
                    scores[b, seq[i + ngram - 1]] = LOWEST
    if vocab_mask is not None:
        scores[:, np.asarray(vocab_mask).reshape(-1) == 0] = LOWEST
    if prefix_mask is not None and step == 1:
        scores[np.repeat(np.asarray(prefix_mask), beams, axis=0) == 0] = LOWEST
    if min_length is not None and length < min_length and 0 <= eos < scores.shape[1]:
        scores[:, eos] = LOWEST


def checked_subgraph(g, name: str, op: str):
    """``g`` after checking it has the GPT-2 decoder's inputs and outputs."""
    if g.num_inputs < 3 or g.num_outputs < 1 or g.num_inputs - 3 != g.num_outputs - 1:
        raise InvalidArgument(
            f"{op}: the {name} subgraph must take input_ids, position_ids, attention_mask and one "
            f"past per layer, and return logits and one present per layer; it takes {g.num_inputs} inputs "
            f"and returns {g.num_outputs} outputs"
        )
    return g
