"""PTX -> cubin through nvJitLink (the ``nvidia-nvjitlink`` wheel, through
``cuda.bindings.nvjitlink``): works without a GPU or a driver.

FMA contraction stays off (``-fma=false``): a multiply and an add of the program stay
two roundings, as on the interpreter and the cpu backend.
"""

from __future__ import annotations

import re

from oxla.errors import OxlaError

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
"""The archs oxla compiles cubins for (``--cuda-arch``)."""


def parse_archs(text: str | None, default: str = "sm_90") -> tuple[str, ...]:
    """``"sm_80,sm_90"`` -> ``("sm_80", "sm_90")``; None or empty -> ``(default,)``.

    Raises:
        OxlaError: an arch oxla does not compile for (names the ones it does).
    """
    if not text:
        return (default,)
    archs = tuple(dict.fromkeys(a.strip() for a in text.split(",") if a.strip()))
    for a in archs:
        if a not in ARCHS:
            raise OxlaError(f"unknown CUDA arch '{a}'; expected one of {', '.join(ARCHS)}")
    return archs


def ptx_to_cubin(ptx: str, arch: str) -> bytes:
    """Assembles and links ``ptx`` for ``arch`` (``sm_90``).

    Raises:
        OxlaError: nvJitLink rejected the PTX (its log in the message).
    """
    from cuda.bindings import nvjitlink

    options = [f"-arch={arch}", "-fma=false", "-O3"]
    handle = nvjitlink.create(len(options), options)
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "oxla.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            if size:
                nvjitlink.get_error_log(handle, log)
            text = log.decode(errors="replace").strip()
            raise OxlaError(f"nvJitLink rejected the PTX for {arch}: {exc}"
                            + (f": {text.splitlines()[0]}" if text else "")) from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


def ptx_target(ptx: str) -> str | None:
    """The ``.target`` of a PTX module (``sm_90``), or None."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    return m.group(1) if m else None
