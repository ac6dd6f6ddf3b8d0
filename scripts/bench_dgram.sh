#!/usr/bin/env bash
# scripts/bench_dgram.sh [options] - datagram endpoint (FI_EP_DGRAM) ping-pong in
# one run on loopback: iwarpx against libfabric's udp provider (the anchor), both
# driven by Debian's own fi_pingpong (libfabric-bin). Prints a markdown table of
# the median latency per size over the repeats and the ratio iwarpx/udp (the
# issue's target: 8 B latency <= 1.0x udp).
#
#   --build DIR     build tree holding libiwarpx-fi.so (default build; built with
#                   `cmake --build DIR --target iwarpx-fi` first)
#   --sizes LIST    comma-separated sizes for fi_pingpong -S (default 8,64,1024,8192,32768)
#   --iters N       fi_pingpong -I per run (default 20000)
#   --repeat N      runs per provider, alternating, median reported (default 3)
#
# Each server runs in the background under `timeout` with its PID recorded, on a
# port the kernel chose; only those PIDs are stopped on exit.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
sizes=8,64,1024,8192,32768
iters=20000
repeat=3
cmdline="scripts/bench_dgram.sh $*"
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --iters) iters=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_dgram.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

pingpong=$(command -v fi_pingpong) || { echo "bench_dgram.sh: fi_pingpong not found (libfabric-bin)" >&2; exit 1; }
cmake --build "$build" --target iwarpx-fi >/dev/null || exit 1
export FI_PROVIDER_PATH=$PWD/$build/prov/iwarpx/src/ofi
unset FI_PROVIDER
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

free_port() {
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# run PROV SIZE OUT: one fi_pingpong pair; appends "size usec" lines to OUT.
run() {
  local prov=$1 size=$2 out=$3 port srv
  port=$(free_port)
  timeout 120 "$pingpong" -p "$prov" -e dgram -I "$iters" -S "$size" -B "$port" >/dev/null 2>&1 &
  srv=$!
  pids+=("$srv")
  for _ in $(seq 100); do
    ss -H -ltn "sport = :$port" | grep -q LISTEN && break
    sleep 0.1
  done
  timeout 120 "$pingpong" -p "$prov" -e dgram -I "$iters" -S "$size" -P "$port" 127.0.0.1 2>&1 |
    awk -v s="$size" '$1 ~ /^[0-9]/ && $3 ~ /^=/ { print s, $7 }' >>"$out"
  wait "$srv" 2>/dev/null
}

IFS=, read -ra size_list <<<"$sizes"
for ((r = 0; r < repeat; ++r)); do
  for s in "${size_list[@]}"; do
    run udp "$s" "$work/udp"
    run iwarpx "$s" "$work/iwarpx"
  done
done

median() {  # median of the usec values for size $2 in file $1
  awk -v s="$2" '$1 == s { print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n/a"; exit }
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "# $cmdline"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, fi_pingpong -e dgram -I $iters, median of $repeat"
echo
echo "| size (B) | udp (µs) | iwarpx (µs) | iwarpx/udp |"
echo "|---:|---:|---:|---:|"
for s in "${size_list[@]}"; do
  u=$(median "$work/udp" "$s")
  i=$(median "$work/iwarpx" "$s")
  ratio=$(awk -v a="$i" -v b="$u" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }')
  echo "| $s | $u | $i | $ratio |"
done
