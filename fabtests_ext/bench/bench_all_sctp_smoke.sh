#!/usr/bin/env bash
# Usage: bench_all_sctp_smoke.sh <source dir> <build dir>
# The sctp section of scripts/bench_all.sh decides at run time whether iWARP over SCTP can be
# measured; this test holds it to the provider actually built (label "functional"):
#   * the provider registers no FI_IWARPX_LLP parameter (`fi_info -g FI_IWARPX_LLP`): the
#     report must say "not available" with that reason, show no table and no sctp plot, and
#     --dry-run must say the same;
#   * it does: --quick --only sctp must run fi_pingpong -e msg with FI_IWARPX_LLP=sctp
#     against tcp and the report must have the table with numeric times and ratios for
#     8 B, 1 KiB and 64 KiB and both sctp PNGs.
# Either way bench_all.sh must exit 0. Bounded by timeout (ctest: 180 s).
set -uo pipefail
src=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_all_sctp_smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if FI_PROVIDER_PATH=$build/prov/iwarpx/src/ofi fi_info -g FI_IWARPX_LLP 2>/dev/null |
    grep -q '^# FI_IWARPX_LLP:'; then
  have_llp=1
  echo "the provider has FI_IWARPX_LLP: the section must measure SCTP against TCP"
else
  have_llp=0
  echo "the provider has no FI_IWARPX_LLP: the section must say not available"
fi

rc=0
timeout -k 5 170 "$src/scripts/bench_all.sh" --build "$build" --no-build --quick --only sctp \
  --out "$tmp/report" 2>"$tmp/err" || rc=$?
sed 's/^/stderr: /' "$tmp/err"
((rc == 0)) || bad "bench_all.sh exited $rc"
report=$tmp/report/REPORT.md
[[ -f $report ]] || { bad "no REPORT.md"; exit 1; }
cat "$report"
grep -q '^## 1\. sctp: ' "$report" || bad "no sctp section"

num='[0-9]+\.[0-9]{2}'
if ((have_llp)); then
  grep -Eq '^\| 1 \| sctp \| ok \|' "$report" || bad "summary: sctp not ok"
  grep -q '^| size (B) | iwarpx+tcp (µs) | iwarpx+sctp (µs) | iwarpx+sctp/iwarpx+tcp |' "$report" ||
    bad "no SCTP-vs-TCP table"
  for s in 8 1024 65536; do
    grep -Eq "^\\| $s \\| $num \\| $num \\| $num \\| $num \\|\$" "$report" ||
      bad "row $s: times, ratio or MB/s not numbers"
  done
  for png in sctp_latency sctp_bandwidth; do
    [[ $(head -c 8 "$tmp/report/$png.png" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
      bad "$png.png missing or not a PNG"
  done
else
  grep -Eq '^\| 1 \| sctp \| not available \| - \| - \|$' "$report" ||
    bad "summary: sctp not 'not available'"
  grep -q '^Status: \*\*not available: .*no FI_IWARPX_LLP parameter' "$report" ||
    bad "the section does not give the reason"
  grep -q '^| size' "$report" && bad "a table although nothing was measured"
  compgen -G "$tmp/report/sctp_*.png" >/dev/null && bad "an sctp plot although nothing was measured"
  "$src/scripts/bench_all.sh" --build "$build" --no-build --dry-run --only sctp |
    grep -q '^sctp: not available: .*no FI_IWARPX_LLP parameter' || bad "--dry-run disagrees"
fi

((fail == 0)) && echo "PASS: the sctp section matches the provider (FI_IWARPX_LLP present: $have_llp)"
exit $fail
