#!/bin/sh
# Usage: btl_iwarpx_direct.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                             <mpi_btl_direct> flush_in_cb|drain_del_procs|drain_finalize
# Robustness of the iwarpx BTL module, driven directly through the BTL interface in a 1-rank
# job (tests/mpi/mpi_btl_direct.c says what each scenario checks): a flush from inside a
# completion callback returns; del_procs and finalize let every posted operation's callback
# run first. A hang is a failure too (the job is bounded by timeout).
set -eu
prog=$5
scenario=$6
# shellcheck source=tests/mpi/btl_iwarpx_common.sh
. "$(dirname "$0")/btl_iwarpx_common.sh"
[ -f "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_direct.XXXXXX")
trap 'rm -f "$log"' EXIT
btl_run "$log" 1 "$prog" "$scenario"
[ "$rc" -eq 0 ] || { echo "FAIL: mpirun exited $rc (124: timed out, e.g. a flush spinning)"; exit 1; }
grep -q "mpi_btl_direct: OK $scenario" "$log" || { echo "FAIL: no OK line"; exit 1; }
grep -q "btl:iwarpx: module ready" "$log" || { echo "FAIL: no iwarpx module"; exit 1; }
if grep -q "still pending after" "$log"; then
  echo "FAIL: operations were left pending"
  exit 1
fi
echo "PASS: $scenario"
