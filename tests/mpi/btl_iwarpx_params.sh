#!/bin/sh
# Usage: btl_iwarpx_params.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                             <mpi_smoke> sctp|send_rules
# The BTL's own run-time parameters at work (their listing is tests/mca/mca_ompi_info.sh):
#  sctp:       btl_iwarpx_p2p=sctp — SCTP point-to-point is not there yet (issue 8), so every
#              rank's module must decline with the verbose-1 line saying so, and with
#              btl self,iwarpx the job must then fail promptly (nothing reaches the peers);
#  send_rules: btl_iwarpx_send_rules=<chain> must reach the provider's environment as
#              FI_IWARPX_SEND_RULES in every rank (the BTL logs the value it reads back after
#              setenv), replacing a different FI_IWARPX_SEND_RULES passed with -x (logged),
#              and mpi_smoke still passes.
set -eu
prog=$5
mode=$6
# shellcheck source=tests/mpi/btl_iwarpx_common.sh
. "$(dirname "$0")/btl_iwarpx_common.sh"
[ -f "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_params.XXXXXX")
trap 'rm -f "$log"' EXIT
np=2
case $mode in
  sctp)
    btl_run "$log" $np "$prog" --mca btl_iwarpx_p2p sctp
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "FAIL: with btl_iwarpx_p2p=sctp mpirun exited $rc (expected a prompt failure)"
      exit 1
    fi
    n=$(grep -c "btl:iwarpx: sctp point-to-point is not available yet (issue 8)" "$log" || true)
    [ "$n" -eq $np ] || { echo "FAIL: $n ranks said sctp is not available, expected $np"; exit 1; }
    if grep -q "btl:iwarpx: module ready" "$log"; then
      echo "FAIL: a module was created with btl_iwarpx_p2p=sctp"
      exit 1
    fi
    echo "PASS: btl_iwarpx_p2p=sctp declines on every rank (issue 8) and MPI fails ($rc)" ;;
  send_rules)
    rules='size<=2048:ud_sr,any:ud_zcopy'
    FI_IWARPX_SEND_RULES='any:ud_sr' btl_run "$log" $np "$prog" \
      -x FI_IWARPX_SEND_RULES --mca btl_iwarpx_send_rules "$rules"
    [ "$rc" -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
    grep -q "^\[[0-9]*,0\]<stdout>:mpi_smoke: OK $np ranks" "$log" ||
      { echo "FAIL: no OK line from mpi_smoke"; exit 1; }
    n=$(grep -cF "btl:iwarpx: FI_IWARPX_SEND_RULES=\"$rules\" for the provider" "$log" || true)
    [ "$n" -eq $np ] || { echo "FAIL: $n ranks exported the rules, expected $np"; exit 1; }
    n=$(grep -cF 'btl_iwarpx_send_rules replaces FI_IWARPX_SEND_RULES="any:ud_sr"' "$log" || true)
    [ "$n" -eq $np ] || { echo "FAIL: $n ranks logged the replaced value, expected $np"; exit 1; }
    echo "PASS: btl_iwarpx_send_rules reaches FI_IWARPX_SEND_RULES on every rank" ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
