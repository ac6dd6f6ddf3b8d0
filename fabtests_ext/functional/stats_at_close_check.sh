#!/usr/bin/env bash
# stats_at_close_check.sh FABTESTS_RDM FABTESTS_DGRAM FABTESTS_MSG
# FI_IWARPX_STATS=1 makes every endpoint print its non-zero counters to stderr when it
# closes. Runs one test of each program with it set: the test must still pass, and the
# report must name the endpoint type, its bound address and the counts the test caused
# (a Terminate each way for the RDM protection error and for the MSG write to a wrong
# STag, bad-CRC and malformed drops for the DGRAM bad-datagram test), the RDM per-peer
# table (top 16 by bytes, "and N more peers") and a MSG connection's MPA counters.
set -uo pipefail
rdm=$1
dgram=$2
msg=$3
export FI_IWARPX_STATS=1
rc=0
fail() { echo "FAIL: $*"; rc=1; }

out=$(timeout 60 "$rdm" --gtest_filter='RdmBadInputTest.ProtectionError*' 2>&1) ||
  fail "fabtests_rdm failed: $out"
grep -E '^iwarpx stats: an RDM endpoint 127\.0\.0\.1:[0-9]+: .*terminates_sent=1' <<<"$out" ||
  fail "no RDM report with terminates_sent=1"
grep -E '^iwarpx stats: an RDM endpoint 127\.0\.0\.1:[0-9]+: .*terminates_received=1' <<<"$out" ||
  fail "no RDM report with terminates_received=1"

out=$(timeout 60 "$dgram" --gtest_filter='DgramTest.BadDatagrams*' 2>&1) ||
  fail "fabtests_dgram failed: $out"
grep -E '^iwarpx stats: a DGRAM endpoint 127\.0\.0\.1:[0-9]+: .*rx_bad_crc=1 rx_malformed=2' <<<"$out" ||
  fail "no DGRAM report with rx_bad_crc=1 rx_malformed=2"

# MSG: the target of an RDMA Write to a wrong STag sends a Terminate, the writer receives it.
out=$(timeout 60 "$msg" --gtest_filter='MsgTest.DeliveryCompleteWriteReportsTargetError' 2>&1) ||
  fail "fabtests_msg failed: $out"
# Each names its connection: its own address and the peer's, real ports (not the port 0 an
# active endpoint is given before it connects).
conn='127\.0\.0\.1:[1-9][0-9]* \(peer 127\.0\.0\.1:[1-9][0-9]*\)'
grep -E "^iwarpx stats: a MSG endpoint $conn: .*terminates_sent=1" <<<"$out" ||
  fail "no MSG report of a connection with terminates_sent=1"
grep -E "^iwarpx stats: a MSG endpoint $conn: .*terminates_received=1" <<<"$out" ||
  fail "no MSG report of a connection with terminates_received=1"

# RDM per-peer table: a hub that heard from 18 senders (sender k sent k + 1 messages)
# prints its 16 busiest peers, busiest first, then "and 2 more peers"; each sender prints
# its one peer, the hub.
out=$(timeout 60 "$rdm" --gtest_filter='RdmPeers.*' 2>&1) || fail "fabtests_rdm RdmPeers failed: $out"
hub=$(grep -E '^iwarpx stats: an RDM endpoint [0-9.:]+: and 2 more peers$' <<<"$out" |
  sed -E 's/^iwarpx stats: an RDM endpoint ([0-9.:]+): .*/\1/')
if [ -z "$hub" ]; then
  fail "no RDM endpoint reported 'and 2 more peers'"
else
  rows=$(grep -F "iwarpx stats: an RDM endpoint $hub: peer " <<<"$out")
  [ "$(wc -l <<<"$rows")" -eq 16 ] || fail "the hub printed $(wc -l <<<"$rows") peer rows, not 16"
  want=18
  while read -r row; do
    grep -qE "\(fi_addr [0-9]+, datagram\): ud_sr_received=$want ud_sr_received_bytes=$((want * 100))( |$)" <<<"$row" ||
      fail "hub row for the peer with $want messages is wrong or out of order: $row"
    want=$((want - 1))
  done <<<"$rows"
fi
senders=$(grep -E '^iwarpx stats: an RDM endpoint [0-9.:]+: peer .*: ud_sr_sent=[0-9]+ ' <<<"$out" | grep -vc "endpoint $hub:")
[ "$senders" -eq 18 ] || fail "$senders senders reported their peer, expected 18"

# DGRAM scalable endpoint: one report for all its contexts; the receiver got 20 datagrams
# (receive context r: 2 (r + 1) messages, 4 contexts).
out=$(timeout 60 "$dgram" --gtest_filter='SepTest.EachReceiveContextGetsOnlyItsMessagesWithTheSendersAddress' 2>&1) ||
  fail "fabtests_dgram SepTest failed: $out"
grep -E '^iwarpx stats: a DGRAM scalable endpoint 127\.0\.0\.1:[0-9]+: (.* )?rx_datagrams=20( |$)' <<<"$out" ||
  fail "no scalable DGRAM report with rx_datagrams=20"

# MSG: a connection's MPA counters (CRC on by default, no markers, data both ways).
out=$(timeout 60 "$msg" --gtest_filter='MsgTest.DeliveryCompleteWriteReportsTargetError' 2>&1) ||
  fail "fabtests_msg failed: $out"
grep -E "^iwarpx stats: a MSG endpoint $conn: .*mpa_connections=1 mpa_crc=1 mpa_fpdus_sent=[1-9][0-9]* mpa_bytes_sent=[1-9][0-9]* mpa_fpdus_received=[1-9]" <<<"$out" ||
  fail "no MSG report with mpa_connections=1 mpa_crc=1 and FPDUs both ways"

# Without the parameter nothing is printed.
out=$(FI_IWARPX_STATS=0 timeout 60 "$dgram" --gtest_filter='DgramTest.BadDatagrams*' 2>&1) ||
  fail "fabtests_dgram failed: $out"
grep -q '^iwarpx stats:' <<<"$out" && fail "FI_IWARPX_STATS=0 still printed a report"
exit $rc
