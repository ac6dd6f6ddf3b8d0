#!/bin/bash
# make_deb.sh - build iwarpx_<version>_<arch>.deb from a configured build tree.
#
#   scripts/make_deb.sh [BUILD_DIR [OUT_DIR]]      (defaults: build, BUILD_DIR/deb)
#   IWARPX_DEB_NO_BUILD=1 scripts/make_deb.sh ...   package what is built, build nothing
#                                                   (tests: ctest must not run ninja)
#
# Brings what the package holds up to date (-j1: the machine is shared), then runs CPack's DEB generator
# (cmake/IwarpxPackage.cmake: prefix /usr, Depends from dpkg-shlibdeps). CPack installs into
# its own staging directory under OUT_DIR; nothing outside OUT_DIR is written. Prints the
# path of the .deb as its last line. Install it with `dpkg -i` (README "Install").
set -euo pipefail
build=${1:-build}
out=${2:-$build/deb}
[[ -f $build/CPackConfig.cmake ]] || {
  echo "make_deb.sh: $build is not a configured iwarpx build (no CPackConfig.cmake)" >&2
  exit 1
}
command -v dpkg-shlibdeps >/dev/null || {
  echo "make_deb.sh: dpkg-shlibdeps missing (apt-get install dpkg-dev)" >&2
  exit 1
}
targets=(iwarpx-fi iwarpx_man)
grep -q '^IWARPX_BUILD_MCA:BOOL=ON' "$build/CMakeCache.txt" && targets+=(mca_btl_iwarpx mca_osc_iwarpx)
if [[ ${IWARPX_DEB_NO_BUILD:-0} == 1 ]]; then
  [[ -f $build/man/fi_iwarpx.7.gz ]] || { echo "make_deb.sh: $build is not built" >&2; exit 1; }
else
  cmake --build "$build" -j1 --target "${targets[@]}" >&2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/iwarpx_*.deb
(cd "$build" && cpack -G DEB -B "$out") >&2
rm -rf "$out/_CPack_Packages"
debs=("$out"/iwarpx_*.deb)
[[ -f ${debs[0]} ]] || { echo "make_deb.sh: cpack made no iwarpx_*.deb in $out" >&2; exit 1; }
echo "${debs[0]}"
