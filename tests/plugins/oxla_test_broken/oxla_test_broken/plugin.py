"""Fails on import, like a plugin whose native dependency is missing."""

raise ImportError("oxla_test_broken needs libmissing.so, which is not installed")
