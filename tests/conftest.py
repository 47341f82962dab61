"""Session-wide test settings."""

import os
import shutil
import tempfile

# compiled team tasks (onyx.ops._native) are cached in a folder of the test session's own, not in the
# user's ~/.cache; subprocesses started by tests inherit it
_CACHE = tempfile.mkdtemp(prefix="onyx-test-cache-")
os.environ.setdefault("ONYX_CACHE_DIR", _CACHE)


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)
