#!/usr/bin/env bash
# scripts/demo.sh - the main job's demo (run ./autogen.sh first; the README's
# first command does).
#
# Today: a complete connected iWARP exchange produced by the project's codecs
# (MPA v2 request/reply with CRC, RTR, Send, RDMA Write, Read Request/Response,
# atomics, Terminate) crosses a loopback TCP connection; tshark captures it and
# its own iWARP dissectors decode every frame. Then datagram iWARP over UDP,
# decoded by the project's Lua dissector. Needs root for the captures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IWARPX_BUILD_DIR:-build}
exchange=$build/tests/wire_check/wire_exchange
[[ -x $exchange ]] || { echo "demo: $exchange not built; run ./autogen.sh" >&2; exit 1; }
echo "== iwarpx demo: connected iWARP from our codecs, decoded by tshark =="
python3 tests/wire_check/tshark_wire_check.py --exchange "$exchange" --demo
echo
echo "== iwarpx demo: datagram iWARP (docs/wire.md) decoded by tools/wireshark/iwarpx_dgram.lua =="
python3 tests/wire_check/tshark_dgram_check.py --sender "$build/tests/wire_check/dgram_sender" --demo
