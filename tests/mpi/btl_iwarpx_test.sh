#!/bin/sh
# Usage: btl_iwarpx_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                           <mpi_smoke> <ranks> [disabled]
# The project's own BTL (ompi_btl_iwarpx) over the iwarpx RDM endpoint (issue 6):
#   --mca pml ob1 --mca btl self,iwarpx --mca osc rdma
# runs mpi_smoke (p2p 0 B..4 MiB checked, any source, ordering, Bcast/Allreduce/Alltoall,
# Put/Get with fence, Accumulate under locks) on loopback. With only self and iwarpx, a
# disqualified BTL makes MPI_Init fail; on top of that every rank must print the BTL's
# verbose lines, and its finalize counters must show sends, and somewhere puts, gets and
# atomics (osc rdma's traffic) and sendi (immediate sends of small messages) carried by
# the BTL (btl_iwarpx_lib.sh: iwx_check_btl). Bounded by timeout; mpirun tears its ranks down
# on SIGTERM.
# "disabled" is the control: with btl_iwarpx_enable=0 the same command line must fail (MPI
# cannot reach the peers with btl self alone) within the time bound, so a run in which the
# BTL quietly did nothing cannot pass the main test.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=btl_iwarpx_lib.sh
. "$here/btl_iwarpx_lib.sh"
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
smoke=$5
np=$6
mode=${7:-run}
extra=""
[ "$mode" = disabled ] && extra="--mca btl_iwarpx_enable 0"
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_test.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2086
iwx_mpirun "$log" 120 "$np" --mca osc rdma $extra "$smoke" || rc=$?
cat "$log"
if [ "$mode" = disabled ]; then
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    echo "FAIL: with btl_iwarpx_enable=0 mpirun exited $rc (expected a prompt failure)"
    exit 1
  fi
  grep -q "btl:iwarpx: disabled by btl_iwarpx_enable=0" "$log" ||
    { echo "FAIL: the BTL did not log that it was disabled"; exit 1; }
  echo "PASS: without the iwarpx module MPI fails ($rc), as it must"
  exit 0
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: mpirun (btl self,iwarpx, $np ranks) exited $rc"
  exit 1
fi
fail=0
grep -q "mpi_smoke: OK $np ranks" "$log" || { echo "FAIL: no OK line from rank 0"; fail=1; }
# Small messages (0..64 B in mpi_smoke, collectives) fit the inject size: sendi.
iwx_check_btl "$log" "$np" osc,sendi || fail=1
[ $fail -eq 0 ] && echo "PASS: btl self,iwarpx + osc rdma, $np ranks"
exit $fail
