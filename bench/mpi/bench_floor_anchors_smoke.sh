#!/usr/bin/env bash
# Usage: bench_floor_anchors_smoke.sh <source dir> <build dir>
# Smoke test of scripts/bench_floor.sh --anchors (label "mpi"): one short round of the raw
# measures and of the anchors (osc pt2pt and btl tcp through mpirun, `tcp;ofi_rxm` through
# tagged_bw), --strict. The script must exit 0, and its Ceilings table must hold the five
# targets and the datagram path's bound (the cold UDP flow with CRC32c against rxm), each
# with a numeric anchor, a numeric per-round ratio over 1 round and one of the verdicts:
# an anchor whose result went missing reads "n/a" and fails this check.
# Bounded by timeout (the script also bounds every mpirun and every pair itself).
set -uo pipefail
src=$1
build=$2
out=$(mktemp "${TMPDIR:-/tmp}/bench_floor_anchors_smoke.XXXXXX")
err=$out.err
trap 'rm -f "$out" "$err"' EXIT
fail=0

rc=0
timeout -k 10 280 "$src/scripts/bench_floor.sh" --build "$build" --no-build --repeat 1 \
  --min-time 0.05 --strict --anchors >"$out" 2>"$err" || rc=$?
cat "$out"
sed 's/^/stderr: /' "$err"
((rc == 0)) || { echo "FAIL: bench_floor.sh --anchors exited $rc"; fail=1; }
grep -q '^| issue | target | anchor median | raw / anchor per round: median (min-max) | verdict |$' \
  "$out" || { echo "FAIL: no Ceilings table header"; fail=1; }
num='[0-9]+(\.[0-9]+)?'
verdicts='(cannot be met here: sockets alone take more|reachable|above the best raw flow here|within the raw flows)'
for target in "7 \\| MPI_Put 8 B lock/flush latency / osc pt2pt <= 0.30" \
  "7 \\| MPI_Get 1m lock/flush bandwidth / osc pt2pt >= 2.00" \
  "6 \\| 8 B latency / btl tcp <= 0.80" \
  "6 \\| 1m bandwidth / btl tcp >= 1.30" \
  "4 \\| 1m tagged bandwidth / tcp;ofi_rxm >= 1.00" \
  "4 \\| 1m tagged bandwidth / tcp;ofi_rxm, cold UDP flow with CRC32c >= 1.00"; do
  row="^\\| $target \\| $num \\| $num \\($num-$num\\), 1 round \\| $verdicts \\|\$"
  grep -Eq "$row" "$out" || { echo "FAIL: no complete row for: ${target//\\/}"; fail=1; }
done
exit "$fail"
