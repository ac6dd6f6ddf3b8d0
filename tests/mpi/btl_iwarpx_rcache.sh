#!/bin/sh
# Usage: btl_iwarpx_rcache.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                             <mpi_rcache> cache|nocache|cap
# The BTL's registration cache (rcache grdma) under osc rdma and ob1: mpi_rcache (2 ranks)
# puts 200 times alternately from two buffers, sends 40 MiB-messages from one buffer and puts from a
# buffer freed and reallocated 24 times, every byte checked at the target, with
# btl_iwarpx_local_registration_threshold=0 so osc rdma registers its origin buffers.
#  cache:   the registration count (register_mem calls) must be > 4x the fi_mr_reg count
#           (reuse hits the cache), and rank 0's fi_mr_reg count must be at least the number
#           of reallocations that came back at the same address (the freed range was
#           invalidated, not served from the cache);
#  nocache: the control, btl_iwarpx_mr_cache=0: every registration is one fi_mr_reg, so
#           the counters themselves are shown to count;
#  cap:     btl_iwarpx_mr_cache_max=2: rank 0's window MR (in use) and one cached MR fill the
#           cap, so each put from the other buffer must evict the unused one (LRU): rank 0
#           needs at least one fi_mr_reg per two puts, and the data is still right.
set -eu
prog=$5
mode=$6
# shellcheck source=tests/mpi/btl_iwarpx_common.sh
. "$(dirname "$0")/btl_iwarpx_common.sh"
[ -f "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_rcache.XXXXXX")
trap 'rm -f "$log"' EXIT
cache=1
max=4096
case $mode in
  nocache) cache=0 ;;
  cap) max=2 ;;
  cache) ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
btl_run "$log" 2 "$prog" --mca btl_iwarpx_local_registration_threshold 0 \
  --mca btl_iwarpx_mr_cache "$cache" --mca btl_iwarpx_mr_cache_max "$max"
[ "$rc" -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
ok=$(sed -n 's/.*mpi_rcache: OK 2 ranks, \([0-9]*\) puts, [0-9]* sends, \([0-9]*\) reallocations, \([0-9]*\) at the same address.*/\1 \2 \3/p' "$log")
[ -n "$ok" ] || { echo "FAIL: no OK line from mpi_rcache"; exit 1; }
set -- $ok
puts=$1 reallocs=$2 same=$3
counters=$(btl_counters "$log")
n=$(printf '%s\n' "$counters" | grep -c . || true)
[ "$n" -eq 2 ] || { echo "FAIL: $n finalize counter lines, expected 2"; exit 1; }
printf '%s\n' "$counters" | awk -v mode="$mode" -v puts="$puts" -v same="$same" '
  { regs += $7; mrs += $8; if ($1 == 0) { r0puts = $4; r0mrs = $8; r0regs = $7 } }
  END {
    printf "registrations %d, fi_mr_reg %d (rank 0: %d puts, %d registrations, %d fi_mr_reg)\n",
           regs, mrs, r0puts, r0regs, r0mrs
    if (r0puts < puts) { print "FAIL: rank 0 made " r0puts " puts, expected at least " puts; exit 1 }
    if (r0regs < puts) { print "FAIL: rank 0 registered " r0regs " times, expected >= " puts; exit 1 }
    if (mode == "nocache") {
      if (mrs != regs) { print "FAIL: without the cache fi_mr_reg must equal registrations"; exit 1 }
      print "ok: without the cache every registration is an fi_mr_reg"
      exit 0
    }
    if (mode == "cap") {
      if (r0mrs * 2 < puts) {
        print "FAIL: with btl_iwarpx_mr_cache_max=2 rank 0 made only " r0mrs " fi_mr_reg for " puts " puts from two buffers: nothing was evicted"
        exit 1
      }
      print "ok: at the cap unused registrations were evicted (" r0mrs " fi_mr_reg on rank 0)"
      exit 0
    }
    if (mrs * 4 >= regs) { print "FAIL: the cache saved too little (fi_mr_reg x4 >= registrations)"; exit 1 }
    if (r0mrs < same) {
      print "FAIL: rank 0 made " r0mrs " fi_mr_reg for " same " reallocations at a freed address: stale registrations were reused"
      exit 1
    }
    print "ok: registrations " regs " -> fi_mr_reg " mrs "; reallocated buffers re-registered"
  }' || exit 1
grep -q "registration cache grdma, keeps unused MRs" "$log" || [ "$mode" = nocache ] ||
  { echo "FAIL: the module did not report a registration cache that keeps unused MRs"; exit 1; }
echo "PASS: registration cache ($mode): $puts puts, $reallocs reallocations ($same at the same address), data checked"
