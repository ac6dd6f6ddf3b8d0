#!/bin/sh
# Usage: btl_iwarpx_rget.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                           <mpi_bench> rget|control
# Which ob1 protocol carries a 1 MiB message over btl iwarpx, from the BTL's own counters.
# mpi_bench's bandwidth test (2 ranks, rank 0 sends windows of 64 nonblocking 1 MiB messages
# from 64 buffers, rank 1 receives them; 1 warm-up, 1 checked and 4 measured rounds, so 384
# messages, every byte of the checked round verified) must go by ob1's RGET protocol, zero
# copy, one RDMA Read per message:
#   - the receiver's gets = N, a positive multiple of the window (64), at least 6 rounds;
#   - the sender registered each message's buffer once (registrations = N) and the
#     registration cache turned them into at most 64 + 8 fi_mr_reg (one per buffer, cached);
#   - the sender's sends carried only headers: fewer than 256 bytes per message on average,
#     so no payload went through the send path (ob1's copy-in/out rendezvous or a fallback
#     after refused gets would send the data itself).
# Both ranks must also print the "refused by a busy provider" finalize line (shown as info).
#  rget:    the default parameters; the check above must pass.
#  control: btl_iwarpx_flags 1 (send only: no get), where ob1 must use its send protocol;
#           the run must still pass its data check and the check above must fail (so it can).
set -eu
prog=$5
mode=$6
# shellcheck source=tests/mpi/btl_iwarpx_common.sh
. "$(dirname "$0")/btl_iwarpx_common.sh"
[ -f "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_rget.XXXXXX")
trap 'rm -f "$log"' EXIT
case $mode in
  rget) set -- ;;
  control) set -- --mca btl_iwarpx_flags 1 ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
# mpirun options before the program: everything after it is the program's.
btl_run "$log" 2 "$@" "$prog" --tests bw --sizes 1m --iters 4 --warmup 1
[ "$rc" -eq 0 ] || { echo "FAIL: mpirun exited $rc (data check or run failed)"; exit 1; }
iwx_count "$log" '1048576 +4 +[0-9.]+' | grep -qv '^0$' ||
  { echo "FAIL: no 1 MiB bandwidth row from mpi_bench"; exit 1; }

# rank sends send_bytes gets registrations fi_mr_reg, from the finalize lines.
counters=$(sed -n 's/^\[[0-9]*,\([0-9]*\)\]<[a-z]*>:.*btl:iwarpx: finalize: sent \([0-9]*\) messages (\([0-9]*\) bytes), received [0-9]* ([0-9]* bytes), [0-9]* puts, \([0-9]*\) gets, [0-9]* atomics, \([0-9]*\) registrations (\([0-9]*\) fi_mr_reg).*/\1 \2 \3 \4 \5 \6/p' "$log")
n=$(printf '%s\n' "$counters" | grep -c . || true)
[ "$n" -eq 2 ] || { echo "FAIL: $n finalize counter lines, expected 2"; exit 1; }

# The refused-posts counters (posts ob1 had to queue and retry) are printed by both ranks.
refused=$(iwx_matches "$log" 'refused by a busy provider \(the PML queued and retried them\): [0-9]+ sends, [0-9]+ RDMA/atomics')
[ "$(printf '%s\n' "$refused" | grep -c .)" -eq 2 ] ||
  { echo "FAIL: expected 2 'refused by a busy provider' finalize lines"; exit 1; }
printf '%s\n' "$refused" | sed 's/^/info: /'

verdict=0
printf '%s\n' "$counters" | awk '
  $1 == 0 { s_sends = $2; s_bytes = $3; s_regs = $5; s_mrs = $6 }
  $1 == 1 { r_gets = $4 }
  END {
    printf "sender: %d sends (%d bytes), %d registrations (%d fi_mr_reg); receiver: %d gets\n",
           s_sends, s_bytes, s_regs, s_mrs, r_gets
    if (r_gets < 6 * 64 || r_gets % 64 != 0) {
      print "check: the receiver made " r_gets " gets, expected a multiple of 64, >= 384 (one per 1 MiB message)"
      exit 1
    }
    if (s_regs != r_gets) {
      print "check: the sender registered " s_regs " times for " r_gets " messages (one each expected)"
      exit 1
    }
    if (s_mrs > 64 + 8) {
      print "check: " s_mrs " fi_mr_reg for 64 buffers: the registration cache missed"
      exit 1
    }
    if (s_bytes >= 256 * r_gets) {
      print "check: the sender sent " s_bytes " bytes in messages: payload went by send"
      exit 1
    }
    print "check: one RDMA Read per 1 MiB message, buffers registered once, headers only by send"
  }' || verdict=1

case $mode in
  rget)
    [ "$verdict" -eq 0 ] || { echo "FAIL: 1 MiB did not go by RGET (one get per message)"; exit 1; }
    echo "PASS: 1 MiB messages by ob1 RGET over btl iwarpx: one get each, zero copy, data checked"
    ;;
  control)
    [ "$verdict" -ne 0 ] || { echo "FAIL: control (send only) passed the RGET check"; exit 1; }
    echo "PASS: control: with btl_iwarpx_flags 1 the RGET check fails (data still checked)"
    ;;
esac
