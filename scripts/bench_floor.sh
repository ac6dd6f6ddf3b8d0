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
#   tcp_crc_w64_mbs tcp_w64 and udp_w64 with iWARP's CRC32c (raw_floor --crc: computed by the
#   udp_crc_w64_mbs sender over every 65000-byte chunk, checked by the receiver): what one flow
#                   that keeps the CRC (WIRE.md: datagrams and MPA keep it) moves here
#   tcp_splice_crc_w64_mbs  tcp_crc_w64 with the sender's copy gone (raw_floor --splice:
#                   vmsplice + splice; the receiver's copy is the only one): what a zero-copy
#                   send with the CRC would move here
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
#   --anchors           also run, in every round between the raw measures, the anchors of the
#                       issue targets that sockets bound (osc pt2pt Put 8 B and Get 1 MiB with
#                       lock/flush, btl tcp latency 8 B and bandwidth 1 MiB, `tcp;ofi_rxm`
#                       tagged bandwidth 1 MiB), and print a second table, "Ceilings": per
#                       target, the raw sockets' ratio to the anchor within each round (the
#                       round trip or one-way time for latency, the best of the four flows for
#                       bandwidth; for the bandwidth rows of issues 4 and 6 also the better of
#                       the two cold flows (64 buffers, as mpi_bench and tagged_bw send) and of
#                       the two cold flows with the CRC32c, as iwarpx keeps the CRC). This
#                       host's speed moves in phases of minutes, so only ratios within a
#                       round say what the sockets leave a transport here.
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
anchors=0
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
    --anchors) anchors=1 ;;
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

if ((anchors)); then
  # shellcheck disable=SC2034 # read by bench_mpi_setup: only Open MPI's own components
  run_iwarpx=0
  if ((do_build)); then
    cmake --build "$build" -j1 --target osc_bench tagged_bw >&2 || { echo "bench_floor.sh: build failed" >&2; exit 1; }
  fi
  raw_prog=$prog
  bench_mpi_setup bench_floor.sh mpi_bench unused  # sets prog (mpi_bench), mpirun
  prog_mpi=$prog
  prog=$raw_prog
  osc_prog=$build/bench/mpi/osc_bench
  bw_prog=$build/fabtests_ext/bench/tagged_bw
  for f in "$osc_prog" "$bw_prog"; do
    [[ -x $f ]] || { echo "bench_floor.sh: $f missing (build it first)" >&2; exit 1; }
  done
fi

failures=0
runs=0
round=0
pair_result=
# pair_value KEY PROGRAM ARGS...: one server/client pair of PROGRAM (a CSV client: the value
# in column 6 of its second line) into pair_result; else counts a failure and returns 1.
# Not in a $(...): the counters must stay in this shell.
pair_value() {
  local key=$1
  shift
  runs=$((runs + 1))
  local log=$work/logs/$runs.$key
  pair_server=("$@")
  pair_client=("$@")
  bench_pair "$key" "$log" || { failures=$((failures + 1)); return 1; }
  pair_result=$(awk -F, 'NR == 2 { print $6 }' "$log.client.out")
  [[ $pair_result =~ ^[0-9.]+$ ]] ||
    { echo "== $key: no result in its output" >&2; failures=$((failures + 1)); return 1; }
}

# measure KEY ARGS...: one raw_floor pair; appends "KEY VALUE" to $work/data/floor.
measure() {
  local key=$1 v
  shift
  pair_value "$key" "$prog" --min-time "$min_time" "$@" || return
  v=$pair_result
  echo "$key $v" >>"$work/data/floor"
  echo "$key $round $v" >>"$work/data/rounds"
  if [[ $key == udp_oneway_us ]]; then
    v=$(awk -v v="$v" 'BEGIN { printf "%.3f", 2 * v }')
    echo "udp_rtt_us $v" >>"$work/data/floor"
    echo "udp_rtt_us $round $v" >>"$work/data/rounds"
  fi
}

# anchor_mpi NAME CSV_TESTS... -- MPIRUN_ARGS...: one mpirun of the anchors (2 ranks, pml ob1,
# btl self,tcp on lo); appends "KEY ROUND VALUE" for each CSV_TEST ("test,size" as the CSV
# names them, KEY = name_test_size) to $work/data/rounds.
anchor_mpi() {
  local name=$1 tests=() t
  shift
  while [[ $1 != -- ]]; do tests+=("$1"); shift; done
  shift
  runs=$((runs + 1))
  local log=$work/logs/$runs.$name
  if ! bench_mpirun "$name" "$log" 300 "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
    -np 2 --mca oob_tcp_if_include lo --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo "$@"; then
    failures=$((failures + 1))
    return
  fi
  for t in "${tests[@]}"; do
    # mpi_bench: program,label,test,size,iters,value,unit; osc_bench: ...,test,sync,win,size,iters,value,unit
    awk -F, -v t="${t%,*}" -v sz="${t#*,}" -v k="${name}_${t%,*}_${t#*,}" -v r="$round" '
      $3 == t && $(NF - 3) == sz { print k, r, $(NF - 1); found = 1 }
      END { if (!found) exit 1 }' "$log.out" >>"$work/data/rounds" ||
      { echo "== $name: no $t result in its output" >&2; failures=$((failures + 1)); }
  done
}

# anchor_rxm: one tagged_bw pair of `tcp;ofi_rxm` at the stream size.
anchor_rxm() {
  pair_value rxm "$bw_prog" -p "tcp;ofi_rxm" --sizes "$stream_size" --min-time "$min_time" || return
  echo "rxm_bw $round $pair_result" >>"$work/data/rounds"
}

bytes=$(numfmt --from=iec "${stream_size^^}" 2>/dev/null) || { echo "bench_floor.sh: bad --stream-size" >&2; exit 2; }
for ((round = 0; round < repeat; ++round)); do  # alternating, so drift hits every measure alike
  measure udp_oneway_us --op udp --sizes "$udp_size"
  ((anchors)) && anchor_mpi pt2pt put_latency,"$udp_size" get_bw,"$bytes" -- --mca osc pt2pt \
    "$osc_prog" --csv --win allocate --tests put_latency,get_bw --sync lock --sizes "$udp_size,$stream_size"
  measure tcp_w64_mbs --op stream -w 64 --sizes "$stream_size"
  measure tcp_w1_mbs --op stream -w 1 --sizes "$stream_size"
  ((anchors)) && anchor_mpi btltcp latency,"$udp_size" bw,"$bytes" -- \
    "$prog_mpi" --csv --tests latency,bw --sizes "$udp_size,$stream_size"
  measure udp_w64_mbs --op udpstream -w 64 --sizes "$stream_size"
  ((anchors)) && anchor_rxm
  measure udp_w1_mbs --op udpstream -w 1 --sizes "$stream_size"
  measure tcp_crc_w64_mbs --op stream -w 64 --crc --sizes "$stream_size"
  measure tcp_splice_crc_w64_mbs --op stream -w 64 --crc --splice --sizes "$stream_size"
  measure udp_crc_w64_mbs --op udpstream -w 64 --crc --sizes "$stream_size"
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
row tcp_crc_w64_mbs "$stream_size" "MB/s" "tcp_w64 with CRC32c per 65000-byte chunk"
row tcp_splice_crc_w64_mbs "$stream_size" "MB/s" "tcp_crc_w64 sent by vmsplice + splice (no copy at the sender)"
row udp_crc_w64_mbs "$stream_size" "MB/s" "udp_w64 with CRC32c per datagram"
# ceiling ISSUE TEXT ANCHOR_KEY OP LIMIT RAW_KEY...: one row of the Ceilings table. Within each
# round: the best raw value (the least time for OP <=, the most MB/s for >=) over the anchor's.
ceiling() {
  local issue=$1 text=$2 akey=$3 op=$4 limit=$5
  shift 5
  awk -v a="$akey" -v raw="$*" -v op="$op" -v lim="$limit" -v issue="$issue" -v text="$text" '
    function sort(x, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
    }
    function median(x, n) { return (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
    BEGIN { k = split(raw, rk, " "); for (i = 1; i <= k; i++) israw[rk[i]] = 1 }
    $1 == a { anchor[$2] = $3 }
    ($1 in israw) && (!($2 in best) || (op == ">=" ? $3 > best[$2] : $3 < best[$2])) { best[$2] = $3 }
    END {
      n = 0
      for (r in anchor) if ((r in best) && anchor[r] > 0) { n++; q[n] = best[r] / anchor[r]; v[n] = anchor[r] }
      if (n == 0) { printf "| %s | %s %s %.2f | n/a | n/a | n/a |\n", issue, text, op, lim; exit }
      sort(q, n); sort(v, n)
      m = median(q, n)
      if (op == "<=") verdict = m > lim ? "cannot be met here: sockets alone take more" : "reachable"
      else verdict = m < lim ? "above the best raw flow here" : "within the raw flows"
      a = median(v, n)
      printf "| %s | %s %s %.2f | " (a >= 100 ? "%.0f" : "%.2f") " | %.2f (%.2f-%.2f), %d round%s | %s |\n",
        issue, text, op, lim, a, m, q[1], q[n], n, n == 1 ? "" : "s", verdict
    }' "$work/data/rounds"
}

if ((anchors)); then
  flows=(tcp_w64_mbs tcp_w1_mbs udp_w64_mbs udp_w1_mbs)
  echo
  # One line: bench_report.py takes the line before a table as its caption.
  echo "Ceilings, raw sockets / anchor within each round (latency: raw time / anchor time, a bound no transport over these sockets goes below; bandwidth: the best of the four raw flows / anchor, what one flow with one copy each way moves here; rows \"cold flows\": the better of the two flows from 64 buffers, as the benchmarks send, without and with the CRC32c iwarpx computes and checks; \"cold UDP flow\": the UDP one alone, the bound of the datagram path; \"zero-copy send\": the cold TCP flow with the CRC32c sent by vmsplice + splice, not a bound of transports that copy at the sender but what sending without that copy would move):"
  echo
  echo "| issue | target | anchor median | raw / anchor per round: median (min-max) | verdict |"
  echo "|---|---|---:|---|---|"
  ceiling 7 "MPI_Put $udp_size B lock/flush latency / osc pt2pt" "pt2pt_put_latency_$udp_size" "<=" 0.30 udp_rtt_us
  ceiling 7 "MPI_Get $stream_size lock/flush bandwidth / osc pt2pt" "pt2pt_get_bw_$bytes" ">=" 2.00 "${flows[@]}"
  ceiling 6 "$udp_size B latency / btl tcp" "btltcp_latency_$udp_size" "<=" 0.80 udp_oneway_us
  ceiling 6 "$stream_size bandwidth / btl tcp" "btltcp_bw_$bytes" ">=" 1.30 "${flows[@]}"
  ceiling 4 "$stream_size tagged bandwidth / tcp;ofi_rxm" rxm_bw ">=" 1.00 "${flows[@]}"
  # mpi_bench and tagged_bw send from 64 buffers (cold): the flows that do the same, without
  # and with the CRC32c iwarpx keeps.
  cold_flows=(tcp_w64_mbs udp_w64_mbs)
  crc_flows=(tcp_crc_w64_mbs udp_crc_w64_mbs)
  ceiling 6 "$stream_size bandwidth / btl tcp, cold flows" "btltcp_bw_$bytes" ">=" 1.30 "${cold_flows[@]}"
  ceiling 6 "$stream_size bandwidth / btl tcp, cold flows with CRC32c" "btltcp_bw_$bytes" ">=" 1.30 "${crc_flows[@]}"
  ceiling 4 "$stream_size tagged bandwidth / tcp;ofi_rxm, cold flows" rxm_bw ">=" 1.00 "${cold_flows[@]}"
  ceiling 4 "$stream_size tagged bandwidth / tcp;ofi_rxm, cold flows with CRC32c" rxm_bw ">=" 1.00 "${crc_flows[@]}"
  # The default RDM chain moves a rendezvous over datagrams: its bound is the UDP flow alone.
  ceiling 4 "$stream_size tagged bandwidth / tcp;ofi_rxm, cold UDP flow with CRC32c" rxm_bw ">=" 1.00 \
    udp_crc_w64_mbs
  # Not a ceiling of the transports as built (they copy at the sender): what one that sent
  # without that copy would move (docs/PERFORMANCE.md: no more than with it, on this host).
  ceiling 4 "$stream_size tagged bandwidth / tcp;ofi_rxm, cold TCP flow, zero-copy send, CRC32c" \
    rxm_bw ">=" 1.00 tcp_splice_crc_w64_mbs
  ceiling 6 "$stream_size bandwidth / btl tcp, cold TCP flow, zero-copy send, CRC32c" \
    "btltcp_bw_$bytes" ">=" 1.30 tcp_splice_crc_w64_mbs
fi
if ((failures)); then
  echo
  echo "# $failures run(s) failed (see stderr)"
  ((strict)) && exit 1
fi
exit 0
