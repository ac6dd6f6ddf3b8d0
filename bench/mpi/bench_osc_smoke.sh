#!/usr/bin/env bash
# Usage: bench_osc_smoke.sh <source dir> <build dir>
# Smoke test of scripts/bench_osc.sh and osc_bench over `--mca osc iwarpx` (the build tree's
# component, btl self,tcp) and `--mca osc pt2pt --mca btl self,tcp`, label "mpi":
#   1. sizes 8 and 1 KiB, every test, every sync mode (lock, fence, PSCW), a few iterations,
#      one run per side, --strict, --out a temporary directory: the script must exit 0, print
#      the table header and 3 x (4 x 2 + 3) = 33 rows whose three value cells are all numbers
#      (a failed run reads "n/a" and fails this check), the targets line, and write
#      osc_bench.md plus two PNG files;
#   2. every test and sync at 8 B over MPI_Win_create windows: 21 numeric rows;
#   3. the same (allocate window, then create window) with --corrupt 1k: osc_bench damages the
#      checked 1 KiB data, so the run of each side must fail with "data check failed" and the
#      script with --strict must exit non-zero. A check that cannot fail cannot pass this.
# Each step is bounded by timeout (and the script bounds every mpirun itself).
set -uo pipefail
src=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_osc_smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
err=$tmp/err
args=(--build "$build" --no-build --sizes "8,1k" --iters 5 --warmup 1 -w 2 --repeat 1 --strict
      --timeout 120)
fail=0

rc=0
timeout -k 10 280 "$src/scripts/bench_osc.sh" "${args[@]}" --out "$tmp/docs" >"$out" 2>"$err" ||
  rc=$?
cat "$out"
sed 's/^/stderr: /' "$err"
if ((rc != 0)); then
  echo "FAIL: bench_osc.sh exited $rc"
  fail=1
fi
grep -q '^| test | sync | size (B) | unit | osc pt2pt | osc iwarpx | ratio |$' "$out" ||
  { echo "FAIL: no table header"; fail=1; }
num='[0-9]+(\.[0-9]+)?'
row="^\\| [a-z_]+_(latency|bw) \\| (lock|fence|pscw) \\| (8|1024) \\| (us|MB/s) \\|( $num \\|){3}\$"
rows=$(grep -Ec "$row" "$out" || true)
[[ $rows -eq 33 ]] || { echo "FAIL: $rows complete numeric rows, expected 33"; fail=1; }
for sync in lock fence pscw; do
  for t in put_latency get_latency put_bw get_bw; do
    for s in 8 1024; do
      grep -Eq "^\\| $t \\| $sync \\| $s \\|" "$out" || { echo "FAIL: no row $t $sync $s"; fail=1; }
    done
  done
  for t in acc_latency fop_latency cswap_latency; do
    grep -Eq "^\\| $t \\| $sync \\| 8 \\|( [^|]+ \\|){4}\$" "$out" ||
      { echo "FAIL: no row $t $sync 8"; fail=1; }
  done
done
grep -Eq "^# targets \\(issue 7\\): MPI_Put 8 B lock/flush latency ratio $num " "$out" ||
  { echo "FAIL: no numeric targets line"; fail=1; }
grep -q '^| put_latency | lock | 8 |' "$tmp/docs/osc_bench.md" 2>/dev/null ||
  { echo "FAIL: --out wrote no osc_bench.md table"; fail=1; }
for png in osc_latency.png osc_bandwidth.png; do
  [[ $(head -c 8 "$tmp/docs/$png" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
    { echo "FAIL: --out wrote no PNG $png"; fail=1; }
done

# The same over MPI_Win_create windows (8 B only): 3 x (4 + 3) = 21 numeric rows.
rc=0
timeout -k 10 280 "$src/scripts/bench_osc.sh" "${args[@]}" --win create --sizes 8 >"$out" 2>"$err" ||
  rc=$?
sed 's/^/create stderr: /' "$err"
((rc == 0)) || { echo "FAIL: bench_osc.sh --win create exited $rc"; fail=1; }
rows=$(grep -Ec "^\\| [a-z_]+_(latency|bw) \\| (lock|fence|pscw) \\| 8 \\| (us|MB/s) \\|( $num \\|){3}\$" "$out" || true)
[[ $rows -eq 21 ]] || { echo "FAIL: --win create: $rows complete numeric rows, expected 21"; fail=1; }
grep -q -- "--win create" "$out" || { echo "FAIL: --win create not in the command lines"; fail=1; }

for win in allocate create; do
  rc=0
  timeout -k 10 280 "$src/scripts/bench_osc.sh" "${args[@]}" --win "$win" --sync lock \
    --corrupt 1k >"$out" 2>"$err" || rc=$?
  sed "s/^/corrupt $win stderr: /" "$err"
  if ((rc == 0)); then
    echo "FAIL: with --corrupt 1k (window $win) bench_osc.sh --strict exited 0"
    fail=1
  fi
  for side in pt2pt iwarpx; do
    # The first failure line either rank printed (put data at rank 1, get data at rank 0).
    grep -Eq "^== $side: FAILED \(mpirun rc=[0-9]+\): osc_bench: data check failed: rank [01], (put|get)_(latency|bw), lock, size 1024" "$err" ||
      { echo "FAIL: the $side run (window $win) did not fail on the corrupted 1 KiB data"; fail=1; }
  done
done
((fail == 0)) && echo "PASS: bench_osc.sh table complete over osc pt2pt and osc iwarpx (33 rows, plots written; 21 over MPI_Win_create); corrupted data detected by both"
exit $fail
