#!/usr/bin/env bash
# Usage: bench_btl_smoke.sh <source dir> <build dir>
# Smoke test of scripts/bench_btl.sh and mpi_bench over both BTLs (btl self,tcp and the build
# tree's btl self,iwarpx), label "mpi":
#   1. sizes 8 and 1 MiB, a few iterations, one run per BTL, --strict: the script must exit 0
#      and print the table header and one row per size whose 6 cells are all numbers (a
#      failed run reads "n/a" and fails this check);
#   2. the same with --corrupt 1m: mpi_bench damages one byte of the checked 1 MiB data, so
#      the run of each BTL must fail with mpi_bench's "data check failed" and the script
#      with --strict must exit non-zero. A data check that cannot fail cannot pass this.
# Each step is bounded by timeout (and the script bounds every mpirun itself).
set -uo pipefail
src=$1
build=$2
out=$(mktemp "${TMPDIR:-/tmp}/bench_btl_smoke.XXXXXX")
err=$out.err
trap 'rm -f "$out" "$err"' EXIT
args=(--build "$build" --no-build --sizes "8,1m" --iters 5 --warmup 1 -w 8 --repeat 1 --strict
      --timeout 120)
fail=0

rc=0
timeout -k 10 280 "$src/scripts/bench_btl.sh" "${args[@]}" >"$out" 2>"$err" || rc=$?
cat "$out"
sed 's/^/stderr: /' "$err"
if ((rc != 0)); then
  echo "FAIL: bench_btl.sh exited $rc"
  fail=1
fi
grep -q '^| size (B) | tcp lat (us) | iwarpx lat (us) | ratio | tcp MB/s | iwarpx MB/s | ratio |$' \
  "$out" || { echo "FAIL: no table header"; fail=1; }
num='[0-9]+(\.[0-9]+)?'
for s in 8 1048576; do
  row="^\\| $s \\|( $num \\|){6}\$"
  grep -Eq "$row" "$out" || { echo "FAIL: no complete numeric row for $s B"; fail=1; }
done
rows=$(grep -c '^| [0-9]' "$out" || true)
[[ $rows -eq 2 ]] || { echo "FAIL: $rows table rows, expected 2"; fail=1; }
grep -q "^# .*[0-9] CPUs, load" "$out" || { echo "FAIL: no date/CPU header line"; fail=1; }

rc=0
timeout -k 10 280 "$src/scripts/bench_btl.sh" "${args[@]}" --corrupt 1m >"$out" 2>"$err" || rc=$?
sed 's/^/corrupt stderr: /' "$err"
if ((rc == 0)); then
  echo "FAIL: with --corrupt 1m bench_btl.sh --strict exited 0"
  fail=1
fi
for btl in tcp iwarpx; do
  grep -q "^== $btl: FAILED (mpirun rc=[0-9]*): mpi_bench: data check failed: rank 1, latency, size 1048576" "$err" ||
    { echo "FAIL: the $btl run did not fail on the corrupted 1 MiB data"; fail=1; }
done
((fail == 0)) && echo "PASS: bench_btl.sh table complete over tcp and iwarpx; corrupted data detected by both runs"
exit $fail
