#!/bin/bash
# deb_smoke.sh - build the .deb and check it; optionally use its installed copy for real.
#
#   deb_smoke.sh contents  BUILD_DIR                (a) build the .deb, (b) check its contents
#   deb_smoke.sh namespace BUILD_DIR MPI_PROGRAM    (a), (b), then the smoke below on the .deb
#                                                   extracted and overlaid on /usr in a
#                                                   private mount namespace (root only: 77
#                                                   otherwise). The system is not changed.
#   IWARPX_DEB_INSTALL=1 deb_smoke.sh install BUILD_DIR MPI_PROGRAM
#                                                   (a), (b), then dpkg -i, the smoke on the
#                                                   real system, dpkg -r in a trap. Root only.
#                                                   Changes libfabric's and Open MPI's plugin
#                                                   directories while it runs: other MPI or
#                                                   libfabric jobs on the machine see iwarpx.
#                                                   Run it by hand, under
#                                                   flock /tmp/iwarpx-port.lock, never in ctest;
#                                                   it refuses while an mpirun, orted,
#                                                   fi_pingpong, fi_info or ompi_info runs.
#
# (a) scripts/make_deb.sh of what BUILD_DIR holds (it builds nothing: build first) into a
# temporary directory. (b) dpkg-deb -c lists exactly the
# provider in libfabric's provider directory, both components in Open MPI's pkglibdir, the
# header, iwarpx.pc and the man page; dpkg-deb -f Depends names libfabric1 and libopenmpi3;
# Maintainer is "Name <user@host.domain>" off localhost; Description has an extended text.
#
# The smoke, with FI_PROVIDER_PATH, FI_PROVIDER and every OMPI_MCA_* variable unset and no
# component path given: fi_info -p iwarpx lists the provider with its three endpoint types;
# fi_pingpong -p iwarpx -e rdm -c passes its default sizes (64 B to 1 MiB, 10 =10 each);
# `man -w fi_iwarpx` finds the page; pkg-config's iwarpx.pc names the provider directory and
# its Cflags compile a program using <rdma/fi_ext_iwarpx.h>; ompi_info lists btl and osc
# iwarpx; `mpirun -np 2 --mca pml ob1 --mca btl self,iwarpx --mca osc iwarpx MPI_PROGRAM`
# (tests/mpi/mpi_smoke: point-to-point, collectives, Put/Get/Accumulate) prints its OK line,
# and the components' verbose lines prove both carried the job (2 "module ready", window
# lines). In namespace mode a control runs first, with the package's files hidden by
# overlay whiteouts: fi_info -p iwarpx must fail and ompi_info must not list iwarpx, so
# the smoke cannot pass on files that were already on the machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
build=${2:-}
prog=${3:-}
case $mode in
  contents) ;;
  namespace | install) [ -x "$prog" ] || { echo "FAIL: MPI program '$prog' not built"; exit 1; } ;;
  smoke-inner | control-inner) ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
esac

fabric_libdir=$(pkg-config --variable=libdir libfabric)
provdl=$fabric_libdir/libfabric
mca_sys=$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')

# ---- the checks run inside the namespace, or on the real system -----------------------
clean_env() {
  unset FI_PROVIDER_PATH FI_PROVIDER
  for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
}

# control-inner: the package's files are hidden; nothing of iwarpx may be found.
if [ "$mode" = control-inner ]; then
  clean_env
  fail=0
  if fi_info -p iwarpx >/dev/null 2>&1; then
    echo "FAIL(control): fi_info -p iwarpx finds a provider with the package's files hidden"
    fail=1
  fi
  if ompi_info 2>/dev/null | grep -E "MCA (btl|osc): iwarpx"; then
    echo "FAIL(control): Open MPI finds iwarpx components with the package's files hidden" \
         "(another copy on its component path, e.g. ~/.openmpi/components?)"
    fail=1
  fi
  [ $fail -eq 0 ] && echo "ok(control): without the package's files neither libfabric nor Open MPI finds iwarpx"
  exit $fail
fi

if [ "$mode" = smoke-inner ]; then
  clean_env
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/iwarpx_smoke.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  fail=0
  bad() { echo "FAIL: $*"; fail=1; }
  if fi_info -p iwarpx >"$tmp/fi_info" 2>&1; then
    for t in FI_EP_MSG FI_EP_DGRAM FI_EP_RDM; do
      grep -q "type: *$t" "$tmp/fi_info" || bad "fi_info -p iwarpx lists no $t endpoint"
    done
    [ $fail -eq 0 ] && echo "ok: fi_info -p iwarpx (no FI_PROVIDER_PATH): $(grep -c '^provider: iwarpx' "$tmp/fi_info") entries, MSG, DGRAM and RDM"
  else
    cat "$tmp/fi_info"; bad "fi_info -p iwarpx fails without FI_PROVIDER_PATH"
  fi
  # The README's fi_pingpong example over RDM, data checked, on a port the kernel picked.
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  timeout 60 fi_pingpong -p iwarpx -e rdm -c -I 10 -B "$port" >"$tmp/pp_server" 2>&1 &
  server=$!
  for _ in $(seq 50); do
    ss -H -ltn "sport = :$port" | grep -q LISTEN && break
    sleep 0.1
  done
  if timeout 60 fi_pingpong -p iwarpx -e rdm -c -I 10 -P "$port" 127.0.0.1 >"$tmp/pp_client" 2>&1 &&
    wait "$server" && [ "$(grep -cE '^[0-9]+[kmg]? +10 +=10 ' "$tmp/pp_client")" -ge 6 ] &&
    grep -qE '^1m +10 +=10 ' "$tmp/pp_client"; then
    echo "ok: fi_pingpong -p iwarpx -e rdm -c: $(grep -cE '^[0-9]+[kmg]? +10 +=10 ' "$tmp/pp_client") sizes, data checked"
  else
    kill "$server" 2>/dev/null || true
    tail -n 5 "$tmp/pp_server" "$tmp/pp_client"
    bad "fi_pingpong -p iwarpx -e rdm -c failed"
  fi
  page=$(man -w fi_iwarpx 2>&1) || true
  text=$(MANWIDTH=80 man fi_iwarpx 2>/dev/null || true)  # whole output: no SIGPIPE
  if [ "$page" = /usr/share/man/man7/fi_iwarpx.7.gz ] && grep -q FI_IWARPX_SEND_RULES <<<"$text"; then
    echo "ok: man fi_iwarpx shows $page"
  else
    bad "man -w fi_iwarpx: '$page'"
  fi
  [ "$(pkg-config --variable=providerdir iwarpx 2>&1)" = "$provdl" ] ||
    bad "pkg-config --variable=providerdir iwarpx: '$(pkg-config --variable=providerdir iwarpx 2>&1)', expected $provdl"
  printf '#include <rdma/fi_ext_iwarpx.h>\nint main(void) { return FI_IWARPX_EXT_VERSION > 0 ? 0 : 1; }\n' >"$tmp/ext.c"
  # shellcheck disable=SC2046 # pkg-config prints a word list
  if cc -Wall -Werror $(pkg-config --cflags iwarpx) -o "$tmp/ext" "$tmp/ext.c" && "$tmp/ext"; then
    echo "ok: a program using <rdma/fi_ext_iwarpx.h> builds with pkg-config --cflags iwarpx"
  else
    bad "cannot build against the installed header"
  fi
  n=$(ompi_info 2>/dev/null | grep -cE "MCA (btl|osc): iwarpx" || true)
  if [ "$n" -eq 2 ]; then
    echo "ok: ompi_info lists btl iwarpx and osc iwarpx (no component path)"
  else
    bad "ompi_info lists $n of btl/osc iwarpx"
  fi
  rc=0
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    --mca pml ob1 --mca btl self,iwarpx --mca osc iwarpx \
    --mca btl_iwarpx_verbose 1 --mca osc_iwarpx_verbose 1 --mca oob_tcp_if_include lo \
    "$prog" >"$tmp/mpirun" 2>&1 || rc=$?
  # Matches, not lines: mpirun can join two ranks' lines into one line of the log.
  ready=$({ grep -o "btl:iwarpx: module ready on the iwarpx RDM endpoint" "$tmp/mpirun" || true; } | wc -l)
  windows=$({ grep -o "osc:iwarpx: window ready" "$tmp/mpirun" || true; } | wc -l)
  if [ $rc -eq 0 ] && grep -q "mpi_smoke: OK 2 ranks" "$tmp/mpirun" && [ "$ready" -eq 2 ] &&
    [ "$windows" -ge 2 ]; then
    echo "ok: mpirun -np 2 --mca btl self,iwarpx --mca osc iwarpx $(basename "$prog"): OK," \
         "$ready BTL modules, $windows osc iwarpx windows"
  else
    tail -n 40 "$tmp/mpirun"
    bad "mpirun over btl/osc iwarpx: exit $rc, $ready 'module ready', $windows 'window ready'"
  fi
  exit $fail
fi

# ---- (a) build the .deb, (b) its contents --------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iwarpx_deb.XXXXXX")
installed=0
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ "$installed" -eq 1 ]; then
    echo "dpkg -r iwarpx"
    dpkg -r iwarpx >/dev/null || echo "FAIL: dpkg -r iwarpx failed: remove it by hand"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# Package what is built; the build is the caller's job (ctest must not run ninja).
deb=$(IWARPX_DEB_NO_BUILD=1 "$here/../../scripts/make_deb.sh" "$build" "$tmp/out" \
  2>"$tmp/make_deb.log" | tail -n 1) ||
  { cat "$tmp/make_deb.log"; echo "FAIL: scripts/make_deb.sh failed"; exit 1; }
[ -f "$deb" ] || { cat "$tmp/make_deb.log"; echo "FAIL: no .deb"; exit 1; }
arch=$(dpkg --print-architecture)
case $(basename "$deb") in
  iwarpx_*_"$arch".deb) echo "ok: built $(basename "$deb")" ;;
  *) echo "FAIL: package file name $(basename "$deb") is not iwarpx_<version>_$arch.deb"; exit 1 ;;
esac
fail=0
want=$( {
  echo "$provdl/libiwarpx-fi.so"
  echo "$mca_sys/mca_btl_iwarpx.so"
  echo "$mca_sys/mca_osc_iwarpx.so"
  echo "/usr/include/rdma/fi_ext_iwarpx.h"
  echo "$fabric_libdir/pkgconfig/iwarpx.pc"
  echo "/usr/share/man/man7/fi_iwarpx.7.gz"
} | sort)
got=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's/^\.//' | sort)
if [ "$got" = "$want" ]; then
  echo "ok: dpkg-deb -c lists exactly:"
  while read -r f; do echo "  $f"; done <<<"$got"
else
  echo "FAIL: dpkg-deb -c differs from the expected files (< expected, > in the .deb):"
  diff <(echo "$want") <(echo "$got") || true
  fail=1
fi
depends=$(dpkg-deb -f "$deb" Depends)
for p in libfabric1 libopenmpi3 libc6; do
  grep -qE "(^|, )$p( |,|$)" <<<"$depends" || { echo "FAIL: Depends lacks $p: $depends"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: Depends: $depends"
# Maintainer "Name <user@host.domain>", not on localhost (lintian: bogus-mail-host), and a
# description: a synopsis plus an extended text.
maintainer=$(dpkg-deb -f "$deb" Maintainer)
if grep -qE '^[^<>@]+ <[^<>@ ]+@[^<>@ ]+\.[^<>@ ]+>$' <<<"$maintainer" && ! grep -q '@localhost' <<<"$maintainer"; then
  echo "ok: Maintainer: $maintainer"
else
  echo "FAIL: Maintainer '$maintainer' is not 'Name <user@host.domain>' off localhost"
  fail=1
fi
description=$(dpkg-deb -f "$deb" Description)
if [ "$(wc -l <<<"$description")" -ge 3 ] && [ -n "$(head -n 1 <<<"$description")" ]; then
  echo "ok: Description: $(head -n 1 <<<"$description") (+$(($(wc -l <<<"$description") - 1)) lines)"
else
  echo "FAIL: Description lacks a synopsis or an extended description: '$description'"
  fail=1
fi
[ "$mode" = contents ] || [ $fail -eq 0 ] || exit 1
if [ "$mode" = contents ]; then
  [ $fail -eq 0 ] && echo "PASS: the .deb holds every file where Debian's libfabric and Open MPI look"
  exit $fail
fi

# ---- namespace: the extracted package overlaid on /usr, private to this test -------------
if [ "$mode" = namespace ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the namespace smoke needs root (overlay mounts with whiteouts)"
    exit 77
  fi
  root=$tmp/root
  dpkg-deb -x "$deb" "$root"
  # The control's layer: a whiteout (0/0 character device) for every file of the package.
  wo=$tmp/whiteout
  while read -r f; do
    mkdir -p "$wo$(dirname "$f")"
    mknod "$wo$f" c 0 0
  done <<<"$want"
  ns() { # ns LAYER MODE: run this script's MODE with LAYER/usr overlaid on /usr, privately.
    # shellcheck disable=SC2016 # expanded by the inner bash
    unshare --mount --propagation private /bin/bash -c '
      mount -t overlay overlay -o ro,lowerdir="$1"/usr:/usr /usr || exit 1
      exec /bin/bash "$2" "$3" "$4" "$5"' ns "$1" "$0" "$2" "$build" "$prog"
  }
  ns "$wo" control-inner || fail=1
  ns "$root" smoke-inner || fail=1
  [ $fail -eq 0 ] && echo "PASS: the .deb's files, seen at their installed paths in a private" \
    "mount namespace, work with no FI_PROVIDER_PATH and no component path"
  exit $fail
fi

# ---- install: the real thing -------------------------------------------------------------
[ "${IWARPX_DEB_INSTALL:-0}" = 1 ] || {
  echo "FAIL: install mode changes the system; set IWARPX_DEB_INSTALL=1 to mean it"
  exit 1
}
[ "$(id -u)" -eq 0 ] || { echo "FAIL: dpkg -i needs root"; exit 1; }
if dpkg-query -W -f='${Status}' iwarpx 2>/dev/null | grep -q "install ok installed"; then
  echo "FAIL: iwarpx is already installed (dpkg -r iwarpx first); not touching it"
  exit 1
fi
# Every MPI or libfabric job that starts while the package is installed loads its plugins
# (the port lock does not cover benchmarks). Refuse while one of them is running (zombies
# left by other jobs do not count).
others=$(pgrep -a -r R,S,D,T -x 'mpirun|mpiexec|orterun|orted|fi_pingpong|fi_info|ompi_info' || true)
if [ -n "$others" ]; then
  echo "$others"
  echo "FAIL: MPI/libfabric programs are running; they would load the installed plugins. Try again when they are done."
  exit 1
fi
"$0" control-inner "$build" || exit 1
installed=1
dpkg -i "$deb"
dpkg -L iwarpx | grep -E '\.(so|h|pc|gz)$' | sed 's/^/  installed: /'
"$0" smoke-inner "$build" "$prog" || fail=1
[ $fail -eq 0 ] && echo "PASS: dpkg -i; fi_info and mpirun use the installed copy with no path variables"
exit $fail
