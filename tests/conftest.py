"""Suite-wide settings: compiled executables are cached in a temporary directory, so
tests never write into the user's cache (``~/.cache/oxla``)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("OXLA_CACHE_DIR", tempfile.mkdtemp(prefix="oxla-test-cache-"))
