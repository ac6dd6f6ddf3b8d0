#!/usr/bin/env bash
# Usage: bench_btl_modes_smoke.sh <source dir> <build dir>
# Smoke test of scripts/bench_btl.sh --p2p datagram,sctp: btl tcp and the build tree's btl
# iwarpx with both point-to-point modes in one run, label "mpi":
#   1. sizes 8 and 1 KiB, a few iterations, one round, --strict: the script must exit 0, run
#      tcp, iwarpx datagram and iwarpx sctp in that order (the "== NAME: ok" lines), show each
#      iwarpx run's command with its btl_iwarpx_p2p, and print the header with one column and
#      one ratio per mode for each test and one row per size whose 10 cells are all numbers
#      (a failed run reads "n/a" and fails this check);
#   2. the same with --corrupt 1k: mpi_bench damages one byte of the checked 1 KiB data, so
#      each of the three runs must fail with mpi_bench's "data check failed" and the script
#      with --strict must exit non-zero: every column comes from a run whose check can fail.
# Each step is bounded by timeout (and the script bounds every mpirun itself).
set -uo pipefail
src=$1
build=$2
out=$(mktemp "${TMPDIR:-/tmp}/bench_btl_modes_smoke.XXXXXX")
err=$out.err
trap 'rm -f "$out" "$err"' EXIT
args=(--build "$build" --no-build --p2p "datagram,sctp" --sizes "8,1k" --iters 5 --warmup 1 -w 8
      --repeat 1 --strict --timeout 120)
names=(tcp iwarpx_datagram iwarpx_sctp)
fail=0

rc=0
timeout -k 10 280 "$src/scripts/bench_btl.sh" "${args[@]}" >"$out" 2>"$err" || rc=$?
cat "$out"
sed 's/^/stderr: /' "$err"
if ((rc != 0)); then
  echo "FAIL: bench_btl.sh exited $rc"
  fail=1
fi
order=$(sed -n 's/^== \([a-z_]*\): ok$/\1/p' "$err" | paste -sd' ')
[[ $order == "${names[*]}" ]] || { echo "FAIL: runs '$order', expected '${names[*]}'"; fail=1; }
for m in datagram sctp; do
  grep -Eq "^# iwarpx_$m: .*--mca btl_iwarpx_p2p $m( |$)" "$out" ||
    { echo "FAIL: no iwarpx_$m command line with btl_iwarpx_p2p $m"; fail=1; }
done
head='| size (B) | tcp lat (us) | iwarpx datagram lat (us) | ratio | iwarpx sctp lat (us) | ratio |'
head+=' tcp MB/s | iwarpx datagram MB/s | ratio | iwarpx sctp MB/s | ratio |'
grep -qxF "$head" "$out" || { echo "FAIL: no table header with both modes"; fail=1; }
num='[0-9]+(\.[0-9]+)?'
for s in 8 1024; do
  row="^\\| $s \\|( $num \\|){10}\$"
  grep -Eq "$row" "$out" || { echo "FAIL: no complete numeric row for $s B"; fail=1; }
done
rows=$(grep -c '^| [0-9]' "$out" || true)
[[ $rows -eq 2 ]] || { echo "FAIL: $rows table rows, expected 2"; fail=1; }

rc=0
timeout -k 10 280 "$src/scripts/bench_btl.sh" "${args[@]}" --corrupt 1k >"$out" 2>"$err" || rc=$?
sed 's/^/corrupt stderr: /' "$err"
if ((rc == 0)); then
  echo "FAIL: with --corrupt 1k bench_btl.sh --strict exited 0"
  fail=1
fi
for name in "${names[@]}"; do
  grep -q "^== $name: FAILED (mpirun rc=[0-9]*): mpi_bench: data check failed: rank 1, latency, size 1024" "$err" ||
    { echo "FAIL: the $name run did not fail on the corrupted 1 KiB data"; fail=1; }
done
((fail == 0)) && echo "PASS: bench_btl.sh --p2p datagram,sctp: tcp, iwarpx datagram and iwarpx sctp side by side; corrupted data detected by all three runs"
exit $fail
