"""A few seconds of bench/soak.py (issue 23): four threads running a transformer layer and a bidirectional
LSTM with (batch, sequence) changing every run, each result equal bit for bit to the same feed's run
alone (use_deterministic_compute), and RSS flat once every shape has been seen.

The RSS bound after the warm-up: every (model, shape) pair has then run on every thread, so the plans,
the shape caches (at most 32 signatures and 16 MiB per cached value, runtime/shape_cache.py) and the
kernels' per-node memos (16 signatures, ops/nn/conv) hold what they will hold; what may still grow is the
sessions' arenas (freed blocks kept for reuse: bounded by their limit, and measured here, so the bound
subtracts their growth) and glibc's per-thread heaps settling, which the 16 MiB of slack covers: a leak of
one intermediate per run (>= 24 KiB at these sizes, 400 runs after the warm-up) would pass it.
"""

from __future__ import annotations

import os

import pytest

from bench import soak

SLACK = 16 << 20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_short_soak_equal_results_and_flat_memory():
    cases = soak.make_cases(True, 12, d=64, ff=256, hidden=48, max_batch=10, max_seq=32, seed=3)
    # a first pass: modules, thread pools and BLAS buffers are set up before anything is measured
    soak.soak(cases, 4, runs_per_thread=0, every=10**9)
    res = soak.soak(cases, 4, runs_per_thread=100, every=20)
    print("\n" + soak.report(res))
    assert not res.errors, res.errors
    assert res.mismatches == 0, f"{res.mismatches} outputs differ from their run alone (max {res.max_diff})"
    assert res.runs == 4 * (2 * 12 + 100)
    warm, end = res.samples[res.warm_index], res.samples[-1]
    peak = max(s[2] for s in res.samples[res.warm_index :])
    arena_growth = max(0, end[3] - warm[3])
    grown = peak - warm[2]
    assert grown <= arena_growth + SLACK, (
        f"RSS grew {grown >> 20} MiB after the warm-up (arena caches {arena_growth >> 20} MiB of it)"
    )
