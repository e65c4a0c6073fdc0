"""The NCCL call records of GPU collectives (oxla_codegen_llvm.gpu.nccl) and their
binding (oxla_backend_cuda.nccl): which forms map to which calls, what falls back to
the host-staged step, and the library calls a group makes. Running them is
tests/sharding's mpi_nccl_sim.py (mpiexec -n 4 on the simulated device)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from oxla_codegen_llvm.gpu.nccl import OPS, NcclCall, nccl_calls

from oxla.errors import NotSupportedError
from oxla.ir import parse_module

CH = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"


def _body(op: str, t: str) -> str:
    return (f"({{\n^bb0(%a: tensor<{t}>, %b: tensor<{t}>):\n"
            f"  %s = \"stablehlo.{op}\"(%a, %b) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>\n"
            f"  \"stablehlo.return\"(%s) : (tensor<{t}>) -> ()\n}})")


def _op(body: str, ins: str, outs: str):
    m = parse_module(f"func.func @main(%x: {ins}) -> {outs} {{\n  %r = {body}\n"
                     f"  func.return %r : {outs}\n}}", "t.mlir")
    return next(o for o in m.walk() if o.name in OPS)


def _reduce(kind: str, red: str, t: str, shape: str, out: str, groups: str, extra: str = ""):
    ty, oty = f"tensor<{shape}x{t}>", f"tensor<{out}x{t}>"
    return _op(f"\"stablehlo.{kind}\"(%x) {_body(red, t)} {{replica_groups = {groups}, {CH}, "
               f"use_global_device_ids{extra}}} : ({ty}) -> {oty}", ty, oty)


G4 = "dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>"
G22 = "dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>"


@pytest.mark.parametrize("red,t,nccl_op", [("add", "f32", "stablehlo.add"),
                                            ("multiply", "i64", "stablehlo.multiply"),
                                            ("maximum", "f16", "stablehlo.maximum"),
                                            ("minimum", "ui8", "stablehlo.minimum"),
                                            ("add", "bf16", "stablehlo.add")])
def test_all_reduce_is_one_call_per_operand_in_the_ranks_group(red, t, nccl_op):
    op = _reduce("all_reduce", red, t, "3x5", "3x5", G22)
    calls = nccl_calls(op, [1000], [2000], rank=1, size=4)
    assert len(calls) == 1
    c = calls[0]
    assert (c.kind, c.count, c.send, c.recv, c.group, c.op) == \
        ("all_reduce", 15, 1000, 2000, (3, 1), nccl_op)
    assert c.dtype == np.dtype(op.operands[0].type.element_type.dtype)


@pytest.mark.parametrize("red,t,why", [("or", "i32", "not a body of"),
                                        ("and", "i1", "no element type"),
                                        ("subtract", "f32", "not a body of")])
def test_what_nccl_cannot_reduce_is_not_supported(red, t, why):
    op = _reduce("all_reduce", red, t, "4", "4", G4)
    with pytest.raises(NotSupportedError, match=why):
        nccl_calls(op, [1000], [2000], rank=0, size=4)


def test_a_rank_outside_every_group_falls_back_on_every_rank():
    op = _reduce("all_reduce", "add", "f32", "4", "4", "dense<[[0, 1]]> : tensor<1x2xi64>")
    for rank in range(3):  # the same decision on the ranks in and out of the group
        with pytest.raises(NotSupportedError, match="no process group"):
            nccl_calls(op, [1000], [2000], rank=rank, size=3)


@pytest.mark.parametrize("shape,dim,out,ok", [("2x3", 0, "8x3", True), ("1x3", 1, "1x12", True),
                                              ("2x3", 1, "2x12", False)])
def test_all_gather_needs_contiguous_blocks(shape, dim, out, ok):
    ty, oty = f"tensor<{shape}xf32>", f"tensor<{out}xf32>"
    op = _op(f"\"stablehlo.all_gather\"(%x) {{all_gather_dim = {dim} : i64, replica_groups = "
             f"{G4}, {CH}, use_global_device_ids}} : ({ty}) -> {oty}", ty, oty)
    if not ok:
        with pytest.raises(NotSupportedError, match="strided"):
            nccl_calls(op, [1000], [5000], rank=2, size=4)
        return
    (c,) = nccl_calls(op, [1000], [5000], rank=2, size=4)
    nbytes = 4 * int(np.prod([int(d) for d in shape.split("x")]))
    assert (c.kind, c.count, c.send_bytes, c.recv_bytes) == \
        ("all_gather", nbytes, nbytes, 4 * nbytes)


def test_reduce_scatter_counts_one_peers_block():
    op = _reduce("reduce_scatter", "add", "f64", "8x2", "2x2", G4,
                 ", scatter_dimension = 0 : i64")
    (c,) = nccl_calls(op, [1000], [5000], rank=3, size=4)
    assert (c.kind, c.count, c.send_bytes, c.recv_bytes) == ("reduce_scatter", 4, 128, 32)
    strided = _reduce("reduce_scatter", "add", "f64", "2x8", "2x2", G4,
                      ", scatter_dimension = 1 : i64")
    with pytest.raises(NotSupportedError, match="strided"):
        nccl_calls(strided, [1000], [5000], rank=3, size=4)


def test_all_to_all_is_a_send_and_a_recv_per_peer():
    ty = "tensor<4x3xi32>"
    op = _op(f"\"stablehlo.all_to_all\"(%x) {{split_dimension = 0 : i64, concat_dimension = 0 "
             f": i64, split_count = 2 : i64, replica_groups = {G22}, {CH}}} : ({ty}) -> {ty}",
             ty, ty)
    calls = nccl_calls(op, [1000], [5000], rank=3, size=4)
    assert [(c.kind, c.peer, c.send, c.recv, c.count, c.group) for c in calls] == [
        ("send", 0, 1000, 0, 24, (3, 1)), ("recv", 0, 0, 5000, 24, (3, 1)),
        ("send", 1, 1024, 0, 24, (3, 1)), ("recv", 1, 0, 5024, 24, (3, 1))]
    with pytest.raises(NotSupportedError, match="overlaps"):  # in place
        nccl_calls(op, [1000], [1000], rank=3, size=4)


def test_collective_permute_sends_receives_or_zeroes():
    ty = "tensor<2x2xf32>"
    pairs = "source_target_pairs = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>"
    op = _op(f"\"stablehlo.collective_permute\"(%x) {{{pairs}, {CH}}} : ({ty}) -> {ty}", ty, ty)
    kinds = {r: [(c.kind, c.peer) for c in nccl_calls(op, [1000], [5000], r, 4)]
             for r in range(4)}
    assert kinds == {0: [("send", 2), ("zero", -1)], 1: [("recv", 2)],
                     2: [("send", 1), ("recv", 0)], 3: [("zero", -1)]}
    no_channel = _op(f"\"stablehlo.collective_permute\"(%x) {{{pairs}}} : ({ty}) -> {ty}", ty, ty)
    with pytest.raises(NotSupportedError, match="across replicas"):
        nccl_calls(no_channel, [1000], [5000], 0, 4)


class _FakeNccl:
    """Records the NCCL entry points a group calls (every status 0)."""

    def __init__(self):
        self.log: list[tuple] = []

    def __getattr__(self, name):
        return lambda *args: self.log.append((name, *args)) or 0


def test_a_group_maps_each_call_to_its_nccl_entry_point():
    from oxla_backend_cuda.nccl import NcclComm, run_group

    lib = _FakeNccl()
    comms = {(0, 1): NcclComm(lib, "world"), (1,): NcclComm(lib, "solo")}
    f32, i8 = np.dtype(np.float32), np.dtype(np.int8)
    calls = [NcclCall("all_reduce", f32, 6, 16, 32, (0, 1), "stablehlo.maximum"),
             NcclCall("reduce_scatter", f32, 3, 16, 32, (1,), "stablehlo.multiply"),
             NcclCall("all_gather", i8, 12, 16, 48, (0, 1)),
             NcclCall("send", i8, 8, 64, 0, (0, 1), peer=1),
             NcclCall("recv", i8, 8, 0, 80, (0, 1), peer=0),
             NcclCall("zero", i8, 8, 0, 96, (0, 1))]
    zeroed = []
    group = run_group(calls, comms.__getitem__, 7, lambda p, n: zeroed.append((p, n)),
                      lambda: True)
    names = [e[0] for e in lib.log]
    assert zeroed == [(96, 8)]
    assert names == ["ncclGroupStart", "ncclAllReduce", "ncclReduceScatter", "ncclAllGather",
                     "ncclSend", "ncclRecv", "ncclGroupEnd"]
    ar, rs, ag, sd, rv = lib.log[1:6]
    assert ar[3:6] == (6, 7, 2) and ar[6] == "world"  # count, ncclFloat32, ncclMax
    assert rs[3:6] == (3, 7, 1) and rs[6] == "solo"   # recvcount, ncclFloat32, ncclProd
    assert ag[3:5] == (12, 0)                          # bytes per peer as ncclInt8
    assert sd[2:5] == (8, 0, 1) and rv[2:5] == (8, 0, 0)
    assert all(e[-1].value == 7 for e in lib.log[1:6])  # on the executable's stream
    assert {c.handle for c in group.comms} == {"world", "solo"}  # the ones polled


class _AsyncNccl:
    """An NCCL whose communicators stay ``ncclInProgress`` for ``busy`` polls of
    ``ncclCommGetAsyncError``, then report ``final``; ``ncclCommInitRankConfig`` and
    ``ncclCommSplit`` record their config and return ``ncclInProgress`` (7), as a
    non-blocking communicator's do."""

    def __init__(self, busy: int, final: int = 0):
        self.busy, self.final, self.log = busy, final, []

    def ncclCommGetAsyncError(self, handle, out):
        self.log.append("poll")
        out._obj.value = 7 if self.busy > 0 else self.final
        self.busy -= 1
        return 0

    def ncclCommInitRankConfig(self, handle, size, uid, rank, config):
        c = config._obj
        self.log.append(("init", size, rank, c.blocking, c.magic, c.size))
        handle._obj.value = 1234
        return 7

    def ncclCommSplit(self, parent, color, key, handle, config):
        self.log.append(("split", color, key, config._obj.blocking))
        handle._obj.value = 5678
        return 7

    def ncclCommAbort(self, handle):
        self.log.append(("abort", handle.value))
        return 0

    def ncclGetUniqueId(self, uid):
        uid._obj.internal = b"\x2a" * 128
        return 0

    def ncclGetErrorString(self, status):
        return b"remote process exited or there was a network error"


class FakeRequest:
    def __init__(self, after: int):
        self.after = after

    def Test(self):
        self.after -= 1
        return self.after < 0


class FakeComm:
    """An mpi4py communicator of 4 ranks: its Ibcast is answered after ``after`` tests
    (also used by tests/hip/test_rccl.py)."""

    def __init__(self, rank: int, after: int = 2):
        self.rank, self.after = rank, after

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return 4

    def Ibcast(self, buf, root):
        assert root == 0
        return FakeRequest(self.after)


def test_the_world_communicator_is_made_without_blocking():
    """ready() is False while the id's broadcast is in flight and while NCCL reports
    ncclInProgress; the init asks for a non-blocking communicator."""
    import ctypes

    from oxla_backend_cuda.nccl import API_MAGIC, NcclComm, NcclConfig

    lib = _AsyncNccl(busy=2)
    world = NcclComm.world(FakeComm(rank=0, after=2), lib)
    states = [world.ready() for _ in range(6)]
    assert states == [False, False, False, False, True, True]
    init = [e for e in lib.log if e[0] == "init"]
    assert init == [("init", 4, 0, 0, API_MAGIC, ctypes.sizeof(NcclConfig))]
    sub = world.split(1, 0, (1, 3))
    assert lib.log[-1] == ("split", 1, 0, 0) and sub.handle.value == 5678
    assert world.split(-1, 0, ()) is None  # NCCL_SPLIT_NOCOLOR: no communicator
    sub.abort()
    assert lib.log[-1] == ("abort", 5678) and not sub.handle


def test_a_failed_communicator_is_an_error_not_a_wait():
    from oxla_backend_cuda.nccl import NcclComm, NcclGroup

    from oxla.errors import OxlaError

    lib = _AsyncNccl(busy=1, final=6)  # ncclRemoteError
    group = NcclGroup([NcclComm(lib, "c")], lambda: True)
    assert group.done() is False
    with pytest.raises(OxlaError, match="ncclResult_t 6 .remote process exited"):
        group.done()


def test_a_group_is_done_when_nccl_launched_it_and_the_stream_finished():
    from oxla_backend_cuda.nccl import NcclComm, NcclGroup

    lib = _AsyncNccl(busy=1)
    stream = iter([False, False, True])
    group = NcclGroup([NcclComm(lib, "c")], lambda: next(stream))
    assert [group.done() for _ in range(4)] == [False, False, False, True]


@pytest.mark.skipif(importlib.util.find_spec("nvidia.nccl") is None,
                    reason="the nccl extra (nvidia-nccl-cu13) is not installed")
def test_the_config_struct_matches_the_pinned_header():
    """NcclConfig's fields are ncclConfig_t's, in the order the wheel's nccl.h gives."""
    import ctypes
    import re
    from pathlib import Path

    import nvidia.nccl
    from oxla_backend_cuda.nccl import VERSION_CODE, NcclConfig

    header = (Path(next(iter(nvidia.nccl.__path__))) / "include" / "nccl.h").read_text()
    body = re.search(r"typedef struct ncclConfig_v\d+ \{(.*?)\} ncclConfig_t;", header, re.S)
    fields = re.findall(r"^\s*(?:const\s+)?((?:unsigned\s+)?\w+)\s*(\*?)\s*(\w+);",
                        body.group(1), re.M)
    assert [n for _, _, n in fields] == [n for n, _ in NcclConfig._fields_]
    for (ctype, star, name), (_, ours) in zip(fields, NcclConfig._fields_):
        want = ctypes.c_char_p if star else {"size_t": ctypes.c_size_t, "int": ctypes.c_int,
                                             "unsigned int": ctypes.c_uint}[ctype]
        assert ctypes.sizeof(ours) == ctypes.sizeof(want), name
    assert f"#define NCCL_VERSION_CODE {VERSION_CODE}" in header


@pytest.mark.skipif(importlib.util.find_spec("nvidia.nccl") is None,
                    reason="the nccl extra (nvidia-nccl-cu13) is not installed")
def test_the_pinned_nccl_loads_without_a_driver():
    import ctypes

    from oxla_backend_cuda.nccl import UniqueId, load_library

    lib = load_library()
    v = ctypes.c_int()
    assert lib.ncclGetVersion(ctypes.byref(v)) == 0 and v.value == 23203  # 2.32.3
    uid = UniqueId()
    assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert ctypes.sizeof(uid) == 128 and any(uid.internal)


@pytest.mark.parametrize("t,item", [("i1", 1), ("complex<f64>", 16), ("f8E4M3FN", 1)])
def test_a_gather_moves_bytes_of_any_element_type(t, item):
    ty, oty = f"tensor<3x{t}>", f"tensor<12x{t}>"
    op = _op(f"\"stablehlo.all_gather\"(%x) {{all_gather_dim = 0 : i64, replica_groups = "
             f"{G4}, {CH}, use_global_device_ids}} : ({ty}) -> {oty}", ty, oty)
    (c,) = nccl_calls(op, [1000], [5000], rank=0, size=4)
    assert (c.dtype, c.count, c.recv_bytes) == (np.dtype(np.int8), 3 * item, 12 * item)


class _Aborted(Exception):
    pass


class _Mpi:
    """An mpi4py COMM_WORLD whose Abort raises (the real one never returns)."""

    def __init__(self):
        self.codes = []

    def Get_rank(self):
        return 2

    def Get_size(self):
        return 4

    def Ibcast(self, buf, root):
        return FakeRequest(0)

    def Abort(self, code):
        self.codes.append(code)
        raise _Aborted


def test_a_communicator_that_never_completes_is_aborted_on_the_deadline(capfd, monkeypatch):
    """The real binding under the shared policy: NCCL stays ncclInProgress; past the
    timeout the rank names what it waited for and itself, ncclCommAbort s the
    communicator, then MPI_Abort s the job."""
    from oxla_backend_cuda.nccl import NcclComm
    from oxla_codegen_llvm.gpu.nccl import NcclCollectives

    from oxla.sharding import mpi as M

    monkeypatch.setattr(M.time, "sleep", lambda s: None)
    lib, mpi = _AsyncNccl(busy=10**9), _Mpi()
    with pytest.raises(_Aborted):
        NcclCollectives(NcclComm.world(mpi, lib), mpi, 0.05)
    assert ("abort", 1234) in lib.log and mpi.codes == [3]
    err = capfd.readouterr().err
    assert "error: creating the NCCL communicator on rank 2 did not complete within 0.05s" \
        in err, err
