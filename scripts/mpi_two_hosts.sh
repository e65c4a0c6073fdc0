#!/bin/bash
# Runs a sharded program on two "hosts" simulated by network namespaces on this machine:
# ranks talk TCP over a veth pair (10.77.0.1 <-> 10.77.0.2), MPICH's launcher is wrapped
# to enter each namespace (with its own hostname), 2 ranks per host. Needs root (ip netns).
#
#   scripts/mpi_two_hosts.sh ARTIFACT.oxla EXPECTED.npy INPUT.npy...
#
# Prints the bytes that crossed the link and exits non-zero when the result differs.
set -euo pipefail
cd "$(dirname "$0")/.."
art=$1; expected=$2; shift 2
tag=ox$$
h1=${tag}a; h2=${tag}b
work=$(mktemp -d)
cleanup() { ip netns del "$h1" 2>/dev/null || true; ip netns del "$h2" 2>/dev/null || true
            rm -rf "$work"; }
trap cleanup EXIT
for h in "$h1" "$h2"; do ip netns add "$h"; ip -n "$h" link set lo up; done
ip link add "${tag}1" type veth peer name "${tag}2"
ip link set "${tag}1" netns "$h1"; ip link set "${tag}2" netns "$h2"
ip -n "$h1" addr add 10.77.0.1/24 dev "${tag}1"; ip -n "$h2" addr add 10.77.0.2/24 dev "${tag}2"
ip -n "$h1" link set "${tag}1" up; ip -n "$h2" link set "${tag}2" up
cat > "$work/enter.sh" <<SH
#!/bin/sh
# what hydra runs instead of ssh: [options] HOST COMMAND...
while [ "\${1#-}" != "\$1" ]; do shift; done
case "\$1" in 10.77.0.1) ns=$h1;; 10.77.0.2) ns=$h2;; *) ns=\$1;; esac
shift
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
SH
chmod +x "$work/enter.sh"
ins=(); for x in "$@"; do ins+=(--input "$(realpath "$x")"); done
tx() { ip -n "$h1" -s link show "${tag}1" | awk '/TX:/{getline; print $1}'; }
before=$(tx)
# ofi's tcp provider: ranks on different hosts exchange data over the veth link
ip netns exec "$h1" unshare --uts sh -c "hostname $h1; \
  MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp $(realpath .venv/bin/oxla) launch -n 4 \
  --hosts 10.77.0.1:2,10.77.0.2:2 --mpiexec-arg=-genvall --mpiexec-arg=-launcher \
  --mpiexec-arg=ssh --mpiexec-arg=-launcher-exec --mpiexec-arg=$work/enter.sh \
  --mpiexec-arg=-iface --mpiexec-arg=${tag}1 $(realpath "$art") ${ins[*]} \
  --output $work/out.npy"
echo "bytes sent over the link by host 1: $(( $(tx) - before ))"
.venv/bin/python - "$work/out.npy" "$expected" <<'PY'
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got - want).max())
print(f"max |error| vs expected: {err:.3g}")
sys.exit(0 if err <= 1e-5 * max(1.0, float(np.abs(want).max())) else 1)
PY
