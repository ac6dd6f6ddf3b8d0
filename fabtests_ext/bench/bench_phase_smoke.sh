#!/usr/bin/env bash
# Usage: bench_phase_smoke.sh <source dir> <build dir>
# Smoke test of the phase probe (label "functional"):
#   * mem_probe prints one line ending in a verdict, "shared" or "apart" with its ratio, or
#     "n/a" when fewer than two CPUs are there; it refuses a bad --time and a --threshold above 1 with exit 2;
#   * scripts/bench_rdm_bw.sh --phase-probe over two rounds exits 0 and prints the phase
#     line, whose round counts add up to the two rounds, and the paired lines for both
#     verdicts ("# paired, CPUs shared: ..." and "..., CPUs apart: ...").
# Bounded by timeout (ctest: 90 s).
set -uo pipefail
src=$1
build=$2
probe=$build/fabtests_ext/bench/mem_probe
fail=0
bad() { echo "FAIL: $*"; fail=1; }

line=$(timeout -k 5 20 "$probe" --time 0.02) || bad "mem_probe exited $?"
echo "mem_probe: $line"
[[ $line =~ ^mem_probe:\ (alone\ [0-9.]+\ GB/s,\ together\ [0-9.]+\ and\ [0-9.]+\ GB/s,\ ratio\ [0-9.]+:\ (shared|apart)|.*:\ n/a)$ ]] ||
  bad "mem_probe's line has no verdict"
rc=0
timeout -k 5 20 "$probe" --time -1 >/dev/null 2>&1 || rc=$?
((rc == 2)) || bad "mem_probe --time -1 exited $rc, not 2"
rc=0
timeout -k 5 20 "$probe" --threshold 1.5 >/dev/null 2>&1 || rc=$?
((rc == 2)) || bad "mem_probe --threshold 1.5 exited $rc, not 2"

rc=0
out=$(timeout -k 5 80 "$src/scripts/bench_rdm_bw.sh" --build "$build" --no-build --phase-probe \
  --anchors iwarpx+ud --sizes 64k --iters 5 --warmup 2 -w 16 --repeat 2 --strict) || rc=$?
echo "$out"
((rc == 0)) || bad "bench_rdm_bw.sh --phase-probe exited $rc"
counts=$(sed -n 's/^# phase (mem_probe before and after every run): rounds shared \([0-9]*\), apart \([0-9]*\), mixed \([0-9]*\)$/\1 \2 \3/p' <<<"$out")
if [[ -z $counts ]]; then
  bad "no phase line"
else
  read -r shared apart mixed <<<"$counts"
  ((shared + apart + mixed == 2)) || bad "phase counts $counts do not add up to 2 rounds"
fi
for verdict in shared apart; do
  grep -q "^# paired, CPUs $verdict: iwarpx/anchor within each round" <<<"$out" ||
    bad "no paired lines for CPUs $verdict"
done
((fail == 0)) && echo PASS
exit "$fail"
