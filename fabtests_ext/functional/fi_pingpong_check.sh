#!/usr/bin/env bash
# fi_pingpong_check.sh FI_PINGPONG PROVIDER_DIR [extra fi_pingpong options...]
# Debian's own fi_pingpong (libfabric-bin, a client nobody here wrote) over an iwarpx
# endpoint on loopback: the server and the client run with -c (every payload checked) for
# all of fi_pingpong's default sizes. IWARPX_PP_EP selects the endpoint type (msg, the
# default, dgram or rdm); FI_IWARPX_LLP=sctp (inherited by both) runs msg over SCTP. The
# server is started here, its PID recorded, and only that PID is stopped. Both sides are
# bounded by timeout. IWARPX_PP_EXPECT, if set, is an extended regular expression that both
# sides' output must match (with FI_IWARPX_STATS=1: a counter the run must have moved).
# IWARPX_PP_CHECK, when set, is a command run last with one more argument: a file holding
# both sides' output (stdout and stderr); its exit status decides the test.
# IWARPX_PP_PORT, when set, is the out-of-band port (else a free one is picked).
set -uo pipefail
pingpong=$1
export FI_PROVIDER_PATH=$2
shift 2
unset FI_PROVIDER

ep=${IWARPX_PP_EP:-msg}
case $ep in
  msg | dgram | rdm) ;;
  *) echo "FAIL: IWARPX_PP_EP=$ep (msg, dgram or rdm)"; exit 1 ;;
esac
# A port nobody uses (TCP and UDP): the kernel's choice for a throw-away bind.
port=${IWARPX_PP_PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
log=$(mktemp)
trap 'rm -f "$log"; [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null' EXIT

sctp=0
[ "$ep" = msg ] && [ "${FI_IWARPX_LLP:-tcp}" = sctp ] && sctp=1
# Over SCTP both sides log at info level, which proves the endpoints ran over SCTP.
if [ "$sctp" = 1 ]; then
  export FI_LOG_LEVEL=info FI_LOG_PROV=iwarpx
fi
timeout 120 "$pingpong" -p iwarpx -e "$ep" -c -B "$port" "$@" >"$log" 2>&1 &
srv=$!
# Wait until the server listens (at most 10 s): fi_pingpong's out-of-band TCP socket on
# the port (every endpoint type exchanges its addresses there first).
for _ in $(seq 100); do
  ss -H -ltn "sport = :$port" | grep -q LISTEN && break
  sleep 0.1
done
client=$(timeout 120 "$pingpong" -p iwarpx -e "$ep" -c -P "$port" "$@" 127.0.0.1 2>&1)
crc=$?
wait "$srv"
src=$?
srv=
if [ "$sctp" = 1 ]; then
  # Keep the result lines and the provider's connection lines, not every info line.
  echo "--- client (exit $crc)"; grep -vE 'libfabric:[0-9]+:[0-9.]+:iwarpx:' <<<"$client"
  echo "--- server (exit $src)"; grep -vE 'libfabric:[0-9]+:[0-9.]+:iwarpx:' "$log"
  grep -q 'listening on .* over sctp' "$log" ||
    { echo "FAIL: the server's passive endpoint did not listen over SCTP"; exit 1; }
  grep -q 'connecting to .* over sctp' <<<"$client" ||
    { echo "FAIL: the client's endpoint did not connect over SCTP"; exit 1; }
  echo "over SCTP: $(grep -o 'listening on .* over sctp' "$log" | head -1)"
else
  echo "--- client (exit $crc)"; echo "$client"
  echo "--- server (exit $src)"; cat "$log"
fi
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || { echo "FAIL: fi_pingpong exited $crc/$src"; exit 1; }
# Every size line reports as many acknowledged as sent (the "=N" column).
lines=$(grep -cE '^[0-9]+[kmg]?[[:space:]]+[0-9]+[kmg]?[[:space:]]+=[0-9]+' <<<"$client")
[ "$lines" -ge 1 ] || { echo "FAIL: no result lines from the client"; exit 1; }
if [ -n "${IWARPX_PP_CHECK:-}" ]; then
  { echo "$client"; cat "$log"; } >"$log.all"
  # shellcheck disable=SC2086 # the command and its arguments, split on purpose
  $IWARPX_PP_CHECK "$log.all" || { rm -f "$log.all"; exit 1; }
  rm -f "$log.all"
fi
if [ -n "${IWARPX_PP_EXPECT:-}" ]; then
  grep -qE "$IWARPX_PP_EXPECT" <<<"$client" || { echo "FAIL: client output lacks /$IWARPX_PP_EXPECT/"; exit 1; }
  grep -qE "$IWARPX_PP_EXPECT" "$log" || { echo "FAIL: server output lacks /$IWARPX_PP_EXPECT/"; exit 1; }
fi
echo "PASS: $lines sizes"
