#!/bin/sh
# Usage: mca_mpirun_loads.sh <mpirun> <Open MPI component dir> <build mca dir> <hello_mpi>
# Runs a 2-rank MPI job over loopback with btl self,tcp,iwarpx and the build tree's
# components on the path. Passes when the job succeeds and both components' verbose lines show
# that Open MPI loaded them and ran btl_init / osc_init. FI_PROVIDER_PATH is not set here, so
# the BTL either finds an installed iwarpx provider (module ready, MPI traffic over it) or
# disqualifies itself cleanly (no module, MPI keeps working over tcp); both are fine for this
# test. The BTL's traffic is tested in tests/mpi (btl_iwarpx_test.sh).
set -eu

mpirun=$1
ompi_dir=$2
mca_dir=$3
hello=$4
# shellcheck source=tests/mca/mca_common.sh
. "$(dirname "$0")/mca_common.sh"
warn_installed_copy "$ompi_dir"

for f in "$mca_dir/mca_btl_iwarpx.so" "$mca_dir/mca_osc_iwarpx.so" "$hello"; do
  [ -f "$f" ] || { echo "FAIL: $f not built" >&2; exit 1; }
done

log=$(mktemp "${TMPDIR:-/tmp}/mca_mpirun_loads.XXXXXX")
trap 'rm -f "$log"' EXIT

# --mca btl/pml on the command line override Debian's /etc/openmpi/openmpi-mca-params.conf
# (btl = ^uct,openib,ofi; pml = ^ucx). pml ob1 makes sure the BTL framework (and thus
# btl_init) runs; loopback only for both the runtime (oob) and the MPI traffic (btl tcp).
# timeout bounds the whole job; mpirun tears its ranks down when it gets SIGTERM.
rc=0
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout -k 10 90 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
  --mca mca_base_component_path "$ompi_dir:$mca_dir" \
  --mca pml ob1 --mca btl self,tcp,iwarpx --mca osc sm,rdma,iwarpx \
  --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  --mca btl_iwarpx_verbose 100 --mca osc_iwarpx_verbose 100 \
  "$hello" >"$log" 2>&1 || rc=$?
cat "$log"

fail=0
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "FAIL: mpirun did not finish within 90 s (timeout, rc $rc)" >&2
  fail=1
elif [ $rc -ne 0 ]; then
  echo "FAIL: mpirun exited with $rc" >&2
  fail=1
fi
# count <pattern> <expected minimum> <what>
count() {
  n=$(grep -cF -- "$1" "$log" || true)
  if [ "$n" -ge "$2" ]; then
    echo "ok: $3 ($n line(s))"
  else
    echo "FAIL: $3: expected >= $2 line(s) containing '$1', found $n" >&2
    fail=1
  fi
}
count "hello_mpi: OK" 1 "MPI ring + allreduce verified"
# count_re <extended regex> <expected minimum> <what>
count_re() {
  n=$(grep -cE -- "$1" "$log" || true)
  if [ "$n" -ge "$2" ]; then
    echo "ok: $3 ($n line(s))"
  else
    echo "FAIL: $3: expected >= $2 line(s) matching /$1/, found $n" >&2
    fail=1
  fi
}
count_re "btl:iwarpx: (module ready|no module)" 2 "btl_init ran on both ranks"
count "osc:iwarpx: component initialised" 2 "osc_init ran on both ranks"
exit $fail
