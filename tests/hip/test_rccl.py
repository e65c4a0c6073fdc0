"""RCCL for hip collectives under MPI, without an AMD GPU: the binding
(:mod:`oxla_backend_hip.rccl` over the shared :mod:`oxla_codegen_llvm.gpu.nccl_api`,
loaded from ``$ROCM_PATH/lib``) against a stand-in ``librccl.so.1`` built here from
``fake_rccl.c`` (RCCL's entry points, each call logged); the HIP device's NCCL hooks
(``hipStreamQuery``); and the one-line error when ROCm's rccl is missing. The simulated
device's runs under mpiexec are tests/sharding's (``OXLA_HIP_DEVICE=sim``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from oxla_backend_hip import rccl
from oxla_backend_hip.hip import NOT_READY, HIPDevice
from oxla_codegen_llvm.gpu.nccl import NcclCall
from oxla_codegen_llvm.gpu.nccl_api import API_MAGIC, NcclConfig, NcclGroup, run_group

from oxla.errors import OxlaError
from tests.backend_cuda.test_nccl import FakeComm

HERE = Path(__file__).parent
UNDEF = -2**31


def _build(root: Path, *flags: str) -> None:
    """fake_rccl.c as ``root/lib/librccl.so.1`` (skips without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in RCCL")
    lib = root / "lib"
    lib.mkdir(parents=True)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", *flags, "-o", str(lib / "librccl.so.1"),
                    str(HERE / "fake_rccl.c")], check=True, capture_output=True)


@pytest.fixture
def fake_rccl(tmp_path, monkeypatch):
    """The stand-in built as ``$ROCM_PATH/lib/librccl.so.1``; yields it (a CDLL) with its
    log cleared."""
    _build(tmp_path / "rocm")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    rccl.load_library.cache_clear()
    try:
        fake = rccl.load_library()
        fake.fake_log.restype = ctypes.c_char_p
        fake.fake_reset()
        yield fake
    finally:
        rccl.load_library.cache_clear()


def _log(fake) -> list[str]:
    return fake.fake_log().decode().splitlines()


def test_the_world_communicator_is_non_blocking_and_claims_rccls_version(fake_rccl):
    """rank 0 makes the id; ready() is False while the broadcast is in flight and while
    RCCL reports ncclInProgress; the config is read by RCCL's own ncclConfig_t layout:
    blocking 0, RCCL's version (ncclGetVersion), every other field undefined."""
    world = rccl.world(FakeComm(rank=0, after=1))
    fake_rccl.fake_set_async(2, 0)
    assert [world.ready() for _ in range(5)] == [False, False, False, True, True]
    init = _log(fake_rccl)
    want = (f"config size={ctypes.sizeof(NcclConfig)} magic={API_MAGIC:x} version=22005 "
            f"blocking=0 cga={UNDEF} net=null split_share={UNDEF} traffic={UNDEF}")
    assert init == ["init n=4 rank=0 id=2a2a", "init " + want]
    sub = world.split(3, 1, (2, 3))
    assert _log(fake_rccl)[2:] == ["split parent=0x1000 color=3 key=1", "split " + want]
    assert sub.handle.value == 0x2003
    assert world.split(-1, 0, ()) is None  # NCCL_SPLIT_NOCOLOR
    sub.abort()
    assert _log(fake_rccl)[-1] == "abort 0x2003" and not sub.handle


def test_a_group_maps_each_call_to_rccls_entry_points_on_the_stream(fake_rccl):
    world = rccl.world(FakeComm(rank=0, after=0))
    assert world.ready()
    sub = world.split(1, 0, (1, 3))
    fake_rccl.fake_reset()
    comms = {(0, 1, 2, 3): world, (1, 3): sub}
    f32, f64, i8 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int8)
    calls = [NcclCall("all_reduce", f32, 6, 0x10, 0x20, (0, 1, 2, 3), "stablehlo.add"),
             NcclCall("reduce_scatter", f64, 3, 0x30, 0x40, (1, 3), "stablehlo.minimum"),
             NcclCall("all_gather", i8, 12, 0x50, 0x60, (0, 1, 2, 3)),
             NcclCall("send", i8, 8, 0x70, 0, (0, 1, 2, 3), peer=2),
             NcclCall("recv", i8, 8, 0, 0x80, (0, 1, 2, 3), peer=3),
             NcclCall("zero", i8, 8, 0, 0x90, (0, 1, 2, 3))]
    zeroed = []
    group = run_group(calls, comms.__getitem__, 0x77, lambda p, n: zeroed.append((p, n)),
                      lambda: True)
    s = "stream=0x77"
    assert zeroed == [(0x90, 8)]
    assert _log(fake_rccl) == [
        "group_start",
        f"all_reduce 0x10 0x20 6 dt=7 op=0 comm=0x1000 {s}",       # ncclFloat32, ncclSum
        f"reduce_scatter 0x30 0x40 3 dt=8 op=3 comm=0x2001 {s}",   # ncclFloat64, ncclMin
        f"all_gather 0x50 0x60 12 dt=0 comm=0x1000 {s}",           # bytes as ncclInt8
        f"send 0x70 8 dt=0 peer=2 comm=0x1000 {s}",
        f"recv 0x80 8 dt=0 peer=3 comm=0x1000 {s}",
        "group_end"]
    assert {c.handle.value for c in group.comms} == {0x1000, 0x2001}


def test_an_asynchronous_rccl_error_is_an_error_not_a_wait(fake_rccl):
    world = rccl.world(FakeComm(rank=1, after=0))
    assert world.ready()
    fake_rccl.fake_set_async(1, 6)  # in progress once, then ncclRemoteError
    group = NcclGroup([world], lambda: True)
    assert group.done() is False
    with pytest.raises(OxlaError, match=r"ncclResult_t 6 \(remote process exited\)"):
        group.done()


class _FakeHip:
    """The HIP runtime calls the device's NCCL hooks make; ``hipStreamQuery`` answers
    from ``queries``."""

    def __init__(self, queries):
        self.queries, self.log = list(queries), []

    def hipSetDevice(self, ordinal):
        self.log.append(("set", ordinal))
        return 0

    def hipStreamQuery(self, stream):
        self.log.append(("query", stream.value))
        return self.queries.pop(0)

    def hipMemsetAsync(self, ptr, value, n, stream):
        self.log.append(("memset", ptr.value, value, n.value, stream.value))
        return 0

    class _ErrorString:  # a ctypes function: the device sets its restype
        restype = None

        def __call__(self, status):
            return b"an illegal memory access was encountered"

    hipGetErrorString = _ErrorString()


def _device(queries) -> HIPDevice:
    dev = HIPDevice.__new__(HIPDevice)
    dev._h, dev._ordinal, dev.ordinal = _FakeHip(queries), 1, 1
    return dev


def test_the_hip_device_enqueues_rccl_groups_and_polls_hipstreamquery(fake_rccl):
    """HIPDevice.nccl runs the group on the executable's hipStream_t (zeroing by
    hipMemsetAsync on it); done() is False while hipStreamQuery says hipErrorNotReady."""
    dev = _device([NOT_READY, NOT_READY, 0])
    world = dev.nccl_world(FakeComm(rank=0, after=0))
    assert world.ready()
    fake_rccl.fake_reset()
    stream = ctypes.c_void_p(0x99)
    calls = [NcclCall("all_reduce", np.dtype(np.float32), 4, 0x10, 0x10, (0, 1, 2, 3),
                      "stablehlo.maximum"),
             NcclCall("zero", np.dtype(np.int8), 16, 0, 0x200, (0, 1, 2, 3))]
    group = dev.nccl(calls, lambda g: world, stream)
    assert _log(fake_rccl)[1] == "all_reduce 0x10 0x10 4 dt=7 op=2 comm=0x1000 stream=0x99"
    assert ("memset", 0x200, 0, 16, 0x99) in dev._h.log
    assert [group.done() for _ in range(3)] == [False, False, True]
    assert ("set", 1) in dev._h.log  # the device is current for RCCL's calls


def test_a_failed_hip_stream_is_an_error():
    dev = _device([700])  # hipErrorIllegalAddress
    with pytest.raises(OxlaError, match="hipStreamQuery failed: hipError_t 700"):
        dev.stream_done(ctypes.c_void_p(1))


def test_missing_rccl_is_one_clear_error(monkeypatch):
    """On a GPU without ROCm's rccl, attach_mpi's RCCL world fails in one line naming it."""
    monkeypatch.setenv("ROCM_PATH", "/nonexistent")
    if ctypes.util.find_library("rccl") or Path("/opt/rocm/lib/librccl.so.1").exists():
        pytest.skip("a system RCCL is installed")
    rccl.load_library.cache_clear()
    try:
        with pytest.raises(OxlaError) as e:
            _device([]).nccl_world(FakeComm(rank=0, after=1))
        assert e.value.message.startswith("RCCL is not loadable (librccl.so.1: install "
                                          "ROCm's rccl, e.g. under /opt/rocm")
        assert "\n" not in e.value.message
    finally:
        rccl.load_library.cache_clear()


def test_an_rccl_without_ncclcommsplit_is_refused_in_one_line(tmp_path, monkeypatch):
    _build(tmp_path / "old", "-DFAKE_OLD")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "old"))
    rccl.load_library.cache_clear()
    try:
        with pytest.raises(OxlaError, match=r"librccl.so.1 has no ncclCommSplit \(too old"):
            rccl.load_library()
    finally:
        rccl.load_library.cache_clear()


def test_the_config_rccl_reads_is_a_prefix_of_the_shared_struct():
    """RCCL's ncclConfig_t of ROCm 6.x (fake_rccl.c's copy of its header, and the
    installed header where ROCm is here) is a prefix of NcclConfig, field for field."""
    names = [n for n, _ in NcclConfig._fields_]
    ours = ["size", "magic", "version", "blocking", "cgaClusterSize", "minCTAs", "maxCTAs",
            "netName", "splitShare", "trafficClass"]
    import re

    text = (HERE / "fake_rccl.c").read_text()
    struct = re.search(r"typedef struct \{\n  size_t size;(.*?)\} ncclConfig_t;", text, re.S)
    assert re.findall(r"(\w+)[;,]", "size;" + struct.group(1)) == ours
    assert names[:len(ours)] == ours
    for header in (Path("/opt/rocm/include/rccl/rccl.h"),):
        if header.exists():  # pragma: no cover - needs ROCm
            body = re.search(r"typedef struct ncclConfig_v\d+ \{(.*?)\} ncclConfig_t;",
                             header.read_text(), re.S).group(1)
            fields = re.findall(r"^\s*(?:const\s+)?(?:unsigned\s+)?\w+\s*\*?\s*(\w+);", body,
                                re.M)
            assert names[:len(fields)] == fields


class _Aborted(Exception):
    pass


class _Job(FakeComm):
    """The MPI job: 4 ranks, MPI_Abort recorded (the real one never returns)."""

    def __init__(self, rank: int):
        super().__init__(rank, after=0)
        self.codes: list[int] = []

    def Abort(self, code):  # noqa: N802 - mpi4py's name
        self.codes.append(code)
        raise _Aborted


def test_a_group_that_never_completes_aborts_rccl_then_the_job(fake_rccl, capfd):
    """The deadline policy over the real binding: the communicator is made, then a group
    stays ncclInProgress; past the timeout the rank names RCCL's op and itself, calls
    ncclCommAbort of its communicators, then MPI_Abort."""
    from oxla_codegen_llvm.gpu.nccl import NcclCollectives

    job = _Job(rank=2)
    nc = NcclCollectives(rccl.world(job), job, timeout=0.3, library="RCCL")
    fake_rccl.fake_set_async(10**9, 0)  # every later poll: in progress
    group = NcclGroup([nc.world], lambda: True)
    with pytest.raises(_Aborted):
        nc.wait(group.done, "RCCL 'all_reduce' (channel 1)")
    err = capfd.readouterr().err
    assert ("error: RCCL 'all_reduce' (channel 1) on rank 2 did not complete within 0.3s "
            "(OXLA_COLLECTIVE_TIMEOUT)") in err, err
    assert _log(fake_rccl)[-1] == "abort 0x1000" and len(job.codes) == 1
