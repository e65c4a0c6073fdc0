"""Which GPU a process takes: one process per GPU under a launcher takes device
``local_rank % device_count`` (the launcher's local-rank variable, or oxla's
OXLA_LOCAL_RANK), OXLA_CUDA_DEVICE=N overrides it, and the simulated device counts
OXLA_SIM_DEVICE_COUNT devices so a simulated job makes the same choice (the 4-rank check
is tests/sharding's mpi_nccl_sim.py)."""

from __future__ import annotations

import pytest
from oxla_codegen_llvm.gpu.device import (
    LOCAL_RANK_VARS,
    DeviceChoice,
    choice_from_env,
    local_rank,
)

from oxla.errors import OxlaError


@pytest.fixture
def clean(monkeypatch):
    """No launcher variable, no device variable."""
    for name in LOCAL_RANK_VARS + ("OXLA_CUDA_DEVICE", "OXLA_SIM_DEVICE_COUNT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("var", ["MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                 "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                                 "SLURM_LOCALID"])
def test_each_launchers_local_rank_is_read(clean, var):
    clean.setenv(var, "5")
    assert local_rank() == 5
    clean.setenv("OXLA_LOCAL_RANK", "2")  # oxla's own comes first (a user's override)
    assert local_rank() == 2


def test_without_a_launcher_there_is_no_local_rank(clean):
    assert local_rank() is None
    assert choice_from_env("OXLA_CUDA_DEVICE") == DeviceChoice("driver", 0, None)
    assert DeviceChoice("driver", 0, None).device_ordinal(8) == 0


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_malformed_local_rank_is_an_error_naming_the_variable(clean, value):
    clean.setenv("MPI_LOCALRANKID", value)
    with pytest.raises(OxlaError, match=f"MPI_LOCALRANKID must be a local rank.*'{value}'"):
        choice_from_env("OXLA_CUDA_DEVICE")


@pytest.mark.parametrize("rank,count,want", [(0, 4, 0), (3, 4, 3), (5, 4, 1), (7, 8, 7),
                                             (3, 1, 0), (6, 3, 0)])
def test_the_ordinal_is_the_local_rank_modulo_the_device_count(clean, rank, count, want):
    clean.setenv("OMPI_COMM_WORLD_LOCAL_RANK", str(rank))
    for value in ("", "auto", "sim"):
        clean.setenv("OXLA_CUDA_DEVICE", value)
        c = choice_from_env("OXLA_CUDA_DEVICE")
        assert c.local_rank == rank and c.device_ordinal(count) == want


def test_an_explicit_device_number_overrides_the_local_rank(clean):
    clean.setenv("MPI_LOCALRANKID", "3")
    clean.setenv("OXLA_CUDA_DEVICE", "1")
    c = choice_from_env("OXLA_CUDA_DEVICE")
    assert c == DeviceChoice("driver", 1, None) and c.device_ordinal(4) == 1


def test_no_device_under_a_launcher_is_an_error(clean):
    with pytest.raises(OxlaError, match="0 devices"):
        DeviceChoice("driver", 0, 2).device_ordinal(0)


@pytest.mark.parametrize("count,rank,want", [(None, 3, 0), ("2", 3, 1), ("4", 6, 2)])
def test_the_simulated_device_takes_its_ordinal_the_same_way(clean, count, rank, want):
    from oxla_backend_cuda.runtime import _make

    if count is not None:
        clean.setenv("OXLA_SIM_DEVICE_COUNT", count)
    clean.setenv("MPI_LOCALRANKID", str(rank))
    clean.setenv("OXLA_CUDA_DEVICE", "sim")
    assert _make(choice_from_env("OXLA_CUDA_DEVICE")).ordinal == want


def test_a_bad_simulated_device_count_is_an_error(clean):
    from oxla_backend_cuda.runtime import _make

    clean.setenv("OXLA_SIM_DEVICE_COUNT", "0")
    with pytest.raises(OxlaError, match="OXLA_SIM_DEVICE_COUNT must be a positive integer"):
        _make(DeviceChoice("sim", 0, 1))
