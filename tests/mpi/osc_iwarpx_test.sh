#!/bin/sh
# Usage: osc_iwarpx_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                           <osc_iwarpx_test | osc_iwarpx_dyn_test | osc_iwarpx_acc_test |
#                            osc_iwarpx_misc_test | osc_iwarpx_pair_test | osc_iwarpx_flush_test |
#                            osc_iwarpx_mpi4py.py>
#                           <ranks> <tcp|iwarpx|control>
# (osc_iwarpx_dyn_test: dynamic windows; osc_iwarpx_acc_test: the general accumulate path;
# osc_iwarpx_misc_test: info keys, fence asserts, misuse; osc_iwarpx_pair_test: pair types
# inside derived datatypes for the accumulate family; osc_iwarpx_flush_test: remote completion
# of MPI_Put while the target is out of MPI; see
# their headers; same checks, each its own OK line.)
# The project's one-sided component (ompi_osc_iwarpx) runs osc_iwarpx_test (fence Put/Get
# 1 B..4 MiB, exclusive lock with concurrent updates, lock_all + flush, Rput/Rget, range and
# epoch errors, accumulate/fetch_and_op/compare_and_swap atomicity, 4 threads per rank, derived datatypes, PSCW) on loopback with
#   --mca osc iwarpx --mca pml ob1 --mca btl self,<tcp|iwarpx>
# and must print the program's OK line, one "window ready" line per rank and window, and
# finalize counters showing puts, gets and atomics done by osc iwarpx on every rank - so a run
# in which another osc component served the windows fails.
# "control" runs the same checks with osc iwarpx left out (--mca osc sm,rdma,pt2pt): it must
# NOT pass them (the script then exits 0), proving the checks can fail.
# A program ending in .py runs under /usr/bin/python3 (python3-mpi4py, a real MPI client).
set -eu
mpirun=$1
ompi_dir=$2
mca_dir=$3
export FI_PROVIDER_PATH="$4"
prog=$5
np=$6
mode=$7
windows=10 # windows osc_iwarpx_test creates
tag=osc_iwarpx_test # its OK line
run="$prog"
case $prog in
  *.py) windows=5 run="/usr/bin/python3 $prog" ;;
  */osc_iwarpx_dyn_test) windows=1 tag=osc_iwarpx_dyn_test ;;
  */osc_iwarpx_acc_test) windows=1 tag=osc_iwarpx_acc_test ;;
  */osc_iwarpx_misc_test) windows=4 tag=osc_iwarpx_misc_test ;;
  */osc_iwarpx_pair_test) windows=2 tag=osc_iwarpx_pair_test ;;
  */osc_iwarpx_flush_test) windows=1 tag=osc_iwarpx_flush_test ;;
esac
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
for f in "$mca_dir/mca_osc_iwarpx.so" "$FI_PROVIDER_PATH/libiwarpx-fi.so" "$prog"; do
  [ -f "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
if [ -e "$ompi_dir/mca_osc_iwarpx.so" ]; then
  echo "WARNING: $ompi_dir/mca_osc_iwarpx.so is installed and may shadow the build tree's copy"
fi
case $mode in
  tcp) sel="--mca osc iwarpx --mca btl self,tcp --mca btl_tcp_if_include lo" ;;
  iwarpx) sel="--mca osc iwarpx --mca btl self,iwarpx" ;;
  control) sel="--mca osc sm,rdma,pt2pt --mca btl self,tcp --mca btl_tcp_if_include lo" ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
log=$(mktemp "${TMPDIR:-/tmp}/osc_iwarpx_test.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2086 # $sel and $run are word lists
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout -k 10 150 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  --mca mca_base_component_path "$ompi_dir:$mca_dir" --mca pml ob1 $sel \
  --mca osc_iwarpx_verbose 1 -x FI_PROVIDER_PATH --mca oob_tcp_if_include lo \
  $run >"$log" 2>&1 || rc=$?

check() {
  fail=0
  [ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc (124/137: timeout)"; fail=1; }
  # Matches, not lines: mpirun's IOF can join two ranks' lines into one line of the log.
  grep -q "$tag: OK $np ranks" "$log" || { echo "FAIL: no OK line from rank 0"; fail=1; }
  n=$(grep -o "osc:iwarpx: window ready" "$log" | wc -l)
  [ "$n" -eq $((np * windows)) ] ||
    { echo "FAIL: $n 'window ready' lines, expected $((np * windows))"; fail=1; }
  # "window freed: rank R: P puts (B bytes), G gets (B bytes), A atomics"; sum per rank.
  { grep -oE 'osc:iwarpx: window freed: rank [0-9]+: [0-9]+ puts \([0-9]+ bytes\), [0-9]+ gets \([0-9]+ bytes\), [0-9]+ atomics' "$log" || true; } |
    sed 's/.*window freed: rank \([0-9]*\): \([0-9]*\) puts ([0-9]* bytes), \([0-9]*\) gets ([0-9]* bytes), \([0-9]*\) atomics/\1 \2 \3 \4/' | awk -v np="$np" '
    { seen[$1] = 1; p[$1] += $2; g[$1] += $3; a[$1] += $4 }
    END {
      bad = 0
      for (r = 0; r < np; r++) {
        if (!(r in seen) || p[r] == 0 || g[r] == 0 || a[r] == 0) {
          print "FAIL: rank " r ": no puts, gets or atomics counted by osc iwarpx"; bad = 1
        }
      }
      if (!bad) print "ok: every rank did puts, gets and atomics through osc iwarpx"
      exit bad
    }' || fail=1
  return $fail
}

if [ "$mode" = control ]; then
  if check >/dev/null; then
    cat "$log"
    echo "FAIL: the checks passed although osc iwarpx was not selected"
    exit 1
  fi
  echo "PASS: without osc iwarpx the checks fail (mpirun rc $rc), as they must"
  exit 0
fi
cat "$log"
if check; then
  echo "PASS: osc iwarpx, btl self,$mode, $np ranks"
  exit 0
fi
exit 1
