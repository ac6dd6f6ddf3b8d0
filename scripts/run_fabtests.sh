#!/usr/bin/env bash
# scripts/run_fabtests.sh [FABTESTS_BIN] [runfabtests.sh options...]
# Runs libfabric's official fabtests (v1.17.0), ALREADY BUILT outside this repository
# (docs/fabtests.md says how), against the build tree's libiwarpx-fi.so on loopback,
# with fabtests_ext/test_configs/iwarpx/iwarpx.exclude (-f). Builds and downloads nothing.
#   FABTESTS_BIN  directory with runfabtests.sh and the fi_* programs
#                 (default $FABTESTS_BIN, else /work/fabtests-install/bin)
#   IWARPX_BUILD_DIR  build tree (default build)
# Extra options go to runfabtests.sh (default: -t "unit" then "functional" then "short").
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${FABTESTS_BIN:-/work/fabtests-install/bin}}
[[ $# -gt 0 ]] && shift
[[ -x $bin/runfabtests.sh ]] || {
  echo "run_fabtests: no runfabtests.sh in '$bin' (build fabtests first: docs/fabtests.md)" >&2
  exit 2
}
build=${IWARPX_BUILD_DIR:-build}
export FI_PROVIDER_PATH=$PWD/$build/prov/iwarpx/src/ofi
[[ -f $FI_PROVIDER_PATH/libiwarpx-fi.so ]] || {
  echo "run_fabtests: $FI_PROVIDER_PATH/libiwarpx-fi.so missing; run ./autogen.sh" >&2
  exit 2
}
exclude=$PWD/fabtests_ext/test_configs/iwarpx/iwarpx.exclude
# No host arguments: runfabtests.sh then runs server and client locally (no ssh).
if [[ $# -gt 0 ]]; then
  exec "$bin/runfabtests.sh" -p "$bin" -f "$exclude" "$@" iwarpx
fi
rc=0
for set in unit functional short; do
  "$bin/runfabtests.sh" -p "$bin" -f "$exclude" -T 60 -t "$set" iwarpx || rc=1
done
exit $rc
