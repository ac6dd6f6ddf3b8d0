# shellcheck shell=sh
# Sourced by the btl_iwarpx_*.sh tests: one hermetic, time-bounded mpirun over
# --mca pml ob1 --mca btl self,iwarpx --mca osc rdma with the build tree's components.
# Usage: . btl_iwarpx_common.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
# then   btl_run <log> <ranks> <program> [more mpirun arguments...]   (sets $rc)
# and    btl_counters <log>: one line per rank "rank sends recvs puts gets atomics regs mr_regs
#        sendi" from the verbose finalize lines (mpirun runs with --tag-output).
# Setup and the mpirun command line are btl_iwarpx_lib.sh's (iwx_mpi_setup, iwx_mpirun, 120 s).
# shellcheck source=tests/mpi/btl_iwarpx_lib.sh
. "$(dirname "$0")/btl_iwarpx_lib.sh"
iwx_mpi_setup "$1" "$2" "$3" "$4" || exit 1

btl_run() {
  _blog=$1
  _bnp=$2
  shift 2
  # shellcheck disable=SC2034  # rc is read by the sourcing script
  rc=0
  iwx_mpirun "$_blog" 120 "$_bnp" --tag-output --mca osc rdma "$@" || rc=$?
  cat "$_blog"
}

btl_counters() {
  sed -n 's/^\[[0-9]*,\([0-9]*\)\]<[a-z]*>:.*btl:iwarpx: finalize: sent \([0-9]*\) messages ([0-9]* bytes), received \([0-9]*\) ([0-9]* bytes), \([0-9]*\) puts, \([0-9]*\) gets, \([0-9]*\) atomics, \([0-9]*\) registrations (\([0-9]*\) fi_mr_reg), \([0-9]*\) sendi.*/\1 \2 \3 \4 \5 \6 \7 \8 \9/p' "$1"
}
