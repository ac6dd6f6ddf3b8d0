#!/bin/bash
# rdm_loss_test.sh: the RDM endpoint through a lossy path between two network namespaces.
#   rdm_loss_test.sh RDM_LOSS_BINARY PROVIDER_DIR [COUNT]
# The rdm_loss server runs in namespace b, the client in namespace a, both with iwarpx loaded
# from PROVIDER_DIR (FI_PROVIDER_PATH). nftables drops LOSS % (default 5) of the UDP packets
# each way; the provider's own fault layer duplicates and reorders what each side sends
# (FI_IWARPX_FAULT="$RDM_LOSS_FAULT,seed=N", a different seed per side). The client sends COUNT
# (default 100000) tagged messages of mixed sizes and then does RMA writes and reads; both
# sides check every byte, the order and exactly-once delivery (see rdm_loss.cc). Passes when
# both exit 0 within the time bound and nftables dropped at least one packet.
# Environment: RDM_LOSS_PERCENT (5), RDM_LOSS_FAULT ("dup=20,reorder=30,gap=4"),
# RDM_LOSS_SECONDS (client time bound, 240), RDM_LOSS_SEED (7; the server gets seed+1).
# Exit 0 pass, 1 fail, 77 skip (not root / no namespaces / no nftables).
set -u

if (($# < 2)); then
  echo "usage: $0 RDM_LOSS_BINARY PROVIDER_DIR [COUNT]" >&2
  exit 2
fi
bin=$1
provider_dir=$2
count=${3:-100000}
loss=${RDM_LOSS_PERCENT:-5}
fault=${RDM_LOSS_FAULT:-dup=20,reorder=30,gap=4}
seconds=${RDM_LOSS_SECONDS:-240}
seed=${RDM_LOSS_SEED:-7}
[[ -x $bin ]] || { echo "FAIL: $bin is not an executable"; exit 1; }
[[ -d $provider_dir ]] || { echo "FAIL: $provider_dir is not a directory"; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lib.sh
source "$here/netns_lib.sh"
netns_skip_unless_able

work=$(mktemp -d "${TMPDIR:-/tmp}/rdm_loss.XXXXXX") || exit 1
# shellcheck disable=SC2317  # called by the library's cleanup
netns_user_cleanup() { rm -rf -- "$work"; }
trap 'rm -rf -- "$work"' EXIT # until netns_setup takes the traps over
netns_setup "$loss" || exit 1

export FI_PROVIDER_PATH=$provider_dir
export FI_LOG_LEVEL=${FI_LOG_LEVEL:-warn} FI_LOG_PROV=${FI_LOG_PROV:-iwarpx}
client_fault="$fault,seed=$seed"
server_fault="$fault,seed=$((seed + 1))"
echo "rdm_loss_test: $count messages, $loss % UDP loss each way (nftables), provider faults:" \
  "client $client_fault, server $server_fault"

port_file=$work/server.addr
t0=$SECONDS
netns_bg "$NETNS_B" /usr/bin/env FI_IWARPX_FAULT="$server_fault" \
  "$bin" server "$NETNS_ADDR_B" "$port_file" >/dev/null
srv=$NETNS_BG_PID
srv_log=$(netns_bg_log "$srv")
if ! netns_wait_log "$srv" 'ready at' 20 || [[ ! -s $port_file ]]; then
  echo "FAIL: the server did not get ready"
  cat "$srv_log"
  exit 1
fi
server_addr=$(<"$port_file")

failures=0
netns_run "$NETNS_A" "$seconds" /usr/bin/env FI_IWARPX_FAULT="$client_fault" \
  "$bin" client "$NETNS_ADDR_A" "$server_addr" "$count"
client_rc=$?
if ((client_rc == 124)); then
  echo "FAIL: the client did not finish within $seconds s"
  failures=$((failures + 1))
elif ((client_rc != 0)); then
  echo "FAIL: the client exited with $client_rc"
  failures=$((failures + 1))
fi
# The server lingers 2 s after FIN; it has its own 30 s stall bound after that.
netns_wait_exit "$srv" 45
server_rc=$?
cat "$srv_log"
if ((server_rc == 124)); then
  echo "FAIL: the server was still running 45 s after the client ended"
  failures=$((failures + 1))
elif ((server_rc != 0)); then
  echo "FAIL: the server exited with $server_rc"
  failures=$((failures + 1))
fi

dropped=0
for ns in "$NETNS_A" "$NETNS_B"; do
  if ! counters=$(netns_loss_counters "$ns"); then
    echo "FAIL: no loss counters in $ns"
    failures=$((failures + 1))
    continue
  fi
  read -r seen drop <<<"$counters"
  echo "nftables in $ns (input): $seen UDP packets seen, $drop dropped"
  dropped=$((dropped + drop))
done
if ((dropped == 0)); then
  echo "FAIL: nftables dropped nothing: the path was not lossy"
  failures=$((failures + 1))
fi
echo "rdm_loss_test: $((SECONDS - t0)) s, $failures failure(s)"
((failures == 0)) || exit 1
echo "PASS"
exit 0
