#!/bin/sh
# Usage: mpi4py_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                       <mpi4py_smoke.py> [sctp]
# A real mpi4py client (Debian's python3-mpi4py, run by /usr/bin/python3: the python3 first on
# PATH may be another build that does not see Debian's packages) with 2 ranks over
#   --mca pml ob1 --mca btl self,iwarpx --mca osc rdma
# (btl_iwarpx_lib.sh). mpi4py initialises MPI with MPI_THREAD_MULTIPLE: both ranks must report
# that level, so the BTL and osc rdma are exercised under it. mpirun must exit 0 within 120 s,
# rank 0 must print "mpi4py_smoke: OK", and the BTL's counters must show that it carried the
# messages and the puts, gets and atomics of the windows (osc rdma over btl iwarpx).
# sctp: the same with --mca btl_iwarpx_p2p sctp (if_include lo), and iwx_check_sctp must prove
# the messages went over SCTP associations (under MPI_THREAD_MULTIPLE).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=btl_iwarpx_lib.sh
. "$here/btl_iwarpx_lib.sh"
[ $# -eq 5 ] || [ $# -eq 6 ] || { echo "usage: $0 mpirun ompi_dir mca_dir fi_dir mpi4py_smoke.py [sctp]"; exit 2; }
mode=${6:-datagram}
extra=""
case $mode in
  datagram) ;;
  sctp) extra="--mca btl_iwarpx_p2p sctp --mca btl_iwarpx_if_include lo -x FI_LOG_LEVEL=info -x FI_LOG_SUBSYS=ep_ctrl" ;;
  *) echo "FAIL: unknown mode $mode"; exit 2 ;;
esac
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
script=$5
py=/usr/bin/python3
if ! out=$("$py" -c 'import mpi4py; print(mpi4py.__version__)' 2>&1); then
  echo "FAIL: $py cannot import mpi4py (install python3-mpi4py, as autogen.sh does): $out"
  exit 1
fi
echo "mpi4py $out"
log=$(mktemp "${TMPDIR:-/tmp}/mpi4py_test.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2086  # $extra is a word list
iwx_mpirun "$log" 120 2 --mca osc rdma $extra "$py" "$script" || rc=$?
cat "$log"
if [ $rc -ne 0 ]; then
  echo "FAIL: mpirun (mpi4py, btl self,iwarpx, osc rdma) exited $rc"
  exit 1
fi
fail=0
grep -q "mpi4py_smoke: OK" "$log" || { echo "FAIL: no OK line from rank 0"; fail=1; }
n=$(iwx_count "$log" "mpi4py_smoke: rank [01] thread level multiple")
[ "$n" -eq 2 ] || { echo "FAIL: $n of 2 ranks run with MPI_THREAD_MULTIPLE"; fail=1; }
iwx_check_btl "$log" 2 osc || fail=1
if [ "$mode" = sctp ]; then iwx_check_sctp "$log" 2 || fail=1; fi
[ $fail -eq 0 ] && echo "PASS: mpi4py over btl self,iwarpx ($mode p2p) + osc rdma (THREAD_MULTIPLE)"
exit $fail
