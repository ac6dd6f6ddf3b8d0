#!/usr/bin/env bash
# stats_at_close_check.sh FABTESTS_RDM FABTESTS_DGRAM FABTESTS_MSG
# FI_IWARPX_STATS=1 makes every endpoint print its non-zero counters to stderr when it
# closes. Runs one test of each program with it set: the test must still pass, and the
# report must name the endpoint type, its bound address and the counts the test caused
# (a Terminate each way for the RDM protection error and for the MSG write to a wrong
# STag, bad-CRC and malformed drops for the DGRAM bad-datagram test).
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

# Without the parameter nothing is printed.
out=$(FI_IWARPX_STATS=0 timeout 60 "$dgram" --gtest_filter='DgramTest.BadDatagrams*' 2>&1) ||
  fail "fabtests_dgram failed: $out"
grep -q '^iwarpx stats:' <<<"$out" && fail "FI_IWARPX_STATS=0 still printed a report"
exit $rc
