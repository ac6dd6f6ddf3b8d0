#!/usr/bin/env bash
# scripts/bench_msg.sh [options] - connected-endpoint (FI_EP_MSG) benchmarks in
# one run on loopback: iwarpx, libfabric's tcp provider (the anchor) and a raw
# TCP socket ping-pong (the floor). Prints markdown tables and the ratios the
# issue targets (8 B latency iwarpx/tcp <= 0.8, 1 MiB RMA write bandwidth
# iwarpx/tcp >= 1.3).
#
#   --build DIR      build tree (default build); runs `ninja -C DIR` for the
#                    programs and libiwarpx-fi.so first
#   --bin-dir DIR    take the programs from DIR and build nothing
#   --sizes LIST     ping-pong sizes (default 8:4m, see msg_pingpong --help)
#   --bw-sizes LIST  bandwidth sizes (default 8:4m)
#   --ops LIST       bandwidth operations, comma-separated (default write,read)
#   --min-time SEC / --iters N / --warmup N / -w N   passed to the programs
#   --pin            server on CPU 0, client on CPU 1 (taskset)
#   --no-iwarpx      skip iwarpx (columns "skipped")
#   --strict         exit 1 if any run that was not skipped failed
#   --keep-logs      keep the server/client logs (path printed)
#
# Every server is started in the background under `timeout` with its PID
# recorded, binds port 0 on 127.0.0.1 and reports its port through a file;
# clients run under `timeout`. On exit only the PIDs this script started are
# killed. A failing iwarpx run (e.g. endpoints not implemented yet) is reported
# and its columns read "n/a"; the other runs continue.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=build
bin_dir=
sizes=8:4m
bw_sizes=8:4m
ops=write,read
run_iwarpx=1
strict=0
keep_logs=0
pin=0
prog_args=()
bw_args=()
cmdline="scripts/bench_msg.sh $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --bw-sizes) bw_sizes=$2; shift ;;
    --ops) ops=$2; shift ;;
    --min-time|--iters|--warmup) prog_args+=("$1" "$2"); shift ;;
    -w) bw_args+=(-w "$2"); shift ;;
    --pin) pin=1 ;;
    --no-iwarpx) run_iwarpx=0 ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_msg.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

if [[ -z $bin_dir ]]; then
  bin_dir=$build/fabtests_ext/bench
  targets=(msg_pingpong rma_bw tcp_pingpong)
  ((run_iwarpx)) && targets+=(iwarpx-fi)
  if [[ -f $build/build.ninja ]]; then
    ninja -C "$build" -j1 "${targets[@]}" >&2 || { echo "bench_msg.sh: build failed" >&2; exit 1; }
  fi
fi
for p in msg_pingpong rma_bw tcp_pingpong; do
  [[ -x $bin_dir/$p ]] || { echo "bench_msg.sh: $bin_dir/$p missing (build it first)" >&2; exit 1; }
done
iwarpx_dir=$root/$build/prov/iwarpx/src/ofi
[[ $build = /* ]] && iwarpx_dir=$build/prov/iwarpx/src/ofi

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # the scripts run from the repository root (cd above)
bench_work_start bench_msg

server_cpu=()
client_cpu=()
if ((pin)) && command -v taskset >/dev/null; then
  server_cpu=(taskset -c 0)
  client_cpu=(taskset -c 1)
fi

failures=0
# run NAME IMPL PROGRAM [ARGS...]: one server + client pair; the client's CSV
# goes to $work/NAME.csv. IMPL is iwarpx, tcp or rawtcp. Returns non-zero on
# any failure, with the reason on stderr.
run() {
  local name=$1 impl=$2 prog=$3
  shift 3
  local env_args=(env -u FI_PROVIDER -u FI_PROVIDER_PATH)
  local prov_args=()
  case $impl in
    iwarpx) env_args+=(FI_PROVIDER_PATH="$iwarpx_dir") prov_args=(-p iwarpx) ;;
    tcp) prov_args=(-p tcp) ;;
  esac
  local log=$work/$name
  pair_server=("${env_args[@]}" "${server_cpu[@]}" "$bin_dir/$prog" "${prov_args[@]}" "$@")
  pair_client=("${env_args[@]}" "${client_cpu[@]}" "$bin_dir/$prog" "${prov_args[@]}" "$@")
  bench_pair "$name" "$log" || return 1
  mv "$log.client.out" "$work/$name.csv"
}

# attempt NAME IMPL PROGRAM ARGS...: run, or record why not.
attempt() {
  local name=$1 impl=$2
  if [[ $impl = iwarpx ]] && ((!run_iwarpx)); then
    echo skipped >"$work/$name.na"
    return
  fi
  if [[ $impl = iwarpx && ! -f $iwarpx_dir/libiwarpx-fi.so ]]; then
    echo "== $name: iwarpx NOT RUN: $iwarpx_dir/libiwarpx-fi.so missing" >&2
    echo n/a >"$work/$name.na"
    ((failures++))
    return
  fi
  if ! run "$@"; then
    [[ $impl = iwarpx ]] && echo "== $name: iwarpx failed; its columns read n/a" >&2
    echo n/a >"$work/$name.na"
    ((failures++))
  fi
}

# value NAME SIZE: the result for SIZE from NAME's CSV, or its n/a text.
value() {
  local name=$1 size=$2
  if [[ -f $work/$name.csv ]]; then
    awk -F, -v s="$size" 'NR > 1 && $4 == s { v = $6 } END { print (v == "" ? "n/a" : v) }' \
      "$work/$name.csv"
  else
    cat "$work/$name.na" 2>/dev/null || echo n/a
  fi
}

# ratio A B: A/B with two decimals, n/a unless both are numbers.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }'
}

# sizes_of NAME...: the sizes of the first CSV present, in order.
sizes_of() {
  local n
  for n; do
    if [[ -f $work/$n.csv ]]; then
      awk -F, 'NR > 1 { print $4 }' "$work/$n.csv"
      return
    fi
  done
}

fmt() { awk -v v="$1" 'BEGIN { if (v ~ /^[0-9.]+$/) printf "%.2f", v; else print v }'; }
human() {
  awk -v s="$1" 'BEGIN {
    if (s >= 1048576 && s % 1048576 == 0) printf "%d MiB", s / 1048576;
    else if (s >= 1024 && s % 1024 == 0) printf "%d KiB", s / 1024;
    else printf "%d B", s }'
}

for impl in iwarpx tcp; do
  attempt "pingpong.$impl" "$impl" msg_pingpong --sizes "$sizes" "${prog_args[@]}"
done
attempt pingpong.rawtcp rawtcp tcp_pingpong --sizes "$sizes" "${prog_args[@]}"
IFS=, read -ra op_list <<<"$ops"
for op in "${op_list[@]}"; do
  for impl in iwarpx tcp; do
    attempt "bw_$op.$impl" "$impl" rma_bw --op "$op" --sizes "$bw_sizes" "${prog_args[@]}" \
      "${bw_args[@]}"
  done
done

echo
echo "Command: \`$cmdline\` ($(date -u +%Y-%m-%d), $(nproc) CPUs, load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg), libfabric $(pkg-config --modversion libfabric 2>/dev/null ||
    echo '?'))"
echo
echo "Ping-pong, one-way latency (half round trip), µs:"
echo
echo "| size | iwarpx | tcp | raw TCP | iwarpx/tcp |"
echo "|---|---|---|---|---|"
for s in $(sizes_of pingpong.tcp pingpong.iwarpx pingpong.rawtcp); do
  a=$(value pingpong.iwarpx "$s")
  b=$(value pingpong.tcp "$s")
  c=$(value pingpong.rawtcp "$s")
  echo "| $(human "$s") | $(fmt "$a") | $(fmt "$b") | $(fmt "$c") | $(ratio "$a" "$b") |"
done
for op in "${op_list[@]}"; do
  echo
  echo "Bandwidth, fi_$op (rma_bw --op $op), MB/s:"
  echo
  echo "| size | iwarpx | tcp | iwarpx/tcp |"
  echo "|---|---|---|---|"
  for s in $(sizes_of "bw_$op.tcp" "bw_$op.iwarpx"); do
    a=$(value "bw_$op.iwarpx" "$s")
    b=$(value "bw_$op.tcp" "$s")
    echo "| $(human "$s") | $(fmt "$a") | $(fmt "$b") | $(ratio "$a" "$b") |"
  done
done
echo
lat_ratio=$(ratio "$(value pingpong.iwarpx 8)" "$(value pingpong.tcp 8)")
echo "Target 8 B latency iwarpx/tcp <= 0.80: $lat_ratio"
if [[ ,$ops, = *,write,* ]]; then
  bw_ratio=$(ratio "$(value bw_write.iwarpx 1048576)" "$(value bw_write.tcp 1048576)")
  echo "Target 1 MiB RMA write bandwidth iwarpx/tcp >= 1.30: $bw_ratio"
fi

if ((strict && failures)); then
  echo "bench_msg.sh: $failures run(s) failed" >&2
  exit 1
fi
exit 0
