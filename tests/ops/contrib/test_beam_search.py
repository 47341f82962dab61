"""com.microsoft BeamSearch (decoder-only) against onnxruntime, with the tiny GPT-2-shaped decoder of
_gpt_decoder.py: sequences and their scores on random prompts, beam counts, penalties and masks, and
the per-step scores output.

The per-step scores of a batch entry that has finished are not compared (onnxruntime keeps computing
rows for it that nothing reads); nor are cases where every token is banned (ties at the lowest float,
broken differently), which no-repeat n-grams of size 1 reach quickly."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import onyx
from onyx.errors import OnyxError
from tests.ops.contrib._gpt_decoder import beam_model

V = 12


def _case(seed: int, scores: bool = False):
    r = np.random.default_rng(seed)
    batch, prompt = int(r.integers(1, 4)), int(r.integers(1, 5))
    ids = r.integers(1, V, (batch, prompt)).astype(np.int32)
    beams = int(r.integers(1, 5))
    feeds = {
        "input_ids": ids,
        "max_length": np.array([prompt + int(r.integers(1, 8))], np.int32),
        "min_length": np.array([0 if scores else int(r.integers(0, 6))], np.int32),
        "num_beams": np.array([beams], np.int32),
        "num_return_sequences": np.array([int(r.integers(1, beams + 1))], np.int32),
        "length_penalty": np.array([float(r.choice([1.0, 0.6, 1.4]))], np.float32),
        "repetition_penalty": np.array([float(r.choice([1.0, 1.3]))], np.float32),
    }
    if seed % 2:
        feeds["vocab_mask"] = (r.random(V) > 0.2).astype(np.int32)
    if seed % 3:
        feeds["prefix_vocab_mask"] = (r.random((batch, V)) > 0.3).astype(np.int32)
    if seed % 5 == 0:
        ids[:, 0] = 0
        feeds["attention_mask"] = (ids != 0).astype(np.int32)
    attrs = dict(
        eos_token_id=V + 5 if scores else int(r.integers(1, V)),  # out of the vocabulary: nothing finishes
        pad_token_id=0,
        no_repeat_ngram_size=int(r.choice([0, 2])),
        early_stopping=int(seed % 4 == 0),
    )
    return feeds, attrs


def _both(model: bytes, feeds: dict):
    so = ort.SessionOptions()
    so.log_severity_level = 4
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onyx.InferenceSession(model).run(None, feeds)
    return got, want


@pytest.mark.parametrize("seed", range(50))
def test_sequences_and_scores(seed):
    feeds, attrs = _case(seed)
    got, want = _both(beam_model(V, feeds, n_out=2, **attrs), feeds)
    assert got[0].dtype == want[0].dtype == np.int32 and got[0].shape == want[0].shape
    np.testing.assert_array_equal(got[0], want[0])
    # sums of at most max_length log-probabilities, each a few units
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(12))
def test_per_step_scores(seed):
    feeds, attrs = _case(seed, scores=True)
    got, want = _both(beam_model(V, feeds, n_out=3, **attrs), feeds)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[2].shape == want[2].shape
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-4)


def test_bad_inputs():
    feeds, attrs = _case(3)
    model = onyx.InferenceSession(beam_model(V, feeds, **attrs))
    bad = dict(feeds, num_return_sequences=np.array([9], np.int32))
    with pytest.raises(OnyxError, match="num_return_sequences"):
        model.run(None, bad)
    bad = dict(feeds, max_length=np.array([1], np.int32))
    with pytest.raises(OnyxError, match="must exceed the prompt"):
        model.run(None, bad)
