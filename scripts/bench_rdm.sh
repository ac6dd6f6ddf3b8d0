#!/usr/bin/env bash
# scripts/bench_rdm.sh [options] - reliable datagram endpoint (FI_EP_RDM) benchmarks against
# libfabric's "tcp;ofi_rxm" and "udp;ofi_rxd", two tables in one run:
#   1. ping-pong latency: scripts/bench_pingpong.sh --ep rdm (Debian's fi_pingpong);
#   2. streaming tagged bandwidth: scripts/bench_rdm_bw.sh (fabtests_ext/bench/tagged_bw).
#
#   --build DIR       build tree, both tables (default build)
#   --no-build        use DIR's programs and libiwarpx-fi.so as they are, both tables
#   --anchors LIST    providers to compare with, both tables (default "tcp;ofi_rxm,udp;ofi_rxd")
#   --repeat N        alternating runs per provider, median reported, both tables (default 3)
#   --sizes LIST      ping-pong sizes, comma-separated bytes (see bench_pingpong.sh)
#   --iters N         ping-pong fi_pingpong -I per run (see bench_pingpong.sh)
#   --bw-sizes LIST   bandwidth sizes (default 8,1k,16k,64k,1m,4m; see bench_rdm_bw.sh)
#   --bw-window N     bandwidth: messages in flight per iteration, tagged_bw -w (default 64)
#   --bw-min-time SEC bandwidth: measured seconds per size (tagged_bw --min-time, 0.2)
#   --no-pingpong     skip the ping-pong table
#   --no-bw           skip the bandwidth table
#
# Exit status: non-zero if either script failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

pp_args=()
bw_args=()
pingpong=1
bw=1
cmdline="scripts/bench_rdm.sh $*"
while (($#)); do
  case $1 in
    --build|--anchors|--repeat) pp_args+=("$1" "$2") bw_args+=("$1" "$2"); shift ;;
    --no-build) pp_args+=("$1") bw_args+=("$1") ;;
    --sizes|--iters) pp_args+=("$1" "$2"); shift ;;
    --bw-sizes) bw_args+=(--sizes "$2"); shift ;;
    --bw-window) bw_args+=(-w "$2"); shift ;;
    --bw-min-time) bw_args+=(--min-time "$2"); shift ;;
    --no-pingpong) pingpong=0 ;;
    --no-bw) bw=0 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_rdm.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# Each table's own header line names the exact command that reproduces it.
echo "# $cmdline"
echo
rc=0
if ((pingpong)); then
  scripts/bench_pingpong.sh --ep rdm "${pp_args[@]}" || rc=1
fi
if ((bw)); then
  ((pingpong)) && echo
  scripts/bench_rdm_bw.sh "${bw_args[@]}" || rc=1
fi
exit "$rc"
