#!/usr/bin/env bash
# pingpong_stats_expect.sh ITERATIONS SIZE MODE OUTPUT
# Checks what FI_IWARPX_STATS=1 printed when fi_pingpong's two RDM endpoints closed
# (OUTPUT: client and server stderr together), run by fi_pingpong_check.sh through
# IWARPX_PP_CHECK with -S SIZE (a rendezvous size) and -I ITERATIONS:
#   - exactly two endpoint lines and two per-peer lines (each side has one peer);
#   - per side, the rendezvous messages sent and received on the datagram and the
#     connected channel add up to ITERATIONS, their bytes to ITERATIONS * SIZE (fi_pingpong
#     also sends one small synchronisation message, which goes eagerly);
#   - the endpoint line's rdm_ud_zcopy_msgs + rdm_rc_rdma_msgs is the same count;
#   - MODE ud: every message on datagrams, peers in state datagram, no connection;
#     MODE hybrid (a low FI_IWARPX_RC_THRESHOLD_MSGS): some messages on each channel, each
#     side either still connected or back on datagrams with its connection closed
#     (fi_close leaves the connection cleanly first when the peer answers within the
#     linger, extension 0.8), at least one side's connection closed that way or still up,
#     exactly one connection accepted, and (FI_LOG_LEVEL=info) the log line saying the
#     connection was established.
# MODE msg (FI_EP_MSG): two MSG endpoint lines, each with one MPA connection, CRC on,
# markers as FI_IWARPX_MPA_MARKERS asks, no Terminate, and ITERATIONS * SIZE + 4 payload
# bytes sent and received (the 4: fi_pingpong's synchronisation message).
set -uo pipefail
iters=$1
size=$2
mode=$3
out=$4
rc=0
fail() { echo "FAIL: $*"; rc=1; }

# The value of counter $2 in line $1 (0 when the line does not print it: it is zero).
val() { grep -oE "(^| )$2=[0-9]+" <<<"$1" | head -1 | cut -d= -f2 | grep . || echo 0; }

if [ "$mode" = msg ]; then
  mapfile -t msgs < <(grep -E '^iwarpx stats: a MSG endpoint ' "$out")
  [ "${#msgs[@]}" -eq 2 ] || fail "${#msgs[@]} MSG endpoint lines, expected 2"
  want=$((iters * size + 4))
  for l in "${msgs[@]}"; do
    echo "endpoint line: $l"
    [ "$(val "$l" mpa_connections)" -eq 1 ] || fail "mpa_connections is not 1"
    [ "$(val "$l" mpa_crc)" -eq 1 ] || fail "mpa_crc is not 1"
    [ "$(val "$l" mpa_markers)" -eq "${FI_IWARPX_MPA_MARKERS:-0}" ] || fail "mpa_markers is wrong"
    [ "$(val "$l" mpa_bytes_sent)" -eq "$want" ] || fail "mpa_bytes_sent is not $want"
    [ "$(val "$l" mpa_bytes_received)" -eq "$want" ] || fail "mpa_bytes_received is not $want"
    [ "$(val "$l" mpa_fpdus_received)" -gt "$iters" ] || fail "fewer FPDUs received than messages"
    [ "$(($(val "$l" terminates_sent) + $(val "$l" terminates_received)))" -eq 0 ] ||
      fail "a Terminate in a clean run"
  done
  [ "$rc" -eq 0 ] && echo "PASS: MSG stats at close match $iters x $size B"
  exit $rc
fi

mapfile -t eps < <(grep -E '^iwarpx stats: an RDM endpoint [^ ]+: [a-z]' "$out" | grep -v ': peer ')
mapfile -t peers < <(grep -E '^iwarpx stats: an RDM endpoint [^ ]+: peer ' "$out")
[ "${#eps[@]}" -eq 2 ] || fail "${#eps[@]} RDM endpoint lines, expected 2"
[ "${#peers[@]}" -eq 2 ] || fail "${#peers[@]} per-peer lines, expected 2"

accepted=0
connected=0
for l in "${peers[@]}"; do
  echo "peer line: $l"
  sent=$(($(val "$l" ud_zcopy_sent) + $(val "$l" rc_rdma_sent)))
  recv=$(($(val "$l" ud_zcopy_received) + $(val "$l" rc_rdma_received)))
  sent_b=$(($(val "$l" ud_zcopy_sent_bytes) + $(val "$l" rc_rdma_sent_bytes)))
  recv_b=$(($(val "$l" ud_zcopy_received_bytes) + $(val "$l" rc_rdma_received_bytes)))
  [ "$sent" -eq "$iters" ] || fail "rendezvous messages sent $sent, expected $iters"
  [ "$recv" -eq "$iters" ] || fail "rendezvous messages received $recv, expected $iters"
  [ "$sent_b" -eq $((iters * size)) ] || fail "bytes sent $sent_b, expected $((iters * size))"
  [ "$recv_b" -eq $((iters * size)) ] || fail "bytes received $recv_b, expected $((iters * size))"
  [ "$(val "$l" rd_sessions)" -eq 1 ] || fail "rd_sessions is not 1"
  accepted=$((accepted + $(val "$l" rc_accepted)))
  case $mode in
    ud)
      grep -q '(fi_addr [0-9]*, datagram):' <<<"$l" || fail "peer not in state datagram"
      [ "$(val "$l" rc_rdma_sent)" -eq 0 ] || fail "rc_rdma used without a connected chain"
      ;;
    hybrid)
      # fi_close leaves the connection (SWITCH back both ways) before the stats are
      # printed, so both sides are usually back on datagrams with rc_closed counted; a
      # side whose peer did not answer within the linger is still connected.
      if grep -q '(fi_addr [0-9]*, connected):' <<<"$l"; then
        connected=$((connected + 1))
      elif grep -q '(fi_addr [0-9]*, datagram):' <<<"$l" && [ "$(val "$l" rc_closed)" -ge 1 ]; then
        connected=$((connected + 1))
      else
        fail "peer neither connected nor back on datagrams after its connection closed"
      fi
      [ "$(val "$l" ud_zcopy_sent)" -gt 0 ] || fail "nothing on datagrams before the threshold"
      [ "$(val "$l" rc_rdma_sent)" -gt 0 ] || fail "nothing on the connection"
      ;;
  esac
done
for l in "${eps[@]}"; do
  echo "endpoint line: $l"
  n=$(($(val "$l" rdm_ud_zcopy_msgs) + $(val "$l" rdm_rc_rdma_msgs)))
  [ "$n" -eq "$iters" ] || fail "endpoint rendezvous messages $n, expected $iters"
done
if [ "$mode" = hybrid ]; then
  [ "$accepted" -eq 1 ] || fail "$accepted connections accepted, expected 1"
  [ "$connected" -eq 2 ] || fail "a side was neither connected nor closed cleanly at close"
  grep -qE 'rdm ep .*: connection to peer [0-9.]+:[0-9]+ established' "$out" ||
    fail "no FI_LOG info line saying the connection was established"
fi
[ "$rc" -eq 0 ] && echo "PASS: stats at close match $iters x $size B ($mode)"
exit $rc
