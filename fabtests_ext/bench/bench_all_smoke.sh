#!/usr/bin/env bash
# Usage: bench_all_smoke.sh <source dir> <build dir>
# Smoke test of scripts/bench_all.sh (the one benchmark command, issue 9 item 3), label
# "functional": the two cheapest sections in --quick mode into a temporary directory,
#   scripts/bench_all.sh --quick --no-build --only dgram,msg --out TMP
# (fi_pingpong -e dgram, iwarpx vs udp; msg_pingpong / rma_bw, iwarpx vs tcp and raw TCP).
# Passes only if the command exits 0 and:
#   * stderr shows the progress of both sections ("section 1/2 dgram", "section 2/2 msg");
#   * TMP/REPORT.md has the machine table (cpus, kernel, libfabric, load at start), a summary
#     row "ok" per section, both section headings, each with its command and table;
#   * the three targets (dgram 8 B latency, msg 8 B latency, msg 1 MiB write bandwidth) have
#     a measured ratio that is a number and a verdict "met" or "not met", and the ratio
#     columns of the dgram table (8 B, 1 KiB) and of the msg latency table are numbers;
#   * the four plots it links exist and start with the PNG signature;
# and `--only nosuch` is refused with exit 2. Bounded by timeout (ctest: 120 s).
set -uo pipefail
src=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_all_smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

rc=0
timeout -k 5 110 "$src/scripts/bench_all.sh" --build "$build" --no-build --quick --only dgram,msg \
  --out "$tmp/report" 2>"$tmp/err" || rc=$?
sed 's/^/stderr: /' "$tmp/err"
((rc == 0)) || bad "bench_all.sh exited $rc"
report=$tmp/report/REPORT.md
[[ -f $report ]] || { bad "no REPORT.md"; exit 1; }
cat "$report"

grep -q 'section 1/2 dgram' "$tmp/err" || bad "no progress line for section 1/2 dgram"
grep -q 'section 2/2 msg' "$tmp/err" || bad "no progress line for section 2/2 msg"
grep -Eq 'ETA ~[0-9]+m[0-9]{2}s' "$tmp/err" || bad "no ETA in the progress lines"

for key in cpus kernel libfabric "load at start"; do
  grep -Eq "^\\| $key \\| [^?|]+ \\|\$" "$report" || bad "machine table has no $key"
done
grep -Eq '^\| 1 \| dgram \| ok \|' "$report" || bad "summary: dgram not ok"
grep -Eq '^\| 2 \| msg \| ok \|' "$report" || bad "summary: msg not ok"
grep -q '^## 1\. dgram: ' "$report" || bad "no dgram section"
grep -q '^## 2\. msg: ' "$report" || bad "no msg section"
grep -q '^scripts/bench_dgram.sh ' "$report" || bad "no dgram command"
grep -q '^scripts/bench_msg.sh ' "$report" || bad "no msg command"

num='[0-9]+\.[0-9]{2}'
targets=$(grep -Ec "^\\| (dgram|msg) \\| [0-9]+ \\| [^|]+ \\| $num \\| (met|not met) \\|\$" "$report")
((targets == 3)) || bad "$targets numeric targets with a verdict in the summary, expected 3"
for s in 8 1024; do  # dgram: | size | udp | iwarpx | iwarpx/udp | MB/s |
  grep -Eq "^\\| $s \\| $num \\| $num \\| $num \\| $num \\|\$" "$report" ||
    bad "dgram row $s: times, ratio or MB/s not numbers"
done
for s in "8 B" "1 KiB" "64 KiB" "1 MiB"; do  # msg latency: | size | iwarpx | tcp | raw | ratio |
  grep -Eq "^\\| $s \\| $num \\| $num \\| $num \\| $num \\|\$" "$report" ||
    bad "msg latency row $s: not all numbers"
done

for png in dgram_latency dgram_bandwidth msg_latency msg_bandwidth; do
  grep -q "($png.png)" "$report" || bad "REPORT.md does not show $png.png"
  [[ $(head -c 8 "$tmp/report/$png.png" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
    bad "$png.png missing or not a PNG"
done

rc=0
"$src/scripts/bench_all.sh" --build "$build" --no-build --only nosuch --out "$tmp/r2" 2>/dev/null ||
  rc=$?
((rc == 2)) || bad "--only nosuch exited $rc, expected 2"

((fail == 0)) && echo "PASS: bench_all.sh --quick --only dgram,msg wrote REPORT.md with both sections, 3 numeric targets and 4 PNG plots"
exit $fail
