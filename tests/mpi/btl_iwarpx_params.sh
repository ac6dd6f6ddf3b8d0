#!/bin/sh
# Usage: btl_iwarpx_params.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                             <mpi_smoke|mpit> sctp_kernel|send_rules
# The BTL's own run-time parameters at work (their listing is tests/mca/mca_ompi_info.sh):
#  sctp_kernel: btl_iwarpx_p2p=sctp where SCTP cannot run: FI_IWARPX_SCTP_BACKEND=kernel on a
#              kernel without SCTP (exit 77, skipped, where the kernel has it). Every rank's
#              module must decline with the verbose-1 line saying why; with btl self,iwarpx
#              the job must then fail promptly (nothing reaches the peers), and with
#              btl self,tcp,iwarpx mpit (p2p, coll; its program argument) must pass over tcp.
#              (p2p over SCTP at work: mpit_test.sh sctp.)
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
  sctp_kernel)
    if /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)' 2>/dev/null; then
      echo "SKIP: this kernel has SCTP, so FI_IWARPX_SCTP_BACKEND=kernel would run"
      exit 77
    fi
    decline="btl:iwarpx: btl_iwarpx_p2p=sctp but the provider offers no FI_EP_MSG over SCTP here (FI_IWARPX_SCTP_BACKEND=kernel"
    FI_IWARPX_SCTP_BACKEND=kernel btl_run "$log" $np -x FI_IWARPX_SCTP_BACKEND \
      --mca btl_iwarpx_p2p sctp "$prog" p2p coll
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "FAIL: with btl_iwarpx_p2p=sctp and no SCTP mpirun exited $rc (expected a prompt failure)"
      exit 1
    fi
    n=$(grep -oF -- "$decline" "$log" | wc -l)
    [ "$n" -eq $np ] || { echo "FAIL: $n ranks declined p2p=sctp, expected $np"; exit 1; }
    if grep -q "btl:iwarpx: module ready" "$log"; then
      echo "FAIL: a module was created with btl_iwarpx_p2p=sctp and no SCTP"
      exit 1
    fi
    echo "ok: without SCTP every rank declines and MPI over btl self,iwarpx fails ($rc)"
    rc=0
    IWX_BTL=self,tcp,iwarpx FI_IWARPX_SCTP_BACKEND=kernel iwx_mpirun "$log" 120 $np --tag-output \
      -x FI_IWARPX_SCTP_BACKEND --mca btl_iwarpx_p2p sctp --mca btl_tcp_if_include lo "$prog" p2p coll ||
      rc=$?
    cat "$log"
    [ "$rc" -eq 0 ] || { echo "FAIL: over btl self,tcp,iwarpx mpirun exited $rc"; exit 1; }
    n=$(grep -oF -- "$decline" "$log" | wc -l)
    [ "$n" -eq $np ] || { echo "FAIL: $n ranks declined p2p=sctp, expected $np"; exit 1; }
    iwx_count "$log" "mpit: OK $np ranks" | grep -qx 1 ||
      { echo "FAIL: no OK line from mpit over tcp"; exit 1; }
    echo "PASS: btl_iwarpx_p2p=sctp without SCTP declines on every rank; MPI fails over iwarpx only and passes over tcp" ;;
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
