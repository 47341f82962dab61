"""kernels/arena.py: the per-session memory arena (numpy's NEP 49 data memory handler in _arena.c).

The handler must apply only inside its scope and thread, every array it allocated must stay valid and
free through it later, calloc must zero and realloc keep contents, the cache must stay under its limit,
and a session must run the same (and leave numpy's default handler in place) with or without it.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import onyx
from onyx.errors import OnyxError
from onyx.ir.builder import GraphBuilder
from onyx.kernels import _loader, arena
from onyx.kernels.arena import HANDLER_NAME, Arena

_multiarray = getattr(np, "_core", None) or np.core
get_handler_name = _multiarray.multiarray.get_handler_name
DEFAULT = get_handler_name()  # numpy's own handler's name ("default_allocator")
MIB = 1 << 20

needs_compiled = pytest.mark.skipif(not _loader.built("_arena"), reason="onyx.kernels._arena was not built")


def _model(rows: int = 512, width: int = 512, hidden: int = 4096):
    """A small MLP whose intermediates are rows*hidden float32 (8 MiB by default)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, [rows, width])
    w1 = b.initializer("w1", rng.standard_normal((width, hidden), dtype=np.float32) * np.float32(0.05))
    w2 = b.initializer("w2", rng.standard_normal((hidden, width), dtype=np.float32) * np.float32(0.05))
    h = b.MatMul(x, w1)
    h = b.Tanh(b.Mul(h, h))
    h = b.Add(h, b.Sigmoid(h))
    b.output(b.Add(b.MatMul(h, w2), x), "y", np.float32, [rows, width])
    return b.model()


def _session(arena_on: bool = True, **shape) -> onyx.InferenceSession:
    so = onyx.SessionOptions()
    so.enable_cpu_mem_arena = arena_on
    return onyx.InferenceSession(_model(**shape), so)


def _feed(rows: int = 512, width: int = 512, seed: int = 1) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((rows, width), dtype=np.float32)}


# -- the handler itself ------------------------------------------------------------------------------
@needs_compiled
def test_installed_only_inside_the_scope():
    a = Arena()
    assert a.active
    assert get_handler_name() == DEFAULT
    with a.installed():
        assert get_handler_name() == HANDLER_NAME
        with Arena(name="inner").installed():  # nested scopes restore in order
            assert get_handler_name() == "inner"
        assert get_handler_name() == HANDLER_NAME
    assert get_handler_name() == DEFAULT


@needs_compiled
def test_scope_restores_the_handler_on_exceptions():
    a = Arena()
    with pytest.raises(RuntimeError, match="inside"):
        with a.installed():
            raise RuntimeError("inside")
    assert get_handler_name() == DEFAULT


@needs_compiled
def test_arrays_outlive_the_scope_and_free_through_the_arena():
    a = Arena()
    with a.installed():
        big = np.arange(MIB, dtype=np.float64)  # 8 MiB: cached when freed
        small = np.arange(10, dtype=np.float64)  # straight from malloc
    assert get_handler_name(big) == HANDLER_NAME and get_handler_name(small) == HANDLER_NAME
    assert get_handler_name(np.empty(MIB)) == DEFAULT  # outside: numpy's default
    assert big[-1] == MIB - 1 and small.sum() == 45
    assert a.stats()["cached_bytes"] == 0
    del big, small
    st = a.stats()
    assert st["cached_blocks"] == 1 and 8 * MIB <= st["cached_bytes"] <= 9 * MIB


@needs_compiled
def test_calloc_zeroes_a_reused_block():
    a = Arena()
    with a.installed():
        dirty = np.full(2 * MIB, 7, dtype=np.float32)
        del dirty
        before = a.stats()
        clean = np.zeros(2 * MIB, dtype=np.float32)
        after = a.stats()
    assert after["hits"] == before["hits"] + 1  # the freed block came back...
    assert not clean.any()  # ...zeroed
    with a.installed():
        small = np.zeros(100, dtype=np.float32)
    assert not small.any()


@needs_compiled
def test_realloc_keeps_contents():
    a = Arena()
    with a.installed():
        x = np.arange(MIB // 8, dtype=np.float64)  # 1 MiB (cached class)
        x.resize(MIB // 2, refcheck=False)  # grows into a new block
        assert np.array_equal(x[: MIB // 8], np.arange(MIB // 8)) and not x[MIB // 8 :].any()
        x.resize(100, refcheck=False)  # shrinks into a small block
        assert np.array_equal(x, np.arange(100))
        x.resize(MIB // 4, refcheck=False)  # small grows to large
        assert np.array_equal(x[:100], np.arange(100)) and not x[100:].any()
        y = np.arange(10, dtype=np.float64)
        y.resize(20, refcheck=False)  # small stays small
        assert np.array_equal(y[:10], np.arange(10))
        z = np.resize(np.arange(MIB // 8, dtype=np.float64), MIB // 4)
        assert np.array_equal(z[: MIB // 8], np.arange(MIB // 8))
        assert np.array_equal(z[MIB // 8 :], np.arange(MIB // 8))
    x.resize(MIB, refcheck=False)  # after the scope: still through the arena
    assert np.array_equal(x[:100], np.arange(100))


@needs_compiled
def test_cache_stays_under_its_limit_and_release_empties_it():
    limit = 3 * MIB
    a = Arena(limit_bytes=limit)
    sizes = [300 << 10, 700 << 10, MIB, 2 * MIB, 5 * MIB, 256 << 10, 1500 << 10, 4 * MIB, 900 << 10]
    with a.installed():
        for round_ in range(3):
            blocks = [np.ones(n, dtype=np.uint8) for n in sizes[round_:] + sizes[:round_]]
            for blk in blocks:
                assert blk.all()
            while blocks:
                blocks.pop()
                assert a.stats()["cached_bytes"] <= limit
    st = a.stats()
    assert 0 < st["cached_bytes"] <= limit and st["evictions"] > 0 and st["hits"] > 0
    a.release()
    assert a.stats()["cached_bytes"] == 0 and a.stats()["cached_blocks"] == 0
    with a.installed():  # still usable after release
        assert np.ones(MIB, dtype=np.uint8).all()
    assert a.stats()["cached_blocks"] == 1


@needs_compiled
def test_close_frees_later_blocks_to_the_system():
    a = Arena()
    with a.installed():
        kept = np.ones(MIB)
        np.ones(MIB)  # freed into the cache at once
    assert a.stats()["cached_blocks"] == 1
    a.close()
    del kept
    assert a.stats()["cached_bytes"] == 0


def test_negative_limit_is_refused():
    with pytest.raises(ValueError, match="limit"):
        Arena(limit_bytes=-1)


# -- sessions ---------------------------------------------------------------------------------------
@needs_compiled
def test_second_run_of_a_session_hits_the_cache():
    s = _session()
    feed = _feed()
    first = s.run(None, feed)[0]
    after_first = s._arena.stats()
    second = s.run(None, feed)[0]
    after_second = s._arena.stats()
    assert after_first["misses"] > 0 and after_first["cached_bytes"] > 0
    assert after_second["hits"] > after_first["hits"]
    assert after_second["misses"] - after_first["misses"] < after_first["misses"]
    np.testing.assert_array_equal(first, second)
    assert get_handler_name(first) == HANDLER_NAME  # outputs come from the arena and work later
    assert get_handler_name() == DEFAULT  # the run left numpy's default in place


@needs_compiled
def test_a_session_always_installs_its_allocator_and_small_runs_cache_nothing():
    """The handler also bounds each tensor (session.max_tensor_bytes), so every run installs it (a few
    hundred nanoseconds); a model whose runs ask for no block the arena caches keeps nothing in it."""
    small = _session(rows=2, width=8, hidden=16)
    big = _session(rows=64, width=64, hidden=2048)
    for _ in range(4):
        out = small.run(None, _feed(rows=2, width=8))[0]
        big.run(None, _feed(rows=64, width=64))
    assert get_handler_name(out) == HANDLER_NAME
    assert small._arena_hooks is not None and not small._arena.used()
    assert small._arena.stats()["cached_bytes"] == 0
    assert big._arena.used()


def test_session_results_match_without_the_arena():
    feed = _feed()
    with_arena = _session(True).run(None, feed)[0]
    no_cache = _session(False)
    without = no_cache.run(None, feed)[0]
    no_cache.run(None, feed)
    np.testing.assert_array_equal(with_arena, without)
    assert no_cache._arena.stats()["cached_bytes"] == 0  # enable_cpu_mem_arena=False: nothing is kept
    assert get_handler_name() == DEFAULT


def test_failed_run_leaves_the_default_handler():
    s = _session()
    with pytest.raises(OnyxError):
        s.run(None, {"x": np.zeros((3, 3), np.float32)})
    assert get_handler_name() == DEFAULT


@needs_compiled
def test_two_threads_run_sessions_at_once():
    sessions = [_session(rows=64), _session(rows=64)]
    feeds = [_feed(rows=64, seed=k) for k in range(4)]
    want = [_session(False, rows=64).run(None, f)[0] for f in feeds]
    got: dict[tuple[int, int], np.ndarray] = {}
    start = threading.Barrier(2)

    def work(t: int) -> None:
        start.wait()
        for rep in range(5):
            for k, f in enumerate(feeds):
                got[t, rep * 10 + k] = sessions[t].run(None, f)[0]  # same session, other thread below
                got[t, rep * 10 + k + 100] = sessions[1 - t].run(None, f)[0]
        got[t, -1] = get_handler_name()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for (_, key), y in got.items():
        if key == -1:
            assert y == DEFAULT
            continue
        np.testing.assert_array_equal(y, want[key % 100 % 10])


@needs_compiled
def test_session_gone_releases_its_cache():
    s = _session(rows=64)
    kept = s.run(None, _feed(rows=64))[0]
    a = s._arena
    assert a.stats()["cached_bytes"] > 0
    del s
    gc.collect()
    assert a.stats()["cached_bytes"] == 0
    assert np.isfinite(kept).all()
    del kept  # its block goes to the system now
    assert a.stats()["cached_bytes"] == 0


@needs_compiled
def test_pickled_session_gets_its_own_arena():
    s = _session(rows=64)
    feed = _feed(rows=64)
    want = s.run(None, feed)[0]
    t = pickle.loads(pickle.dumps(s))
    assert t._arena is not s._arena and t._arena.active
    np.testing.assert_array_equal(t.run(None, feed)[0], want)
    assert t._arena.stats()["misses"] > 0


def test_numpy_path_when_the_module_is_missing(monkeypatch):
    monkeypatch.setattr(arena, "compiled", lambda name: None)
    a = Arena()
    assert not a.active
    with a.installed():
        assert get_handler_name() == DEFAULT
    a.release()
    a.close()
    assert a.stats()["cached_bytes"] == 0 and a.stats()["hits"] == 0
    feed = _feed(rows=64)
    s = _session(rows=64)
    assert not s._arena.active
    y = s.run(None, feed)[0]
    assert get_handler_name(y) == DEFAULT
    monkeypatch.undo()
    np.testing.assert_array_equal(y, _session(rows=64).run(None, feed)[0])


# -- what it is for: no page faults per run -------------------------------------------------------------
_FAULTS = """
import resource, sys
import numpy as np
sys.path[:0] = [{tests!r}]
from kernels.test_arena import _feed, _session
s = _session(sys.argv[1] == "1", rows=2560, width=64)
feed = _feed(rows=2560, width=64)
for _ in range(3):
    s.run(None, feed)
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    s.run(None, feed)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5)
"""


@needs_compiled
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="minor fault counts: Linux's getrusage")
def test_arena_removes_the_page_faults_of_each_run():
    """40 MiB intermediates: glibc maps and unmaps blocks past 32 MiB on every run whatever its
    history (a fault per page written), the arena reuses them. Fresh processes, so that no earlier
    test has tuned glibc (ONYX_MALLOPT)."""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = _FAULTS.format(tests=tests)
    env = {k: v for k, v in os.environ.items() if k != "ONYX_MALLOPT"}

    def faults(on: bool) -> float:
        argv = [sys.executable, "-c", code, "1" if on else "0"]
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        return float(out.stdout.split()[-1])

    without, with_arena = faults(False), faults(True)
    # 10,240 pages per 40 MiB block written, fewer where transparent huge pages map some of them
    assert without > 100
    assert with_arena < 0.1 * without
