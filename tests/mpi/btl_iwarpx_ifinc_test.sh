#!/bin/sh
# Usage: btl_iwarpx_ifinc_test.sh <mpirun> <Open MPI component dir> <build mca dir>
#                                 <provider dir> <mpit> lo|subnet|nomatch|bad
# btl_iwarpx_if_include on loopback (the two-host case is mpit_netns_test.sh), 2 ranks, mpit
# "anysrc" over --mca pml ob1 --mca btl self,iwarpx (btl_iwarpx_lib.sh):
#   lo:      "lo" (an interface name): both ranks log "binding to 127.0.0.1 (lo", mpit passes
#            and the BTL carried the traffic;
#   subnet:  "127.0.0.0/8" (a CIDR subnet): the same;
#   nomatch: "iwxnosuch0" (an interface name nothing has): every rank logs that no
#            interface matches, no module is made, and MPI fails within 60 s;
#   bad:     "10.1.2.3/40" (not a subnet): every rank logs the malformed entry, no module, MPI
#            fails within 60 s.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=btl_iwarpx_lib.sh
. "$here/btl_iwarpx_lib.sh"
[ $# -eq 6 ] || { echo "usage: $0 mpirun ompi_dir mca_dir fi_dir mpit lo|subnet|nomatch|bad"; exit 2; }
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
mpit=$5
mode=$6
case $mode in
  lo) value=lo want="btl:iwarpx: binding to 127.0.0.1 (lo, if_include 'lo')" ;;
  subnet) value=127.0.0.0/8 want="btl:iwarpx: binding to 127.0.0.1 (lo, if_include '127.0.0.0/8')" ;;
  nomatch) value=iwxnosuch0 want="btl:iwarpx: no interface that is up matches btl_iwarpx_if_include 'iwxnosuch0'" ;;
  bad) value=10.1.2.3/40 want="btl:iwarpx: btl_iwarpx_if_include entry '10.1.2.3/40' is not an interface name or an IPv4 a.b.c.d/n subnet" ;;
  *) echo "FAIL: unknown mode '$mode'"; exit 2 ;;
esac
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_ifinc.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
start=$(date +%s)
iwx_mpirun "$log" 90 2 --mca btl_iwarpx_if_include "$value" "$mpit" anysrc || rc=$?
elapsed=$(($(date +%s) - start))
cat "$log"
echo "mpirun exited $rc after $elapsed s"
n=$(grep -oF "$want" "$log" | wc -l)
[ "$n" -eq 2 ] || { echo "FAIL: $n of 2 ranks logged: $want"; exit 1; }
case $mode in
  lo | subnet)
    [ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
    grep -q "mpit: OK 2 ranks" "$log" || { echo "FAIL: no OK line from mpit"; exit 1; }
    iwx_check_btl "$log" 2 none || exit 1
    ;;
  *)
    if [ $rc -eq 0 ] || [ "$elapsed" -ge 60 ]; then
      echo "FAIL: with if_include '$value' MPI must fail within 60 s (rc $rc, $elapsed s)"
      exit 1
    fi
    if grep -q "btl:iwarpx: module ready" "$log"; then
      echo "FAIL: a module was made although if_include '$value' selects no address"
      exit 1
    fi
    ;;
esac
echo "PASS: btl_iwarpx_if_include '$value' ($mode)"
