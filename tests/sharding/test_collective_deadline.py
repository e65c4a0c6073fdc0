"""The one deadline policy of a rank's collectives (oxla.sharding.mpi.wait_or_abort),
which the MPI path and the GPU backends' NCCL waits (real and simulated) share: it
returns when the test passes, and past the timeout or on an asynchronous error it names
the op and the rank, cancels, and aborts the job (a fake communicator here)."""

from __future__ import annotations

import time

import pytest

from oxla.errors import OxlaError
from oxla.sharding import mpi as M


class _Aborted(Exception):
    pass


class _Comm:
    def __init__(self):
        self.codes: list[int] = []

    def Abort(self, code):  # noqa: N802 - mpi4py's name
        self.codes.append(code)
        raise _Aborted  # (the real one never returns)


@pytest.fixture
def no_pause(monkeypatch):
    monkeypatch.setattr(M.time, "sleep", lambda s: None)


def test_a_test_that_passes_returns(no_pause):
    polls = iter([False, False, True])
    comm = _Comm()
    M.wait_or_abort(lambda: next(polls), "'all_reduce' (channel 1)", 0, 5.0, comm)
    assert comm.codes == []


def test_past_the_deadline_the_rank_names_the_op_cancels_and_aborts(no_pause, capfd,
                                                                    monkeypatch):
    clock = iter([0.0, 0.5, 1.0, 2.5])
    monkeypatch.setattr(M.time, "monotonic", lambda: next(clock))
    comm, cancelled, polls = _Comm(), [], []
    with pytest.raises(_Aborted):
        M.wait_or_abort(lambda: polls.append(1) and False, "NCCL 'all_gather' (channel 4)",
                        3, 2.0, comm, lambda: cancelled.append(1))
    err = capfd.readouterr().err
    assert err.count("error: NCCL 'all_gather' (channel 4) on rank 3 did not complete "
                     "within 2s (OXLA_COLLECTIVE_TIMEOUT)") == 1, err
    assert cancelled == [1] and comm.codes == [3] and len(polls) == 3


def test_an_asynchronous_error_aborts_at_once(no_pause, capfd):
    def test():
        raise OxlaError("ncclCommGetAsyncError failed with ncclResult_t 6")

    comm = _Comm()
    t0 = time.monotonic()
    with pytest.raises(_Aborted):
        M.wait_or_abort(test, "NCCL 'all_reduce' (channel 2)", 1, 300.0, comm,
                        lambda: (_ for _ in ()).throw(RuntimeError("cancel fails")))
    assert time.monotonic() - t0 < 5
    err = capfd.readouterr().err
    assert "error: NCCL 'all_reduce' (channel 2) on rank 1 failed: ncclCommGetAsyncError " \
        "failed with ncclResult_t 6; aborting every rank" in err, err
    assert comm.codes == [3]  # a failing cancel does not keep the job alive
