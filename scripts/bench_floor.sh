#!/usr/bin/env bash
# scripts/bench_floor.sh [options] - what the kernel's sockets alone cost on this machine, the
# floor under every comparison of docs/PERFORMANCE.md, measured by fabtests_ext/bench/raw_floor
# on 127.0.0.1 with no libfabric at all:
#   udp_oneway_us   raw UDP ping-pong, one-way latency (half round trip), busy-polled recvfrom
#   udp_rtt_us      the same round trip: the least any operation that needs an answer (a
#                   remote completion, MPI_Win_flush after MPI_Put) can take over sockets here
#   tcp_w64_mbs     one raw TCP stream, 64 messages per acknowledged iteration from 64
#                   distinct buffers (tagged_bw's and mpi_bench's pattern: cold buffers)
#   tcp_w1_mbs      one raw TCP stream, one buffer sent and received again and again (hot,
#                   like an MPI_Get that reads the same window)
#   udp_w64_mbs     the same over one UDP flow: 65000-byte datagrams sent from and received
#   udp_w1_mbs      straight into the slots (one copy each way, as iwarpx's RD datagrams)
# Prints a markdown table: median, min and max over the repeats. scripts/bench_report.py puts
# these next to the issue targets: the latency floors bound what any transport over these
# sockets can reach; for bandwidth the better of the two streams is what one flow with one
# copy each way moves here.
#
#   --build DIR         build tree (default build); builds raw_floor first
#   --no-build          use DIR's raw_floor as it is
#   --repeat N          runs per measure, median reported (default 5)
#   --udp-size BYTES    ping-pong size (default 8)
#   --stream-size SIZE  stream message size (default 1m)
#   --min-time SEC      measured seconds per run (raw_floor --min-time, default 0.5)
#   --strict            exit 1 if any run failed (its cells read "n/a")
#   --keep-logs         keep the server/client logs (path printed)
#
# Every server runs in the background under `timeout` with its PID recorded, binds port 0 on
# 127.0.0.1 and reports its port through a file; on exit only those PIDs are stopped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

build=build
do_build=1
repeat=5
udp_size=8
stream_size=1m
min_time=0.5
strict=0
keep_logs=0
cmdline="${IWARPX_BENCH_NAME:-scripts/bench_floor.sh} $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --repeat) repeat=$2; shift ;;
    --udp-size) udp_size=$2; shift ;;
    --stream-size) stream_size=$2; shift ;;
    --min-time) min_time=$2; shift ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_floor.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "bench_floor.sh: bad --repeat $repeat" >&2; exit 2; }
[[ $build = /* ]] || build=$PWD/$build
if ((do_build)); then
  cmake --build "$build" -j1 --target raw_floor >&2 || { echo "bench_floor.sh: build failed" >&2; exit 1; }
fi
prog=$build/fabtests_ext/bench/raw_floor
[[ -x $prog ]] || { echo "bench_floor.sh: $prog missing (build it first)" >&2; exit 1; }

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # the scripts run from the repository root (cd above)
bench_work_start bench_floor

failures=0
runs=0
# measure KEY ARGS...: one raw_floor pair; appends "KEY VALUE" to $work/data/floor.
measure() {
  local key=$1
  shift
  runs=$((runs + 1))
  local log=$work/logs/$runs.$key
  pair_server=("$prog" --min-time "$min_time" "$@")
  pair_client=("$prog" --min-time "$min_time" "$@")
  if ! bench_pair "$key" "$log"; then
    failures=$((failures + 1))
    return
  fi
  local v
  v=$(awk -F, 'NR == 2 { print $6 }' "$log.client.out")
  [[ $v =~ ^[0-9.]+$ ]] || { echo "== $key: no result in its output" >&2; failures=$((failures + 1)); return; }
  echo "$key $v" >>"$work/data/floor"
  [[ $key == udp_oneway_us ]] && awk -v v="$v" 'BEGIN { printf "udp_rtt_us %.3f\n", 2 * v }' >>"$work/data/floor"
}

for ((r = 0; r < repeat; ++r)); do  # alternating, so drift hits every measure alike
  measure udp_oneway_us --op udp --sizes "$udp_size"
  measure tcp_w64_mbs --op stream -w 64 --sizes "$stream_size"
  measure tcp_w1_mbs --op stream -w 1 --sizes "$stream_size"
  measure udp_w64_mbs --op udpstream -w 64 --sizes "$stream_size"
  measure udp_w1_mbs --op udpstream -w 1 --sizes "$stream_size"
done

echo "# $cmdline"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg), raw_floor --min-time $min_time, median of $repeat"
echo
echo "Raw kernel sockets on 127.0.0.1 (no libfabric):"
echo
echo "| measure | size | median | min | max | unit | what it is |"
echo "|---|---:|---:|---:|---:|---|---|"
row() {  # KEY SIZE UNIT TEXT: median, min, max formatted as bench_median formats
  local mmm
  mmm=$(bench_values "$work/data/floor" "$1" | awk '
    function f(x) { return sprintf(x >= 100 ? "%.0f" : (x >= 1 ? "%.2f" : "%.4f"), x) }
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "n/a | n/a | n/a"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      print f(m) " | " f(v[1]) " | " f(v[NR])
    }')
  echo "| $1 | $2 | $mmm | $3 | $4 |"
}
row udp_oneway_us "$udp_size" us "UDP ping-pong, half round trip"
row udp_rtt_us "$udp_size" us "UDP round trip: the least a remote completion costs"
row tcp_w64_mbs "$stream_size" "MB/s" "one TCP stream, 64 distinct buffers (cold)"
row tcp_w1_mbs "$stream_size" "MB/s" "one TCP stream, one buffer (hot)"
row udp_w64_mbs "$stream_size" "MB/s" "one UDP flow, 64 distinct buffers (cold)"
row udp_w1_mbs "$stream_size" "MB/s" "one UDP flow, one buffer (hot)"
if ((failures)); then
  echo
  echo "# $failures run(s) failed (see stderr)"
  ((strict)) && exit 1
fi
exit 0
