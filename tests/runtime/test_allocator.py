"""runtime/allocator.py: the glibc tuning is idempotent and harmless where it does not apply."""

import sys

import numpy as np

from onyx.runtime.allocator import keep_freed_memory


def test_keep_freed_memory_idempotent():
    first = keep_freed_memory()
    assert isinstance(first, bool)
    assert keep_freed_memory() is first
    if sys.platform.startswith("linux") and first:
        a = np.ones(8 << 20, np.float32)  # big blocks still allocate, fill and free normally
        assert float(a.sum()) == 8 << 20
        del a


def _run(code: str, **env) -> str:
    import os
    import subprocess
    import sys

    full = {k: v for k, v in os.environ.items() if k != "ONYX_MALLOPT"} | env
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, check=True)
    return done.stdout.strip()


_SESSION = (
    "import numpy as np, onyx; from onyx.ir.builder import GraphBuilder; from onyx.runtime import allocator;"
    "b = GraphBuilder(opset=17); x = b.input('x', np.float32, [2]);"
    "b.output(b.Relu(x), 'y', np.float32, [2]); onyx.InferenceSession(b.model());"
    "print(allocator._done)"
)


def test_sessions_leave_the_allocator_alone_unless_asked():
    """Tuning glibc's allocator changes the whole host process: only with ONYX_MALLOPT=1."""
    assert _run(_SESSION) == "[]"
    assert _run(_SESSION, ONYX_MALLOPT="1") in ("[True]", "[False]")
