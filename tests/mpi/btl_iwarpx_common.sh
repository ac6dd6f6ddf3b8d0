# shellcheck shell=sh
# Sourced by the btl_iwarpx_*.sh tests: one hermetic, time-bounded mpirun over
# --mca pml ob1 --mca btl self,iwarpx --mca osc rdma with the build tree's components.
# Usage: . btl_iwarpx_common.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
# then   btl_run <log> <ranks> <program> [more mpirun arguments...]   (sets $rc)
# and    btl_counters <log>: one line per rank "rank sends recvs puts gets atomics regs mr_regs
#        sendi" from the verbose finalize lines (mpirun runs with --tag-output).
btl_mpirun=$1
btl_ompi_dir=$2
btl_mca_dir=$3
export FI_PROVIDER_PATH="$4"
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
for f in "$btl_mca_dir/mca_btl_iwarpx.so" "$FI_PROVIDER_PATH/libiwarpx-fi.so"; do
  [ -f "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
if [ -e "$btl_ompi_dir/mca_btl_iwarpx.so" ]; then
  echo "WARNING: $btl_ompi_dir/mca_btl_iwarpx.so is installed and may shadow the build tree's copy"
fi

btl_run() {
  _log=$1
  _np=$2
  shift 2
  rc=0
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 120 "$btl_mpirun" --allow-run-as-root --oversubscribe --bind-to none \
    -np "$_np" --tag-output --mca mca_base_component_path "$btl_ompi_dir:$btl_mca_dir" \
    --mca pml ob1 --mca btl self,iwarpx --mca osc rdma --mca btl_iwarpx_verbose 1 \
    -x FI_PROVIDER_PATH --mca oob_tcp_if_include lo "$@" >"$_log" 2>&1 || rc=$?
  cat "$_log"
}

btl_counters() {
  sed -n 's/^\[[0-9]*,\([0-9]*\)\]<[a-z]*>:.*btl:iwarpx: finalize: sent \([0-9]*\) messages ([0-9]* bytes), received \([0-9]*\) ([0-9]* bytes), \([0-9]*\) puts, \([0-9]*\) gets, \([0-9]*\) atomics, \([0-9]*\) registrations (\([0-9]*\) fi_mr_reg), \([0-9]*\) sendi.*/\1 \2 \3 \4 \5 \6 \7 \8 \9/p' "$1"
}
