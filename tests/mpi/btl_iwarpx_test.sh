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
# the BTL. Bounded by timeout; mpirun tears its
# ranks down on SIGTERM.
# "disabled" is the control: with btl_iwarpx_enable=0 the same command line must fail (MPI
# cannot reach the peers with btl self alone) within the time bound, so a run in which the
# BTL quietly did nothing cannot pass the main test.
set -eu
mpirun=$1
ompi_dir=$2
mca_dir=$3
export FI_PROVIDER_PATH="$4"
smoke=$5
np=$6
mode=${7:-run}
extra=""
[ "$mode" = disabled ] && extra="--mca btl_iwarpx_enable 0"
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
for f in "$mca_dir/mca_btl_iwarpx.so" "$FI_PROVIDER_PATH/libiwarpx-fi.so" "$smoke"; do
  [ -f "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
if [ -e "$ompi_dir/mca_btl_iwarpx.so" ]; then
  echo "WARNING: $ompi_dir/mca_btl_iwarpx.so is installed and may shadow the build tree's copy"
fi
log=$(mktemp "${TMPDIR:-/tmp}/btl_iwarpx_test.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2086
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout -k 10 120 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  --mca mca_base_component_path "$ompi_dir:$mca_dir" \
  --mca pml ob1 --mca btl self,iwarpx --mca osc rdma --mca btl_iwarpx_verbose 1 $extra \
  -x FI_PROVIDER_PATH --mca oob_tcp_if_include lo "$smoke" >"$log" 2>&1 || rc=$?
cat "$log"
if [ "$mode" = disabled ]; then
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
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
grep -q "^mpi_smoke: OK $np ranks" "$log" || { echo "FAIL: no OK line from rank 0"; fail=1; }
n=$(grep -c "btl:iwarpx: module ready on the iwarpx RDM endpoint" "$log" || true)
[ "$n" -eq "$np" ] || { echo "FAIL: $n 'module ready' lines, expected $np"; fail=1; }
# "finalize: sent S messages (B bytes), received R (B bytes), P puts, G gets, A atomics"
stats=$(sed -n 's/.*btl:iwarpx: finalize: sent \([0-9]*\) messages ([0-9]* bytes), received \([0-9]*\) ([0-9]* bytes), \([0-9]*\) puts, \([0-9]*\) gets, \([0-9]*\) atomics, [0-9]* registrations ([0-9]* fi_mr_reg), \([0-9]*\) sendi.*/\1 \2 \3 \4 \5 \6/p' "$log")
n=$(printf '%s\n' "$stats" | grep -c . || true)
[ "$n" -eq "$np" ] || { echo "FAIL: $n finalize counter lines, expected $np"; fail=1; }
printf '%s\n' "$stats" | awk -v np="$np" '
  { if ($1 == 0 || $2 == 0) idle++; puts += $3; gets += $4; amos += $5; sendi += $6 }
  END {
    if (idle > 0) { print "FAIL: " idle " rank(s) sent or received nothing over btl iwarpx"; exit 1 }
    if (puts == 0 || gets == 0 || amos == 0) {
      print "FAIL: no puts, gets or atomics over btl iwarpx (puts " puts ", gets " gets ", atomics " amos ")"
      exit 1
    }
    # Small messages (0..64 B in mpi_smoke, collectives) fit the inject size: sendi.
    if (sendi == 0) { print "FAIL: no message went through sendi"; exit 1 }
    print "ok: every rank sent and received over btl iwarpx; puts " puts ", gets " gets ", atomics " amos ", sendi " sendi
  }' || fail=1
[ $fail -eq 0 ] && echo "PASS: btl self,iwarpx + osc rdma, $np ranks"
exit $fail
