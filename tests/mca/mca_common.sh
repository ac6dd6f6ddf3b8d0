# shellcheck shell=sh
# Sourced by the mca_*.sh tests: hermetic Open MPI environment.

# Inherited OMPI_MCA_* variables (component path, btl/pml selection, ...) would change what
# the tests exercise; drop them so the command lines below are the whole configuration.
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do
  echo "note: unsetting inherited $v for a hermetic run"
  unset "$v"
done

# An installed copy in Open MPI's own directory is found first (that directory comes first
# in the component path) and may shadow the build tree's copy.
warn_installed_copy() {
  for f in mca_btl_iwarpx.so mca_osc_iwarpx.so; do
    if [ -e "$1/$f" ]; then
      echo "WARNING: $1/$f is installed; Open MPI may load it instead of the build tree's" >&2
    fi
  done
}
