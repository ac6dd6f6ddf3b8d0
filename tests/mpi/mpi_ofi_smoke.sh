#!/bin/sh
# Usage: mpi_ofi_smoke.sh <mpirun> <provider dir> <mpi_smoke> <mtl|btl> <ranks> [variant]
# Open MPI's own libfabric components over the iwarpx RDM endpoint (issue 4):
#   mtl  --mca pml cm --mca mtl ofi, FI_PROVIDER=iwarpx
#   btl  --mca pml ob1 --mca btl self,ofi --mca btl_ofi_mode 2 (two-sided and one-sided)
#        --mca btl_ofi_provider_include iwarpx --mca osc rdma
# Debian's /etc/openmpi/openmpi-mca-params.conf disables mtl ofi and btl ofi (and osc pt2pt):
# the command line overrides it. Runs the project's mpi_smoke (p2p 0 B..4 MiB checked, any
# source, ordering, Bcast/Allreduce/Alltoall, Put/Get with fence, Accumulate under locks) on
# loopback and passes when every rank finished and rank 0 printed its OK line. Bounded by
# timeout; mpirun tears its ranks down on SIGTERM.
# Variants (the RDM endpoint's on-demand connections, issue 5):
#   rc       the chain size<=8192:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy with the
#            connection opened after the first message: most traffic (eager and
#            rendezvous) must have gone on the connection (FI_IWARPX_STATS=1 counters).
#   rc-nomr  the same with FI_IWARPX_MAX_MR=1, so most rendezvous buffers cannot be
#            registered: they must fall back to the copy rendezvous (rdm_copy_fallbacks),
#            never be refused ("fi_tsenddata: refused ...") or lost.
set -eu
mpirun=$1
export FI_PROVIDER_PATH=$2
smoke=$3
mode=$4
np=$5
variant=${6:-}
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
envs=""
case $variant in
  "") ;;
  rc|rc-nomr)
    export FI_IWARPX_SEND_RULES='size<=8192:rc_sr,any:rc_rdma,any:ud_sr,any:ud_zcopy'
    export FI_IWARPX_RC_THRESHOLD_MSGS=1 FI_IWARPX_STATS=1
    envs="-x FI_IWARPX_SEND_RULES -x FI_IWARPX_RC_THRESHOLD_MSGS -x FI_IWARPX_STATS"
    if [ "$variant" = rc-nomr ]; then
      export FI_IWARPX_MAX_MR=1
      envs="$envs -x FI_IWARPX_MAX_MR"
    fi ;;
  *) echo "FAIL: variant $variant (rc or rc-nomr)"; exit 1 ;;
esac
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
  $sel -x FI_PROVIDER_PATH $envs --mca oob_tcp_if_include lo "$smoke" >"$log" 2>&1 || rc=$?
cat "$log"
if [ $rc -ne 0 ]; then
  echo "FAIL: mpirun ($mode, $np ranks) exited $rc"
  exit 1
fi
grep -q "^mpi_smoke: OK $np ranks" "$log" || { echo "FAIL: no OK line from rank 0"; exit 1; }
if grep -qE ": refused \(" "$log"; then echo "FAIL: a send was refused"; exit 1; fi
# Sum of endpoint counter $1 over the ranks' FI_IWARPX_STATS=1 lines.
total() {
  grep -oE " $1=[0-9]+" "$log" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
if [ -n "$variant" ]; then
  sr=$(total rdm_rc_sr_msgs)
  rdma=$(total rdm_rc_rdma_msgs)
  [ "$sr" -ge 100 ] || { echo "FAIL: only $sr eager messages on connections"; exit 1; }
  [ "$rdma" -ge 1 ] || [ "$variant" = rc-nomr ] ||
    { echo "FAIL: no rendezvous on a connection"; exit 1; }
  echo "connections: rdm_rc_sr_msgs=$sr rdm_rc_rdma_msgs=$rdma"
fi
if [ "$variant" = rc-nomr ]; then
  fb=$(total rdm_copy_fallbacks)
  [ "$fb" -ge 1 ] || { echo "FAIL: no rendezvous fell back to copying (rdm_copy_fallbacks=0)"; exit 1; }
  echo "unregistrable buffers: rdm_copy_fallbacks=$fb"
fi
echo "PASS: $mode, $np ranks${variant:+ ($variant)}"
