#!/bin/sh
# Usage: mpit_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir> <mpit>
#                     <ranks> run|tcp-control|sctp|sctp-control|sctp-1stream [sub-test...]
# Runs the project's MPI acceptance program mpit (tests/mpi/mpit_*.c; all default sub-tests, or
# the ones named) with <ranks> ranks over --mca pml ob1 --mca btl self,iwarpx on loopback
# (btl_iwarpx_lib.sh: oversubscribed, no binding, yield when idle), bounded by 200 s.
# run:         mpirun must exit 0, rank 0 must print "mpit: <sub-test> OK" for each sub-test
#              and "mpit: OK <ranks> ranks", and the BTL's own verbose lines must show that it
#              carried the traffic (every rank's module ready and finalize counters with sends
#              and receives; puts/gets somewhere when p2p ran, whose large messages go by RDMA).
# tcp-control: the proof that the check above can fail. btl self,tcp,iwarpx with
#              btl_tcp_exclusivity 4096, i.e. the iwarpx module is ready but tcp is preferred
#              and carries everything: mpit must pass while the BTL check must fail.
# sctp:        as run, with --mca btl_iwarpx_p2p sctp (btl_iwarpx_if_include lo): the BTL
#              check also wants sendi > 0 when p2p runs, and iwx_check_sctp must prove the
#              point-to-point traffic went over SCTP associations (every message of every
#              rank, and the provider's own "connecting ... over sctp" lines match the
#              associations the BTL counted).
#              iwx_check_sctp_streams must show messages on SCTP streams other than 0
#              (btl_iwarpx_sctp_streams, default 4: messages over 4 KiB go on streams 1..3).
# sctp-control: the same run with p2p left on datagrams: mpit must pass and iwx_check_sctp
#              must fail (the proof that it can).
# sctp-1stream: p2p over SCTP with btl_iwarpx_sctp_streams 1: mpit and iwx_check_sctp must
#              pass and iwx_check_sctp_streams must fail (every message on stream 0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=btl_iwarpx_lib.sh
. "$here/btl_iwarpx_lib.sh"
if [ $# -lt 7 ]; then
  echo "usage: $0 mpirun ompi_dir mca_dir fi_dir mpit ranks run|tcp-control [sub-test...]"
  exit 2
fi
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
mpit=$5
np=$6
mode=$7
shift 7
tests=${*:-p2p anysrc many2one probe dtype coll}
log=$(mktemp "${TMPDIR:-/tmp}/mpit_test.XXXXXX")
trap 'rm -f "$log"' EXIT
extra=""
if [ "$mode" = tcp-control ]; then
  IWX_BTL=self,tcp,iwarpx # read by iwx_mpirun
  export IWX_BTL
  extra="--mca btl_tcp_exclusivity 4096 --mca btl_tcp_if_include lo"
elif [ "$mode" = sctp ]; then
  extra="--mca btl_iwarpx_p2p sctp"
elif [ "$mode" = sctp-1stream ]; then
  extra="--mca btl_iwarpx_p2p sctp --mca btl_iwarpx_sctp_streams 1"
elif [ "$mode" != run ] && [ "$mode" != sctp-control ]; then
  echo "FAIL: unknown mode '$mode'"
  exit 2
fi
case $mode in
  sctp*)
    # The provider's connection lines are iwx_check_sctp's second witness.
    extra="$extra --mca btl_iwarpx_if_include lo -x FI_LOG_LEVEL=info -x FI_LOG_SUBSYS=ep_ctrl"
    ;;
esac
rc=0
start=$(date +%s)
# shellcheck disable=SC2086  # $extra and $* are word lists
iwx_mpirun "$log" 200 "$np" $extra "$mpit" "$@" || rc=$?
cat "$log"
echo "mpirun exited $rc after $(($(date +%s) - start)) s"
if [ $rc -ne 0 ]; then
  echo "FAIL: mpirun (mpit $tests, $np ranks, $mode) exited $rc"
  exit 1
fi
fail=0
for t in $tests; do
  grep -q "mpit: $t OK $np ranks" "$log" || { echo "FAIL: no 'mpit: $t OK' line"; fail=1; }
done
grep -q "mpit: OK $np ranks" "$log" || { echo "FAIL: no final OK line from rank 0"; fail=1; }
rdma=none
case " $tests " in *" p2p "*) rdma=rdma ;; esac
# Over SCTP small messages go by sendi (inject on the association): required with p2p.
case $mode in sctp | sctp-1stream) [ "$rdma" = rdma ] && rdma=rdma,sendi ;; esac
check=0
iwx_check_btl "$log" "$np" "$rdma" || check=1
if [ "$mode" = tcp-control ]; then
  [ $fail -eq 0 ] || exit 1
  if [ $check -eq 0 ]; then
    echo "FAIL: the BTL check passed although btl tcp carried the traffic"
    exit 1
  fi
  echo "PASS: tcp carried mpit ($tests) and the iwarpx check refused the run, as it must"
  exit 0
fi
[ $check -eq 0 ] || fail=1
case $mode in
  sctp)
    iwx_check_sctp "$log" "$np" || fail=1
    iwx_check_sctp_streams "$log" "$np" || fail=1
    [ $fail -eq 0 ] && echo "PASS: mpit ($tests) over btl self,iwarpx, p2p over SCTP, $np ranks"
    exit $fail
    ;;
  sctp-1stream)
    iwx_check_sctp "$log" "$np" || fail=1
    [ $fail -eq 0 ] || exit 1
    if iwx_check_sctp_streams "$log" "$np"; then
      echo "FAIL: the stream check passed although btl_iwarpx_sctp_streams was 1"
      exit 1
    fi
    echo "PASS: p2p over SCTP on one stream carried mpit ($tests) and the stream check refused it"
    exit 0
    ;;
  sctp-control)
    [ $fail -eq 0 ] || exit 1
    if iwx_check_sctp "$log" "$np"; then
      echo "FAIL: the SCTP check passed although p2p stayed on datagrams"
      exit 1
    fi
    echo "PASS: p2p on datagrams carried mpit ($tests) and the SCTP check refused the run"
    exit 0
    ;;
esac
[ $fail -eq 0 ] && echo "PASS: mpit ($tests) over btl self,iwarpx, $np ranks"
exit $fail
