"""The op table: every op oxla knows, declared once (StableHLO, CHLO, func, check,
interpreter test ops). Importing this package fills :mod:`oxla.ir.opdef`'s registry."""

from oxla.ir.ops import chlo, func_check, mhlo, sdy, stablehlo  # noqa: F401
