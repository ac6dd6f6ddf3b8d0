#!/usr/bin/env bash
# fi_info_check.sh FI_INFO LIBIWARPX_FI_SO
# What an operator sees of the provider through Debian's libfabric: fi_info lists an
# FI_EP_MSG / FI_PROTO_IWARP entry, fi_info -e lists every FI_IWARPX_* parameter with
# help text, no utility provider (ofi_rxm) is layered over iwarpx (its own RDM endpoint
# comes with the datagram issue), and
# the library exports fi_prov_ini only.
set -uo pipefail
fi_info=$1
so=$2
dir=$(dirname "$so")
export FI_PROVIDER_PATH=$dir
unset FI_PROVIDER
rc=0
fail() { echo "FAIL: $*"; rc=1; }

out=$(timeout 30 "$fi_info" -p iwarpx 2>&1) || fail "fi_info -p iwarpx exited non-zero: $out"
grep -q 'type: FI_EP_MSG' <<<"$out" || fail "no FI_EP_MSG entry"
grep -q 'type: FI_EP_DGRAM' <<<"$out" || fail "no FI_EP_DGRAM entry"
grep -q 'type: FI_EP_RDM' <<<"$out" || fail "no FI_EP_RDM entry"
grep -q 'protocol: FI_PROTO_IWARP' <<<"$out" || fail "no FI_PROTO_IWARP entry"
grep -q 'ofi_rxm' <<<"$out" && fail "ofi_rxm layered over iwarpx (declined on purpose)"
echo "$out" | grep -E 'provider:|type:|protocol:' | sort | uniq -c
# FI_IWARPX_LLP=sctp makes FI_EP_MSG iWARP over SCTP (FI_PROTO_IWARPX_SCTP, which fi_info
# prints as "Provider specific").
sctp=$(FI_IWARPX_LLP=sctp FI_IWARPX_SCTP_BACKEND=usrsctp timeout 30 "$fi_info" -p iwarpx -t FI_EP_MSG 2>&1)
grep -q 'type: FI_EP_MSG' <<<"$sctp" || fail "FI_IWARPX_LLP=sctp: no FI_EP_MSG entry (usrsctp)"
grep -q 'protocol: Provider specific' <<<"$sctp" ||
  fail "FI_IWARPX_LLP=sctp: FI_EP_MSG is not FI_PROTO_IWARPX_SCTP: $(grep protocol: <<<"$sctp")"
# The kernel backend forced on a kernel without SCTP: no SCTP entry at all.
if python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)" 2>/dev/null; then
  echo "skip: this kernel has SCTP, so FI_IWARPX_SCTP_BACKEND=kernel is offered (not checked)"
else
  kern=$(FI_IWARPX_LLP=sctp FI_IWARPX_SCTP_BACKEND=kernel timeout 30 "$fi_info" -p iwarpx -t FI_EP_MSG 2>&1)
  grep -q 'type: FI_EP_MSG' <<<"$kern" &&
    fail "FI_IWARPX_SCTP_BACKEND=kernel offered SCTP on a kernel without SCTP"
fi

# FI_EP_DGRAM scalable endpoints: up to 16 tx and 16 rx contexts; the others have one.
dgram=$(timeout 30 "$fi_info" -p iwarpx -t FI_EP_DGRAM -v 2>&1)
grep -q 'max_ep_rx_ctx: 16' <<<"$dgram" || fail "FI_EP_DGRAM: max_ep_rx_ctx is not 16"
grep -q 'max_ep_tx_ctx: 16' <<<"$dgram" || fail "FI_EP_DGRAM: max_ep_tx_ctx is not 16"
msg=$(timeout 30 "$fi_info" -p iwarpx -t FI_EP_MSG -v 2>&1)
grep -q 'max_ep_rx_ctx: 1$' <<<"$msg" || fail "FI_EP_MSG: max_ep_rx_ctx is not 1"

params=$(timeout 30 "$fi_info" -e 2>&1 | tr -d '\0')
for p in MPA_CRC MPA_REV MPA_MARKERS IRD ORD PROGRESS_THREAD MAX_MR MULPDU DGRAM_CRC FAULT BUSY_POLL RD_TIMEOUT RDM_EAGER RD_SEGMENT SEND_RULES STATS LLP SCTP_BACKEND; do
  grep -A1 "^# FI_IWARPX_$p:" <<<"$params" | grep -q '^# iwarpx: ..........' ||
    fail "fi_info -e: FI_IWARPX_$p missing or without help text"
done
n=$(grep -c '^# FI_IWARPX_' <<<"$params")
echo "fi_info -e: $n FI_IWARPX_* parameters"

# FI_LOG_LEVEL=info says why hints are refused, naming the endpoint type and the missing
# capability, and once per process the parameters in effect.
out=$(FI_LOG_LEVEL=info FI_LOG_PROV=iwarpx FI_IWARPX_MAX_RC=7 timeout 30 "$fi_info" -p iwarpx \
  -t FI_EP_DGRAM -c 'FI_MSG|FI_ATOMIC' 2>&1) && fail "fi_info accepted FI_ATOMIC on FI_EP_DGRAM"
grep -qE 'fi_getinfo: hints not met by FI_EP_DGRAM: caps asks for .*FI_ATOMIC.*not offered' \
  <<<"$out" || fail "no info line naming FI_EP_DGRAM and FI_ATOMIC as the refusal: $out"
grep -qE 'fi_getinfo: hints not met by FI_EP_MSG: ep_type' <<<"$out" ||
  fail "no info line for the FI_EP_MSG template's refusal"
n=$(grep -c 'parameters in effect: FI_IWARPX_MPA_CRC=1 .*FI_IWARPX_MAX_RC=7 ' <<<"$out")
[ "$n" -eq 1 ] || fail "the parameters line appeared $n times (expected once, with MAX_RC=7)"
out=$(timeout 30 "$fi_info" -p iwarpx -t FI_EP_DGRAM -c 'FI_MSG|FI_ATOMIC' 2>&1)
grep -q 'hints not met' <<<"$out" && fail "refusal reasons printed without FI_LOG_LEVEL=info"

syms=$(nm -D --defined-only "$so" | awk '{print $3}')
[[ $syms == fi_prov_ini ]] || fail "exported symbols are not just fi_prov_ini: $syms"
((rc == 0)) && echo "PASS"
exit $rc
