#!/bin/sh
# Usage: mca_exports.sh <component.so> <symbol> [<component.so> <symbol> ...]
# Each Open MPI component DSO must export exactly one dynamic symbol, its component struct:
# Open MPI dlopen()s components RTLD_GLOBAL, so any other exported symbol pollutes the global
# namespace of every MPI process.
set -eu

if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
  echo "usage: $0 <component.so> <symbol> [...]" >&2
  exit 2
fi
command -v nm >/dev/null 2>&1 || { echo "FAIL: nm (binutils) not found" >&2; exit 1; }

fail=0
while [ $# -gt 0 ]; do
  so=$1
  want=$2
  shift 2
  if [ ! -f "$so" ]; then
    echo "FAIL: $so does not exist (build targets mca_btl_iwarpx / mca_osc_iwarpx first)" >&2
    fail=1
    continue
  fi
  syms=$(nm -D --defined-only "$so" | awk '{print $NF}')
  count=$(printf '%s\n' "$syms" | grep -c . || true)
  if [ "$count" -eq 1 ] && [ "$syms" = "$want" ]; then
    echo "ok: $so exports only $want"
  else
    echo "FAIL: $so exports $count symbol(s), expected exactly '$want':" >&2
    printf "%s\n" "$syms" | sed "s/^/  /" >&2
    fail=1
  fi
done
exit $fail
