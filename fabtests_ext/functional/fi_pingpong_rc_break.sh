#!/usr/bin/env bash
# fi_pingpong_rc_break.sh FI_PINGPONG PROVIDER_DIR [extra fi_pingpong options...]
# The lossless fall-back of a broken RDM connection seen through libfabric: Debian's
# fi_pingpong -e rdm -c (every payload checked) with a chain that moves the peer to its
# on-demand connection at once, while the connection's TCP sockets are destroyed under
# it from outside (ss -K, as a dead link or a middlebox reset would) a few times
# mid-run. Both sides must finish with every size acknowledged, and their
# FI_IWARPX_STATS must show connections closed and opened again with no RD session
# failed. ss -K needs CAP_NET_ADMIN: the script re-runs itself in a user and network
# namespace of its own (unshare -rn, loopback only), so it touches no other socket.
set -uo pipefail
if [ -z "${IWARPX_IN_NETNS:-}" ]; then
  if ! unshare -rn true 2>/dev/null; then
    echo "SKIP: unshare -rn is not permitted here"; exit 77
  fi
  IWARPX_IN_NETNS=1 exec unshare -rn "$0" "$@"
fi
ip link set lo up || { echo "FAIL: cannot bring lo up in the namespace"; exit 1; }
here=$(dirname "$0")
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
out=$(mktemp)
trap 'rm -f "$out"; [ -n "${killer:-}" ] && kill "$killer" 2>/dev/null' EXIT
# The killer: every 0.3 s, destroy the established TCP sockets that are not
# fi_pingpong's own out-of-band one (port $port): the RDM endpoints' connections.
(
  for _ in $(seq "${IWARPX_BREAKS:-4}"); do
    sleep 0.3
    ss -K -tn state established "( sport != :$port and dport != :$port )" >/dev/null 2>&1
  done
) &
killer=$!
IWARPX_PP_EP=rdm IWARPX_PP_PORT=$port FI_IWARPX_STATS=1 \
  "$here/fi_pingpong_check.sh" "$@" >"$out" 2>&1
rc=$?
wait "$killer"
killer=
cat "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: fi_pingpong_check.sh exited $rc"; exit 1; }
# Per-peer lines (FI_IWARPX_STATS=1): a connection closed, more than one opened or
# accepted in all, and no RD session failed.
closed=$(grep -oE 'rc_closed=[0-9]+' "$out" | cut -d= -f2 | paste -sd+ | bc)
opened=$(grep -oE 'rc_(opened|accepted)=[0-9]+' "$out" | cut -d= -f2 | paste -sd+ | bc)
if grep -qE 'rd_failed=[1-9]' "$out"; then echo "FAIL: an RD session failed"; exit 1; fi
[ "${closed:-0}" -ge 2 ] || { echo "FAIL: no connection was broken (rc_closed=${closed:-0})"; exit 1; }
[ "${opened:-0}" -ge 4 ] || { echo "FAIL: the peer did not promote again (opened+accepted=${opened:-0})"; exit 1; }
# The endpoint lines (extension 0.8): breaks recovered over RD without loss are counted.
fallbacks=$(grep -oE 'rdm_rc_fallbacks=[0-9]+' "$out" | cut -d= -f2 | paste -sd+ | bc)
[ "${fallbacks:-0}" -ge 1 ] || { echo "FAIL: no recovered break counted (rdm_rc_fallbacks)"; exit 1; }
echo "PASS: connections broken and reopened (closed $closed, opened+accepted $opened, fallbacks $fallbacks), no error"
