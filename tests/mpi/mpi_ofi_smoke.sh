#!/bin/sh
# Usage: mpi_ofi_smoke.sh <mpirun> <provider dir> <mpi_smoke> <mtl|btl> <ranks>
# Open MPI's own libfabric components over the iwarpx RDM endpoint (issue 4):
#   mtl  --mca pml cm --mca mtl ofi, FI_PROVIDER=iwarpx
#   btl  --mca pml ob1 --mca btl self,ofi --mca btl_ofi_mode 2 (two-sided and one-sided)
#        --mca btl_ofi_provider_include iwarpx --mca osc rdma
# Debian's /etc/openmpi/openmpi-mca-params.conf disables mtl ofi and btl ofi (and osc pt2pt):
# the command line overrides it. Runs the project's mpi_smoke (p2p 0 B..4 MiB checked, any
# source, ordering, Bcast/Allreduce/Alltoall, Put/Get with fence, Accumulate under locks) on
# loopback and passes when every rank finished and rank 0 printed its OK line. Bounded by
# timeout; mpirun tears its ranks down on SIGTERM.
set -eu
mpirun=$1
export FI_PROVIDER_PATH=$2
smoke=$3
mode=$4
np=$5
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
case $mode in
  mtl) sel="--mca pml cm --mca mtl ofi -x FI_PROVIDER=iwarpx" ;;
  btl) sel="--mca pml ob1 --mca btl self,ofi --mca btl_ofi_mode 2 --mca btl_ofi_provider_include iwarpx --mca osc rdma" ;;
  *) echo "FAIL: mode $mode (mtl or btl)"; exit 1 ;;
esac
log=$(mktemp "${TMPDIR:-/tmp}/mpi_ofi_smoke.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
# shellcheck disable=SC2086
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout -k 10 120 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  $sel -x FI_PROVIDER_PATH --mca oob_tcp_if_include lo "$smoke" >"$log" 2>&1 || rc=$?
cat "$log"
if [ $rc -ne 0 ]; then
  echo "FAIL: mpirun ($mode, $np ranks) exited $rc"
  exit 1
fi
grep -q "^mpi_smoke: OK $np ranks" "$log" || { echo "FAIL: no OK line from rank 0"; exit 1; }
echo "PASS: $mode, $np ranks"
