#!/usr/bin/env bash
# autogen.sh - set up a Debian 12 machine for iwarpx, then configure and build.
#
#   ./autogen.sh                 install missing packages (as root), configure, build into build/
#   ./autogen.sh --deps-only     only the package step
#   IWARPX_BUILD_DIR=dir         build somewhere else (default: build)
#
# Not root and packages missing: prints the exact apt-get line and exits 1.
# Running it again is fast: the package check is a dpkg query and the build is
# incremental.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev clang-format clang-tidy
  # the real parts the stack is built on and tested with
  libfabric-dev libfabric-bin libopenmpi-dev openmpi-bin python3-mpi4py
  libhwloc-dev rdma-core libibverbs-dev librdmacm-dev libusrsctp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # wire check, network namespaces, loss injection
  tshark nftables iproute2 util-linux procps python3
  # plots of the window benchmarks (scripts/bench_osc.sh)
  python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  cmd="apt-get install -y --no-install-recommends ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "autogen.sh: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && $cmd" >&2
    exit 1
  fi
  echo "autogen.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[[ ${1:-} == --deps-only ]] && exit 0

build=${IWARPX_BUILD_DIR:-build}
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "$(nproc)"
