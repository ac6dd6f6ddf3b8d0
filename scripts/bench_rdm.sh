#!/usr/bin/env bash
# scripts/bench_rdm.sh [options] - reliable datagram endpoint (FI_EP_RDM) ping-pong against
# libfabric's "tcp;ofi_rxm" and "udp;ofi_rxd": scripts/bench_pingpong.sh --ep rdm (see its
# options).
IWARPX_BENCH_NAME=scripts/bench_rdm.sh exec "$(dirname "$0")/bench_pingpong.sh" --ep rdm "$@"
