"""``--explain-sharding``: what the partitioner did, and what it costs on paper.

Communication time per call is estimated with ring algorithms over one link of
``link_gbps`` gigabits per second per device (latency ignored): for a group of ``n``
devices and ``B`` bytes per device, all-reduce ``2 (n-1)/n B``, all-gather
``(n-1) B`` (``B`` the local input), reduce-scatter and all-to-all ``(n-1)/n B``,
collective-permute ``B``. The figures compare shardings for meshes far larger than
the machine at hand; they are not measurements.
"""

from __future__ import annotations

from oxla.sharding.partition import Collective, PartitionReport


def bytes_on_link(c: Collective) -> float:
    """Bytes one device sends for collective ``c`` (ring algorithms)."""
    n = max(1, c.group)
    if c.kind == "all_reduce":
        return 2 * (n - 1) / n * c.bytes
    if c.kind == "all_gather":
        return (n - 1) * c.bytes
    if c.kind in ("reduce_scatter", "all_to_all"):
        return (n - 1) / n * c.bytes
    return float(c.bytes)


def seconds(report: PartitionReport, link_gbps: float) -> float:
    """Estimated communication seconds per call at ``link_gbps``."""
    return sum(bytes_on_link(c) for c in report.collectives) * 8 / (link_gbps * 1e9)


def summary(report: PartitionReport) -> dict:
    """``exe.stats`` entries: collective counts, bytes per device per call, and (when
    there are any) the forms taken by batch-sharded scatters (``scatter_forms``)."""
    out = {"collectives": report.counts(),
           "collective_bytes": int(sum(c.bytes for c in report.collectives)),
           "num_devices": report.mesh.num_devices if report.mesh is not None else 1}
    if report.scatter_forms:
        out["scatter_forms"] = dict(report.scatter_forms)
    return out


def explain(report: PartitionReport, link_gbps: float = 100.0) -> str:
    """A readable report: the mesh, each op's sharding, each inserted collective."""
    lines = []
    mesh = report.mesh
    if mesh is None:
        return "no sharding: the program runs on one device\n"
    lines.append(f"mesh {mesh.body()} ({mesh.num_devices} devices)")
    for name, ins in report.in_shardings.items():
        for i, s in enumerate(ins):
            lines.append(f"  @{name} arg{i}: {s.body() if s is not None else 'replicated'}")
        for i, s in enumerate(report.out_shardings.get(name, [])):
            lines.append(f"  @{name} result{i}: {s.body() if s is not None else 'replicated'}")
    lines.append("ops:")
    for op, sh in report.op_shardings:
        lines.append(f"  {op}: {sh}")
    lines.append("collectives:")
    for c in report.collectives:
        lines.append(f"  {c.kind} over {{{', '.join(c.axes)}}} (group {c.group}): "
                     f"{c.bytes} bytes/device, {c.reason} for {c.op}")
    if not report.collectives:
        lines.append("  none")
    total = sum(c.bytes for c in report.collectives)
    lines.append(f"total: {len(report.collectives)} collectives, {total} bytes/device/call; "
                 f"estimated {seconds(report, link_gbps) * 1e6:.2f} us at {link_gbps:g} Gb/s "
                 "per link")
    return "\n".join(lines) + "\n"


__all__ = ["explain", "seconds", "summary", "bytes_on_link"]
