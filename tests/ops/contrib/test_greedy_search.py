"""com.microsoft GreedySearch (decoder-only) against onnxruntime, with a tiny GPT-2-shaped decoder.

onnxruntime leaves the output's columns after the step where every sequence finished uninitialised;
onyx fills them with pad_token_id. The comparison covers the columns onnxruntime writes."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onyx
from onyx.errors import OnyxError
from tests.ops.contrib._gpt_decoder import greedy_model

V = 12
PAD = 0


def _written(seqs: np.ndarray, prompt: int) -> int:
    """The columns onnxruntime writes: up to the first step where every row holds the pad token."""
    for c in range(prompt, seqs.shape[1]):
        if (seqs[:, c] == PAD).all():
            return c + 1
    return seqs.shape[1]


def _case(seed: int):
    r = np.random.default_rng(seed)
    batch, prompt = int(r.integers(1, 4)), int(r.integers(1, 5))
    ids = r.integers(1, V, (batch, prompt)).astype(np.int32)
    if seed % 4 == 0:
        ids[:, 0] = PAD  # left padding: masked, positions start after it
    feeds = {
        "input_ids": ids,
        "max_length": np.array([prompt + int(r.integers(1, 8))], np.int32),
        "min_length": np.array([int(r.integers(0, 6))], np.int32),
        "repetition_penalty": np.array([float(r.choice([1.0, 1.3, 0.8]))], np.float32),
        "vocab_mask": (r.random(V) > 0.2).astype(np.int32),
        "prefix_vocab_mask": (r.random((batch, V)) > 0.3).astype(np.int32),
        "attention_mask": np.ones_like(ids) if seed % 3 == 0 else (ids != PAD).astype(np.int32),
    }
    attrs = dict(
        eos_token_id=int(r.integers(1, V)), pad_token_id=PAD, no_repeat_ngram_size=int(r.integers(0, 3))
    )
    return feeds, attrs


def _compare(model: bytes, feeds: dict) -> None:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = onyx.InferenceSession(model).run(None, feeds)[0]
    assert got.dtype == want.dtype == np.int32 and got.shape == want.shape
    k = _written(got, feeds["input_ids"].shape[1])
    np.testing.assert_array_equal(got[:, :k], want[:, :k])
    assert (got[:, k:] == PAD).all()


@pytest.mark.parametrize("seed", range(40))
def test_against_onnxruntime(seed):
    feeds, attrs = _case(seed)
    _compare(greedy_model(V, **attrs), feeds)


@pytest.mark.parametrize("seed", range(6))
def test_init_decoder_runs_first(seed):
    feeds, attrs = _case(seed)
    _compare(greedy_model(V, init_seed=7, **attrs), feeds)


def test_required_inputs_only():
    ids = np.array([[3, 5, 7], [1, 2, 2]], np.int32)
    feeds = {"input_ids": ids, "max_length": np.array([8], np.int32)}
    _compare(greedy_model(V, with_optional=False, eos_token_id=99, pad_token_id=PAD), feeds)


@pytest.mark.parametrize(
    "change,match",
    [
        ({"max_length": np.array([1], np.int32)}, "must exceed the prompt"),
        ({"repetition_penalty": np.array([0.0], np.float32)}, "positive"),
        ({"attention_mask": np.ones((1, 1), np.int32)}, "must match input_ids"),
    ],
)
def test_bad_inputs(change, match):
    feeds, attrs = _case(1)
    feeds.update(change)
    with pytest.raises(OnyxError, match=match):
        onyx.InferenceSession(greedy_model(V, **attrs)).run(None, feeds)


def test_encoder_decoder_models_are_not_implemented():
    feeds, attrs = _case(1)
    with pytest.raises(OnyxError, match="model_type 0"):
        onyx.InferenceSession(greedy_model(V, model_type=1, **attrs)).run(None, feeds)
