#!/usr/bin/env bash
# The cuda backend's checks on a real NVIDIA GPU (issue #14), as one prepared run:
# installs what it needs, runs the conformance suite on the device (parallel jobs) and
# bench/cuda_vs_xla.py, and writes every result under OUT (default out/cuda_device).
# Budget: about 8 minutes on 16 cores; --quick runs a smaller set. Not run in CI.
#
#   bash bench/cuda_device_check.sh [--quick] [OUT]
set -euo pipefail
QUICK=""
if [[ "${1:-}" == "--quick" ]]; then QUICK="--quick"; shift; fi
OUT="${1:-out/cuda_device}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
if ! python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null; then
  echo "error: no NVIDIA driver (libcuda.so.1 not found): bench/cuda_device_check.sh was not run" >&2
  exit 2
fi
PY=.venv/bin/python
[[ -x $PY ]] || { python3 -m venv .venv; PY=.venv/bin/python; }
$PY -m pip install -q -e . -e extensions/codegen_llvm -e extensions/backend_cpu \
  -e 'extensions/backend_cuda[fft]' -e extensions/frontend_torch -e extensions/frontend_jax \
  'jax[cuda13]' torch transformers > "$OUT/install.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.csv" || true
JOBS=$(( $(nproc) > 16 ? 16 : $(nproc) ))
CONF=../shared/conformance/stablehlo
if [[ -n $QUICK ]]; then CONF=../shared/conformance/stablehlo/interpret; fi
timeout 300 .venv/bin/oxla conformance "$CONF" --backend cuda -j "$JOBS" \
  --json "$OUT/conformance_cuda.json" > "$OUT/conformance_cuda.txt" 2>&1 || true
timeout 240 $PY bench/cuda_vs_xla.py $QUICK --json "$OUT/cuda_vs_xla.json" \
  > "$OUT/cuda_vs_xla.txt" 2>&1 || true
tail -3 "$OUT/conformance_cuda.txt" "$OUT/cuda_vs_xla.txt"
