#!/usr/bin/env bash
# scripts/bench_dgram.sh [options] - datagram endpoint (FI_EP_DGRAM) ping-pong against
# libfabric's udp provider: scripts/bench_pingpong.sh --ep dgram (see its options).
IWARPX_BENCH_NAME=scripts/bench_dgram.sh exec "$(dirname "$0")/bench_pingpong.sh" --ep dgram "$@"
