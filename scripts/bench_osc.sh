#!/usr/bin/env bash
# scripts/bench_osc.sh [options] - MPI one-sided (window) latency and bandwidth of the
# project's osc iwarpx against Open MPI's osc pt2pt over btl tcp, in one run on loopback,
# 2 ranks, both driven by the same program (bench/mpi/osc_bench: osu_put_latency /
# osu_get_latency / osu_put_bw / osu_get_bw / osu_acc_latency / fetch-and-op / cswap style;
# latency in us per operation + synchronisation, bandwidth MB/s = 10^6 B/s):
#   pt2pt:  --mca osc pt2pt --mca pml ob1 --mca btl self,tcp (Debian's
#           /etc/openmpi/openmpi-mca-params.conf disables osc pt2pt; the command line wins)
#   iwarpx: --mca osc iwarpx --mca pml ob1 --mca btl self,<--iwarpx-btl> (mca_osc_iwarpx.so,
#           mca_btl_iwarpx.so and libiwarpx-fi.so of the build tree)
# The runs alternate (pt2pt, iwarpx, pt2pt, ...); the table gives the median per test, sync
# mode and size over the repeats and the ratio iwarpx/pt2pt. Issue 7 targets: MPI_Put 8 B
# latency (lock/flush) ratio <= 0.3, MPI_Get bandwidth at 1 MiB (lock/flush) ratio >= 2.
#
#   --build DIR        build tree (default build); builds osc_bench and the components
#   --no-build         use DIR's programs as they are
#   --quick            the demo's short run: --sizes 8,1k,64k,1m --sync lock --iters 300
#                      --budget 32m -w 16 --repeat 1 (later options still override)
#   --sizes LIST       sizes (default 1:4m; acc/fop/cswap always one int64)
#   --tests LIST       osc_bench tests (default all)
#   --sync LIST        lock,fence,pscw (default all)
#   --win KIND         allocate (default) or create
#   --repeat N         runs per component, alternating, median reported (default 3); with
#                      N > 1 a "# paired:" line gives the two targets' ratios within a round
#   --iwarpx-btl BTL   the BTL next to osc iwarpx (pml traffic, barriers): tcp (default) or
#                      iwarpx; osc iwarpx does its RMA on its own endpoint either way
#   --iters N / --warmup N / -w N / --budget SIZE   passed to osc_bench
#   --out DIR          also write DIR/osc_bench.md (the table), DIR/osc_latency.png and
#                      DIR/osc_bandwidth.png (scripts/bench_osc_plot.py, log axes)
#   --bind POLICY      mpirun --bind-to (default none)
#   --timeout SEC      bound on every mpirun (default 900)
#   --no-pt2pt, --no-iwarpx   skip one side (its columns read "n/a")
#   --strict           exit 1 if any run failed (a failed run's numbers read "n/a")
#   --keep-logs        keep the mpirun logs (path printed)
#   --corrupt SIZE     testing: osc_bench damages the checked data at SIZE, every run must fail
#   MPIRUN=...         mpirun to use (default: mpirun on PATH)
#
# Every mpirun runs in the background under `timeout` with its PID recorded (bench_lib.sh), as
# root with --allow-run-as-root --oversubscribe and OOB on lo; OMPI_MCA_* variables of the
# caller are dropped so both sides see the same settings.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=build
do_build=1
sizes=1:4m
tests=""
syncs=lock,fence,pscw
win=allocate
repeat=3
iwarpx_btl=tcp
bind=none
timeout_s=900
run_pt2pt=1
run_iwarpx=1
strict=0
keep_logs=0
out_dir=""
declare -A pass=()
cmdline="${IWARPX_BENCH_NAME:-scripts/bench_osc.sh} $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --quick) sizes=8,1k,64k,1m; syncs=lock; repeat=1
             pass[--iters]=300; pass[--budget]=32m; pass[-w]=16 ;;
    --sizes) sizes=$2; shift ;;
    --tests) tests=$2; shift ;;
    --sync) syncs=$2; shift ;;
    --win) win=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --iwarpx-btl) iwarpx_btl=$2; shift ;;
    --iters|--warmup|-w|--budget|--corrupt) pass[$1]=$2; shift ;;
    --out) out_dir=$2; shift ;;
    --bind) bind=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --no-pt2pt) run_pt2pt=0 ;;
    --no-iwarpx) run_iwarpx=0 ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_osc.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "bench_osc.sh: bad --repeat $repeat" >&2; exit 2; }
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { echo "bench_osc.sh: bad --timeout $timeout_s" >&2; exit 2; }
[[ $iwarpx_btl == tcp || $iwarpx_btl == iwarpx ]] ||
  { echo "bench_osc.sh: --iwarpx-btl is tcp or iwarpx" >&2; exit 2; }
prog_args=(--win "$win" --sizes "$sizes" --sync "$syncs")
[[ -n $tests ]] && prog_args+=(--tests "$tests")
for k in "${!pass[@]}"; do prog_args+=("$k" "${pass[$k]}"); done

[[ $build = /* ]] || build=$root/$build
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # the scripts run from the repository root (cd above)
bench_mpi_setup bench_osc.sh osc_bench mca_osc_iwarpx.so mca_osc_iwarpx mca_btl_iwarpx iwarpx-fi

bench_work_start bench_osc

common=(--allow-run-as-root --oversubscribe --bind-to "$bind" -np 2 --mca oob_tcp_if_include lo
        --mca pml ob1)

failures=0
runs=0
# run NAME: one mpirun over all tests; appends "test sync size value" lines to $work/data/NAME.
run() {
  runs=$((runs + 1))
  local name=$1 log=$work/logs/$runs.$1
  local args=()
  case $name in
    pt2pt) args=(--mca osc pt2pt --mca btl "self,tcp" --mca btl_tcp_if_include lo) ;;
    iwarpx) args=(--mca mca_base_component_path "$ompi_dir:$mca_dir" --mca osc iwarpx
                  --mca btl "self,$iwarpx_btl" -x FI_PROVIDER_PATH="$fi_dir")
            [[ $iwarpx_btl == tcp ]] && args+=(--mca btl_tcp_if_include lo) ;;
  esac
  local cmd=("$mpirun" "${common[@]}" "${args[@]}" "$prog" --csv --label "$name" "${prog_args[@]}")
  bench_mpirun "$name" "$log" "$timeout_s" "${cmd[@]}" || return 1
  # osc_bench,label,test,sync,win,size,iters,value,unit
  awk -F, -v n="$name" '$1 == "osc_bench" && $2 == n { print $3, $4, $6, $8 }' "$log.out" \
    >>"$work/data/$name"
  # Per test and sync as "size value round", for the ratios within a round (bench_paired).
  mkdir -p "$work/rounds"
  awk -F, -v n="$name" -v r="$round" -v d="$work/rounds" \
    '$1 == "osc_bench" && $2 == n { print $6, $8, r >>(d "/" n "." $3 "." $4) }' "$log.out"
  echo "== $name: ok" >&2
}

for ((r = 0; r < repeat; ++r)); do
  round=$r  # run() tags its lines with it
  if ((run_pt2pt)); then run pt2pt || failures=$((failures + 1)); fi
  if ((run_iwarpx)); then run iwarpx || failures=$((failures + 1)); fi
done

# The keys measured (test sync size), in osc_bench's order: sync, test, size.
keys=$(cat "$work"/data/* 2>/dev/null | awk '{ print $1, $2, $3 }' | awk '!seen[$0]++' |
       awk 'BEGIN { ns = split("lock fence pscw", s); for (i = 1; i <= ns; ++i) so[s[i]] = i }
            { print so[$2], $0 }' | sort -k1,1n -s | cut -d' ' -f2-)
median_of() { bench_median "$work/data/$1" "$2"; }

table() {
  echo "# $cmdline"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load$(uptime | sed 's/.*load average//'), mpirun --bind-to $bind, osc_bench ${prog_args[*]}, median of $repeat"
  ((run_pt2pt)) && echo "# pt2pt:  ${cmd_pt2pt:-}"
  ((run_iwarpx)) && echo "# iwarpx: ${cmd_iwarpx:-}"
  echo "# latency: us per operation + synchronisation, lower is better; bandwidth: MB/s (10^6 B/s), higher is better; ratio = iwarpx / pt2pt"
  echo
  echo "| test | sync | size (B) | unit | osc pt2pt | osc iwarpx | ratio |"
  echo "|---|---|---:|---|---:|---:|---:|"
  local t s z a b unit
  while read -r t s z; do
    [[ -n $t ]] || continue
    a=$(median_of pt2pt "$t $s $z")
    b=$(median_of iwarpx "$t $s $z")
    unit=us
    [[ $t == *_bw ]] && unit=MB/s
    echo "| $t | $s | $z | $unit | $a | $b | $(bench_ratio "$b" "$a") |"
  done <<<"$keys"
  echo
  local lat bw
  lat=$(bench_ratio "$(median_of iwarpx "put_latency lock 8")" "$(median_of pt2pt "put_latency lock 8")")
  bw=$(bench_ratio "$(median_of iwarpx "get_bw lock 1048576")" "$(median_of pt2pt "get_bw lock 1048576")")
  echo "# targets (issue 7): MPI_Put 8 B lock/flush latency ratio $lat (target <= 0.3); MPI_Get 1 MiB lock/flush bandwidth ratio $bw (target >= 2)"
  local spreads=() side
  for side in pt2pt iwarpx; do
    spreads+=("$(bench_spread "$work/data/$side" "put_latency lock 8" "$side put_latency lock 8 B" us)")
    spreads+=("$(bench_spread "$work/data/$side" "get_bw lock 1048576" "$side get_bw lock 1 MiB" MB/s)")
  done
  local line
  line=$(printf '%s; ' "${spreads[@]}" | sed 's/^\(; \)*//; s/\(; \)*$//; s/; \(; \)*/; /g')
  [[ -n $line ]] && echo "# spread: $line"
  if ((run_pt2pt)) && ((run_iwarpx)) && ((repeat > 1)); then
    echo "# paired: iwarpx/pt2pt within each round, median (min-max): put_latency lock 8 B" \
      "$(bench_paired "$work/rounds/iwarpx.put_latency.lock" "$work/rounds/pt2pt.put_latency.lock" 8 2 3);" \
      "get_bw lock 1 MiB $(bench_paired "$work/rounds/iwarpx.get_bw.lock" "$work/rounds/pt2pt.get_bw.lock" 1048576 2 3)"
  fi
  return 0
}

table | tee "$work/table.md"
if [[ -n $out_dir ]]; then
  mkdir -p "$out_dir"
  cp "$work/table.md" "$out_dir/osc_bench.md"
  # Medians for the plots: "side test sync size value".
  for side in pt2pt iwarpx; do
    while read -r t s z; do
      [[ -n $t ]] || continue
      v=$(median_of "$side" "$t $s $z")
      [[ $v != n/a ]] && echo "$side $t $s $z $v"
    done <<<"$keys"
  done >"$work/medians"
  /usr/bin/python3 scripts/bench_osc_plot.py "$work/medians" "$out_dir" ||
    { echo "bench_osc.sh: plotting failed" >&2; failures=$((failures + 1)); }
fi
if ((failures)); then
  echo
  echo "# $failures of $runs run(s) failed (see stderr)"
  ((strict)) && exit 1
fi
exit 0
