#!/usr/bin/env bash
# scripts/bench_scale.sh [options] - how one FI_EP_RDM endpoint scales with its number of
# peers (issue 5 deliverable 6): fabtests_ext/bench/rdm_scale for every mode and peer count
# in one run, on loopback, printing a markdown table of memory per peer (hub RSS growth / N
# after one ping to every peer, and again after the hot-peer phase) and the hot peer's 8-byte
# one-way latency, median over the repeats, with its min / max. The modes take turns within
# each round, in the given order in odd rounds and reversed in even ones (A B, B A, ...), so
# a slow drift of the machine's load treats every mode alike; when both hybrid and rc ran, the
# hot-peer latency ratio hybrid/rc of each round (one pair run back to back) follows the table.
#
#   --build DIR      build tree (default build); builds rdm_scale and iwarpx-fi first
#   --no-build       use DIR's programs as they are
#   --peers LIST     comma-separated peer counts (default 64,256,1024)
#   --modes LIST     comma-separated modes (default ud,hybrid,rc,tcp-rxm,udp-rxd):
#                      ud        iwarpx, datagram channels only (any:ud_sr,any:ud_zcopy)
#                      hybrid    iwarpx, size<=8192:rc_sr,any:ud_sr,any:ud_zcopy with the
#                                default thresholds: the one ping per peer stays on datagrams,
#                                the hot peer moves to a connection during its warm-up
#                      rc        iwarpx, the same chain with FI_IWARPX_RC_THRESHOLD_MSGS=1 and
#                                FI_IWARPX_MAX_RC=4096: a connection to every peer
#                      tcp-rxm   libfabric "tcp;ofi_rxm": a TCP connection to every peer
#                      udp-rxd   libfabric "udp;ofi_rxd"
#   --skip LIST      MODE:N pairs not to run, comma-separated (their cells read "skipped"),
#                    e.g. tcp-rxm:1024: its 4 workers of 256 rxm endpoints each need 6-12 GB
#   --repeat N       rounds: runs per mode and count, median reported (default 3)
#   --iters N        timed hot-peer ping-pongs (default 5000)
#   --per-proc N     peer endpoints per worker process (default 256)
#   --timeout SEC    rdm_scale's bound on every single wait (default 60)
#   --strict         exit 1 if any run failed (its cells read "n/a")
#   --keep-logs      keep the logs (path printed)
#
# Every run is one rdm_scale process (it forks its own workers and reaps them) under
# `timeout`; on exit only PIDs this script started are stopped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=build
do_build=1
peers_list=64,256,1024
modes=ud,hybrid,rc,tcp-rxm,udp-rxd
repeat=3
iters=5000
per_proc=256
timeout_s=60
strict=0
keep_logs=0
skip=
cmdline="scripts/bench_scale.sh $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --peers) peers_list=$2; shift ;;
    --modes) modes=$2; shift ;;
    --skip) skip=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --iters) iters=$2; shift ;;
    --per-proc) per_proc=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_scale.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for v in "$repeat" "$iters" "$per_proc"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench_scale.sh: bad number $v" >&2; exit 2; }
done

[[ $build = /* ]] || build=$root/$build
if ((do_build)); then
  cmake --build "$build" -j1 --target rdm_scale iwarpx-fi >&2 ||
    { echo "bench_scale.sh: build failed" >&2; exit 1; }
fi
prog=$build/fabtests_ext/bench/rdm_scale
iwarpx_dir=$build/prov/iwarpx/src/ofi
[[ -x $prog ]] || { echo "bench_scale.sh: $prog missing (build it first)" >&2; exit 1; }

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh
bench_work_start bench_scale

# mode_env MODE: prints "PROVIDER" then the environment assignments, one per line.
mode_env() {
  case $1 in
    ud|hybrid|rc) echo iwarpx; echo "FI_PROVIDER_PATH=$iwarpx_dir"; bench_iwarpx_mode "$1" ;;
    tcp-rxm) echo "tcp;ofi_rxm" ;;
    udp-rxd) echo "udp;ofi_rxd" ;;
    *) return 1 ;;
  esac
}

IFS=, read -r -a mode_arr <<<"$modes"
IFS=, read -r -a peer_arr <<<"$peers_list"
for m in "${mode_arr[@]}"; do
  mode_env "$m" >/dev/null || { echo "bench_scale.sh: unknown mode $m" >&2; exit 2; }
done
for n in "${peer_arr[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench_scale.sh: bad peer count $n" >&2; exit 2; }
done

failures=0
runs=0
# run MODE N ROUND: appends "per_peer N BYTES", "per_peer_hot N BYTES", "latency N US" and
# "latency_round N ROUND US" lines to $work/data/MODE (bench_lib.sh's data file format)
run() {
  local mode=$1 n=$2 round=$3 lines prov procs log rc=0
  mapfile -t lines < <(mode_env "$mode")
  prov=${lines[0]}
  procs=$(((n + per_proc - 1) / per_proc))
  ((procs < 1)) && procs=1
  runs=$((runs + 1))
  log=$work/logs/$runs.$mode.$n
  echo "== $mode, $n peers, $procs worker process(es), run $runs" >&2
  env -u FI_PROVIDER -u FI_PROVIDER_PATH -u FI_IWARPX_SEND_RULES -u FI_IWARPX_RC_THRESHOLD_MSGS \
    -u FI_IWARPX_MAX_RC "${lines[@]:1}" \
    timeout $((timeout_s * 4 + 600)) "$prog" -p "$prov" --peers "$n" --procs "$procs" \
    --iters "$iters" --warmup 200 --timeout "$timeout_s" --csv >"$log.out" 2>"$log.err" &
  local pid=$!
  started_pids+=("$pid")
  wait "$pid" || rc=$?
  local row
  row=$(grep '^rdm_scale,' "$log.out" | tail -1)
  if ((rc != 0)) || [[ -z $row ]]; then
    echo "== $mode, $n peers: failed (exit $rc):" >&2
    tail -n 5 "$log.err" >&2
    failures=$((failures + 1))
    return 1
  fi
  # rdm_scale,PROV,N,BASE_KIB,PER_PEER,PER_PEER_HOT,LAT
  awk -F, -v n="$n" -v r="$round" '{print "per_peer", n, $5; print "per_peer_hot", n, $6
    print "latency", n, $7; print "latency_round", n, r, $7}' <<<"$row" >>"$work/data/$mode"
}

for ((r = 0; r < repeat; r++)); do
  order=("${mode_arr[@]}")
  if ((r % 2 == 1)); then  # reversed in every second round
    order=()
    for ((i = ${#mode_arr[@]} - 1; i >= 0; i--)); do order+=("${mode_arr[i]}"); done
  fi
  for n in "${peer_arr[@]}"; do
    for m in "${order[@]}"; do
      [[ ,$skip, == *",$m:$n,"* ]] || run "$m" "$n" "$((r + 1))"
    done
  done
done

kib() {
  if [[ $1 == n/a ]]; then echo n/a; else awk -v b="$1" 'BEGIN {printf "%.1f", b / 1024}'; fi
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $cmdline, median of $repeat"
echo
# min_max FILE KEY: "MIN / MAX" of the values (2 decimals), n/a if none.
min_max() {
  bench_values "$1" "$2" | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "n/a"; else printf "%.2f / %.2f\n", v[1], v[NR] }'
}

echo "| mode | peers | KiB per peer | KiB per peer after hot phase | hot-peer 8 B latency (us) | latency min / max (us) |"
echo "|---|---|---|---|---|---|"
for n in "${peer_arr[@]}"; do
  for m in "${mode_arr[@]}"; do
    if [[ ,$skip, == *",$m:$n,"* ]]; then
      echo "| $m | $n | skipped | skipped | skipped | skipped |"
      continue
    fi
    f=$work/data/$m
    echo "| $m | $n | $(kib "$(bench_median "$f" "per_peer $n")") |" \
      "$(kib "$(bench_median "$f" "per_peer_hot $n")") | $(bench_median "$f" "latency $n") |" \
      "$(min_max "$f" "latency $n") |"
  done
done
echo
# The hybrid/rc hot-peer latency of each round: the two runs of a pair ran back to back.
if [[ ,$modes, == *,hybrid,* && ,$modes, == *,rc,* ]]; then
  for n in "${peer_arr[@]}"; do
    pairs=()
    for ((r = 1; r <= repeat; r++)); do
      h=$(bench_median "$work/data/hybrid" "latency_round $n $r")
      c=$(bench_median "$work/data/rc" "latency_round $n $r")
      pairs+=("$(bench_ratio "$h" "$c")")
    done
    med=$(printf '%s\n' "${pairs[@]}" | grep -v '^n/a$' | sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) print "n/a"; else printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    echo "hybrid/rc hot-peer latency at $n peers, per round: ${pairs[*]} (median $med)"
  done
  echo
fi
echo "$runs runs, $failures failed"
((strict && failures > 0)) && exit 1
exit 0
