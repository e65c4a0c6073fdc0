"""Emitters of the remaining ops (sort, select_and_scatter, map, ...)."""

from __future__ import annotations
