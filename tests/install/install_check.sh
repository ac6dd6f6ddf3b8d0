#!/bin/bash
# Usage: install_check.sh <build dir> <IWARPX_FI_PROVIDER_DIR> <IWARPX_OMPI_COMPONENT_DIR or "">
# `cmake --install` of the build, twice, into temporary directories only (never the system):
#   1. prefix /usr under DESTDIR=$tmp/root: the provider must land in the directory this
#      machine's libfabric loads DL providers from (pkg-config libfabric libdir + /libfabric),
#      the components in Open MPI's pkglibdir (ompi_info --path pkglibdir), plus
#      include/rdma/fi_ext_iwarpx.h, <libdir>/pkgconfig/iwarpx.pc and
#      share/man/man7/fi_iwarpx.7.gz - exactly these files, nothing else. When a cache
#      variable is an absolute path (a pinned place) that path is expected instead.
#   2. prefix $tmp/opt (no DESTDIR): the same layout below that prefix, and an iwarpx.pc
#      whose prefix is $tmp/opt (written at install time, not configure time).
# Then: the .pc's Cflags compile a program against the installed header, its variables name
# the installed directories, the installed provider exports fi_prov_ini only, and the man
# page renders without warnings. Exit 0 only if every check holds.
set -euo pipefail
build=$1
cfg_prov=$2
cfg_mca=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iwarpx_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

fabric_libdir=$(pkg-config --variable=libdir libfabric)
fabric_prefix=$(pkg-config --variable=prefix libfabric)
provdl=$fabric_libdir/libfabric            # libfabric's PROVDLDIR
rel_libdir=${fabric_libdir#"$fabric_prefix"/}
mca_sys=""
if [ -n "$cfg_mca" ]; then
  mca_sys=$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')
  [ -n "$mca_sys" ] || { echo "FAIL: ompi_info --path pkglibdir says nothing"; exit 1; }
fi

# expect_dir PREFIX CONFIGURED SYSTEM_DIR: where a file of that cache variable must land.
expect_dir() {
  case $2 in
    /*) echo "$2" ;;
    *) echo "$1/$2" ;;
  esac
}

# The exact file list for prefix $1 (one per line, sorted).
expected_files() {
  {
    echo "$(expect_dir "$1" "$cfg_prov")/libiwarpx-fi.so"
    if [ -n "$cfg_mca" ]; then
      echo "$(expect_dir "$1" "$cfg_mca")/mca_btl_iwarpx.so"
      echo "$(expect_dir "$1" "$cfg_mca")/mca_osc_iwarpx.so"
    fi
    echo "$1/include/rdma/fi_ext_iwarpx.h"
    echo "$1/$rel_libdir/pkgconfig/iwarpx.pc"
    echo "$1/share/man/man7/fi_iwarpx.7.gz"
  } | sort
}

# 1. prefix /usr, DESTDIR.
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr >"$tmp/install1.log" 2>&1 ||
  { cat "$tmp/install1.log"; echo "FAIL: cmake --install --prefix /usr (DESTDIR) failed"; exit 1; }
# The defaults (relative cache values) must be the directories the system loads from.
case $cfg_prov in
  /*) echo "note: IWARPX_FI_PROVIDER_DIR is pinned to $cfg_prov" ;;
  *) [ "/usr/$cfg_prov" = "$provdl" ] ||
       bad "prefix /usr puts the provider in /usr/$cfg_prov, libfabric loads from $provdl" ;;
esac
case $cfg_mca in
  "" | /*) ;;
  *) [ "/usr/$cfg_mca" = "$mca_sys" ] ||
       bad "prefix /usr puts the components in /usr/$cfg_mca, Open MPI loads from $mca_sys" ;;
esac
got=$( (cd "$root" && find . -type f -o -type l) | sed 's/^\.//' | sort)
want=$(expected_files /usr)
if [ "$got" != "$want" ]; then
  bad "installed files differ from the expected list (< expected, > installed):"
  diff <(echo "$want") <(echo "$got") || true
else
  echo "ok: prefix /usr installs exactly:"
  while read -r f; do echo "  $f"; done <<<"$got"
fi

# The .pc: header usable through its Cflags, directories as variables.
pcdir=$root/usr/$rel_libdir/pkgconfig
# pc: as a compiler sees the DESTDIR tree (sysroot); pc_var: the values for the real /usr.
pc() { PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$root pkg-config "$@"; }
pc_var() { PKG_CONFIG_PATH=$pcdir pkg-config --variable="$1" iwarpx; }
if pc --exists iwarpx; then
  [ "$(pc_var providerdir)" = "$(expect_dir /usr "$cfg_prov")" ] ||
    bad "iwarpx.pc providerdir=$(pc_var providerdir)"
  if [ -n "$cfg_mca" ]; then
    [ "$(pc_var mcacomponentdir)" = "$(expect_dir /usr "$cfg_mca")" ] ||
      bad "iwarpx.pc mcacomponentdir=$(pc_var mcacomponentdir)"
  fi
  [ "$(pc --modversion iwarpx)" != "" ] || bad "iwarpx.pc has no version"
  cat >"$tmp/use_ext.c" <<'EOF'
#include <rdma/fi_ext_iwarpx.h>
#include <stdio.h>
int main(void) {
  struct fi_iwarpx_ep_stats st = {0};
  struct fi_iwarpx_peer_stats ps = {0};
  ps.channel[FI_IWARPX_CH_RC_RDMA].msgs_sent = 1;
  printf("%s %s %d %zu %zu\n", FI_IWARPX_PROV_NAME, FI_IWARPX_STATS_OPS, FI_IWARPX_EXT_VERSION,
         sizeof(st), sizeof(ps) + ps.channel[FI_IWARPX_CH_RC_RDMA].msgs_sent - 1);
  return 0;
}
EOF
  # shellcheck disable=SC2046 # pkg-config prints a word list
  if cc -Wall -Werror $(pc --cflags iwarpx) -o "$tmp/use_ext" "$tmp/use_ext.c" 2>"$tmp/cc.log"; then
    grep -q "^iwarpx iwarpx_stats_v3 " <<<"$("$tmp/use_ext")" || bad "program built against the installed header misbehaves"
    # The -I must point into the install, not at the source tree.
    grep -q -- "-I$root/usr/include" <<<"$(pc --cflags iwarpx)" || bad "Cflags: $(pc --cflags iwarpx)"
    echo "ok: iwarpx.pc: $(pc --cflags iwarpx), providerdir=$(pc_var providerdir)"
  else
    cat "$tmp/cc.log"
    bad "a program including <rdma/fi_ext_iwarpx.h> does not compile with pkg-config --cflags iwarpx"
  fi
else
  bad "pkg-config does not find the installed iwarpx.pc in $pcdir"
fi

# The installed provider: a DL provider exporting fi_prov_ini and nothing else of ours.
so=$root$(expect_dir /usr "$cfg_prov")/libiwarpx-fi.so
if [ -f "$so" ]; then
  exports=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
  [ "$exports" = "fi_prov_ini" ] || bad "installed provider exports: $(echo "$exports" | tr '\n' ' ')"
fi

# The man page renders without a warning.
man_gz=$root/usr/share/man/man7/fi_iwarpx.7.gz
if [ -f "$man_gz" ]; then
  warn=$(MANWIDTH=80 man -l "$man_gz" 2>&1 >/dev/null || echo "man -l failed")
  [ -z "$warn" ] || bad "man -l $man_gz: $warn"
  text=$(MANWIDTH=80 man -l "$man_gz" 2>/dev/null || true)  # whole output: no SIGPIPE
  grep -q "FI_IWARPX_STATS" <<<"$text" ||
    bad "the installed man page does not render (no FI_IWARPX_STATS in it)"
fi

# 2. another prefix, no DESTDIR: the same layout below it, .pc written for it. A pinned
# (absolute) directory would be written to for real, so then this part is left out, loudly.
case "$cfg_prov $cfg_mca" in
  /* | *" /"*)
    echo "NOTE: a directory is pinned to an absolute path: the second-prefix install is not run"
    [ $fail -eq 0 ] && echo "PASS: cmake --install --prefix /usr puts every file where it belongs"
    exit $fail ;;
esac
opt=$tmp/opt
cmake --install "$build" --prefix "$opt" >"$tmp/install2.log" 2>&1 ||
  { cat "$tmp/install2.log"; echo "FAIL: cmake --install --prefix $opt failed"; exit 1; }
got=$( (find "$opt" -type f -o -type l) | sort)
want=$(expected_files "$opt")
if [ "$got" != "$want" ]; then
  bad "prefix $opt: installed files differ (< expected, > installed):"
  diff <(echo "$want") <(echo "$got") || true
else
  echo "ok: prefix $opt installs the same layout below it"
fi
pcfile=$opt/$rel_libdir/pkgconfig/iwarpx.pc
if [ -f "$pcfile" ]; then
  grep -qx "prefix=$opt" "$pcfile" || bad "$pcfile: $(grep '^prefix=' "$pcfile") (expected prefix=$opt)"
  [ "$(PKG_CONFIG_PATH=${pcfile%/*} pkg-config --variable=providerdir iwarpx)" = \
    "$(expect_dir "$opt" "$cfg_prov")" ] || bad "$pcfile: providerdir is not below $opt"
fi

[ $fail -eq 0 ] && echo "PASS: cmake --install puts every file where it belongs"
exit $fail
