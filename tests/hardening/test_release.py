"""Sessions that go away give their memory and mapped files back (issue 23): a session dropped (del, or
garbage-collected out of a reference cycle) is freed, its model file is no longer mapped into the
process, its arena's cached blocks are released, and RSS comes back near where it was."""

from __future__ import annotations

import gc
import os
import weakref

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from tests.runtime._util import make_model, tensor

WEIGHT_BYTES = 32 << 20  # two 16 MiB weights: large next to the noise of RSS


def _write_model(path: str) -> None:
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((1024, 4096)).astype(np.float32)  # 16 MiB
    w2 = rng.standard_normal((4096, 1024)).astype(np.float32)  # 16 MiB
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        [tensor("x", TensorProto.FLOAT, ["N", 1024])],
        [tensor("y", TensorProto.FLOAT, ["N", 1024])],
        initializers=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    with open(path, "wb") as fh:
        fh.write(model.SerializeToString())


def _mapped(path: str) -> int:
    """How many of this process's mappings are of ``path``."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as fh:
        return sum(1 for line in fh if line.rstrip().endswith(real))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("release") / "mlp.onnx")
    _write_model(path)
    return path


def _use(session: onyx.InferenceSession) -> None:
    for n in (1, 64, 256):  # intermediates of 1 MiB and more go through the session's arena
        session.run(None, {"x": np.ones((n, 1024), np.float32)})


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_a_deleted_session_unmaps_its_file_and_frees_its_memory(model_path):
    gc.collect()
    _use(onyx.InferenceSession(model_path))  # warm: modules, pools and caches outside any session
    gc.collect()
    before = _rss_bytes()
    s = onyx.InferenceSession(model_path)
    _use(s)
    assert _mapped(model_path) >= 1
    ref = weakref.ref(s)
    del s
    # the session itself is freed by reference counting alone: no reference cycle holds it
    assert ref() is None, "the session is still referenced after del"
    # its model's IR is a graph of cycles (values know their producer and uses) holding the file's
    # weights: they go with the next collection (automatic, or this one)
    gc.collect()
    assert _mapped(model_path) == 0
    grown = _rss_bytes() - before
    assert grown < WEIGHT_BYTES // 2, f"RSS still {grown >> 20} MiB above where it was"


def test_a_session_in_a_reference_cycle_is_collected(model_path):
    s = onyx.InferenceSession(model_path)
    _use(s)
    s.me = s  # a cycle through the session: only the collector frees it
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None
    assert _mapped(model_path) == 0


def test_many_sessions_made_and_dropped_do_not_accumulate(model_path):
    gc.collect()
    _use(onyx.InferenceSession(model_path))
    gc.collect()
    before = _rss_bytes()
    for _ in range(6):
        s = onyx.InferenceSession(model_path)
        _use(s)
        del s
    gc.collect()
    grown = _rss_bytes() - before
    # six sessions of 32 MiB of weights each and their arenas: none of it may stay
    assert grown < WEIGHT_BYTES // 2, f"RSS {grown >> 20} MiB above where it was after 6 sessions"
    assert _mapped(model_path) == 0


def test_arena_shrinkage_run_entry_gives_cached_blocks_back(model_path):
    s = onyx.InferenceSession(model_path)
    if not s._arena.active:
        pytest.skip("the arena's compiled module is not built")
    x = np.ones((256, 1024), np.float32)  # 4 MiB intermediates: cached by the arena after the run
    s.run(None, {"x": x})
    s.run(None, {"x": x})
    assert s._arena.stats()["cached_bytes"] > 0
    ro = onyx.RunOptions()
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")  # onnxruntime's entry
    want = s.run(None, {"x": x})[0]
    got = s.run(None, {"x": x}, ro)[0]
    assert s._arena.stats()["cached_bytes"] == 0
    np.testing.assert_array_equal(got, want)
    ro_gpu = onyx.RunOptions()
    ro_gpu.add_run_config_entry("memory.enable_memory_arena_shrinkage", "gpu:0")  # not ours: kept
    s.run(None, {"x": x}, ro_gpu)
    assert s._arena.stats()["cached_bytes"] > 0
