"""Facade of the verifier package (:mod:`oxla.ir.verify`)."""

from __future__ import annotations

from oxla.ir.verify import VERIFIERS, register_verifier, verify, verify_op

__all__ = ["VERIFIERS", "register_verifier", "verify", "verify_op"]
