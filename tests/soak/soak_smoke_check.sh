#!/usr/bin/env bash
# soak_smoke_check.sh pass|break BUILD_DIR - the ctest face of scripts/soak.sh (label soak-smoke).
#   pass   a 30 s soak (msg, rdm with FI_IWARPX_FAULT, the MPI loop): soak.sh must exit 0, its
#          report must have every section, a PASS verdict and traffic in every component.
#   break  a 15 s soak whose rdm client damages message 100 (IWARPX_SOAK_BREAK=rdm): soak.sh
#          must exit 1 and its report must say FAIL with the server's data check failure, so
#          the soak can fail.
set -uo pipefail
mode=$1
build=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/soak_smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
report=$tmp/report.md
rc=0
fail() { echo "FAIL: $*"; rc=1; }

case $mode in
  pass)
    TMPDIR=$tmp timeout -k 5 85 "$root/scripts/soak.sh" --seconds 30 --build "$build" --report "$report" \
      >"$tmp/out" 2>&1
    src=$?
    [[ $src -eq 0 ]] || fail "soak.sh exited $src"
    for s in '# iwarpx soak report' '## Traffic' '## Loss and duplication' '## Faults and errors' \
      '## Memory (RSS)' '## Verdict'; do
      grep -qxF -- "$s" "$report" || fail "report has no '$s' section"
    done
    grep -q '^PASS: ' "$report" || fail "report has no PASS verdict"
    # Every component moved verified messages: a non-zero count in its Traffic row.
    for c in msg rdm 'mpi (btl/osc iwarpx, 2 ranks)'; do
      grep -qE "^\| ${c//[()]/.} \| [0-9]+ \| [1-9][0-9]* \|" "$report" || fail "no traffic in the $c row"
    done
    # The injected faults were counted (rdm and mpi rows of Faults and errors: dropped > 0).
    for c in rdm mpi; do
      grep -qE "^\| $c \| [1-9][0-9]* \| [1-9][0-9]* \|" "$report" || fail "no injected faults counted for $c"
    done
    ;;
  break)
    TMPDIR=$tmp IWARPX_SOAK_BREAK=rdm timeout -k 5 85 "$root/scripts/soak.sh" --seconds 15 --no-mpi \
      --build "$build" --report "$report" >"$tmp/out" 2>&1
    src=$?
    [[ $src -eq 1 ]] || fail "soak.sh exited $src, expected 1 (a violation)"
    grep -q '^FAIL: ' "$report" || fail "report has no FAIL verdict"
    grep -q 'data check failed: message 100 ' "$report" || fail "report does not quote the server's data check failure"
    grep -qE '^\| rdm \| .* \| FAIL \|$' "$report" || fail "the rdm row of Loss and duplication is not FAIL"
    ;;
  *) echo "usage: $0 pass|break BUILD_DIR"; exit 2 ;;
esac
if ((rc)); then
  # The violations first: scripts/test.sh repeats only the first 30 lines of a failed test.
  echo "--- the report's verdict and failure lines"
  sed -n '/^## Verdict/,$p' "$report" 2>/dev/null | sed -n '3,12p'
  awk '/^Failure lines/ { f = 1; print; next } f && /^    / { print } f && /^## / { exit }' "$report" 2>/dev/null
  echo "--- soak.sh output"
  cat "$tmp/out"
  # The generators' own last lines (each side's stderr: progress, the failure, the
  # provider's FI_IWARPX_STATS counters), so a rare failure can be read from the ctest log.
  for f in "$tmp"/iwarpx-soak.*/*.err; do
    [[ -e $f ]] || continue
    echo "--- tail of ${f##*/}"
    tail -n 15 "$f"
  done
else
  echo "ok: soak $mode"
  sed -n '/^## Verdict/,$p' "$report"
fi
exit $rc
