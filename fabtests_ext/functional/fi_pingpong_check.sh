#!/usr/bin/env bash
# fi_pingpong_check.sh FI_PINGPONG PROVIDER_DIR [extra fi_pingpong options...]
# Debian's own fi_pingpong (libfabric-bin, a client nobody here wrote) over the iwarpx MSG
# endpoint on loopback: the server and the client run with -c (every payload checked) for
# all of fi_pingpong's default sizes. The server is started here, its PID recorded, and
# only that PID is stopped. Both sides are bounded by timeout.
set -uo pipefail
pingpong=$1
export FI_PROVIDER_PATH=$2
shift 2
unset FI_PROVIDER

# A port nobody listens on: the kernel's choice for a throw-away bind.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
trap 'rm -f "$log"; [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null' EXIT

timeout 120 "$pingpong" -p iwarpx -e msg -c -B "$port" "$@" >"$log" 2>&1 &
srv=$!
# Wait until the server listens (at most 10 s).
for _ in $(seq 100); do
  ss -ltn "sport = :$port" | grep -q LISTEN && break
  sleep 0.1
done
client=$(timeout 120 "$pingpong" -p iwarpx -e msg -c -P "$port" "$@" 127.0.0.1 2>&1)
crc=$?
wait "$srv"
src=$?
srv=
echo "--- client (exit $crc)"; echo "$client"
echo "--- server (exit $src)"; cat "$log"
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || { echo "FAIL: fi_pingpong exited $crc/$src"; exit 1; }
# Every size line reports as many acknowledged as sent (the "=N" column).
lines=$(grep -cE '^[0-9]+[kmg]?[[:space:]]+[0-9]+[[:space:]]+=[0-9]+' <<<"$client")
[ "$lines" -ge 1 ] || { echo "FAIL: no result lines from the client"; exit 1; }
echo "PASS: $lines sizes"
