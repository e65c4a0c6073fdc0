"""Shared fixtures of the TensorFlow frontend tests; everything skips without tensorflow."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")
