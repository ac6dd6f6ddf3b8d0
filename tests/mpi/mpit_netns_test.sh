#!/bin/bash
# Usage: mpit_netns_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                           <mpit> [sub-test...]
# Two "hosts" on one machine (tests/netns/netns_lib.sh: namespaces iwx<PID>a/b, a veth, private
# addresses 10.77.X.1/2): mpirun starts inside host a with a hostfile of both addresses, one
# slot each, and reaches host b through the rsh agent netns_rsh_agent.sh (`ip netns exec` +
# its own hostname). mpit (default sub-tests p2p anysrc probe coll) runs with 2 ranks, one per
# host, over --mca pml ob1 --mca btl self,iwarpx; the out-of-band channel is bound to the veth
# subnet. Passes when mpirun exits 0 within 240 s, rank 0 printed the OK lines, the BTL was
# ready on both hosts (its verbose lines carry the hostname) and carried the traffic
# (btl_iwarpx_lib.sh); the BTL binds to the veth subnet (btl_iwarpx_if_include). Control: the
# same job without btl_iwarpx_if_include (wildcard address, which the other host cannot reach)
# must fail within 60 s with the BTL's reason logged, not hang. The namespaces and everything
# in them are removed by netns_lib's trap on every exit. Exit 77 (ctest SKIP) with a SKIP: line when namespaces cannot be created
# (not root, no CAP_NET_ADMIN); never a pass then.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../netns/netns_lib.sh
source "$here/../netns/netns_lib.sh"
# shellcheck source=btl_iwarpx_lib.sh
source "$here/btl_iwarpx_lib.sh"
if (($# < 5)); then
  echo "usage: $0 mpirun ompi_dir mca_dir fi_dir mpit [sub-test...]"
  exit 2
fi
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
mpit=$5
shift 5
tests=("$@")
((${#tests[@]})) || tests=(p2p anysrc probe coll)
netns_skip_unless_able
command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare (util-linux) not found"; exit 77; }
netns_setup 0 || exit 1

work=$(mktemp -d "${TMPDIR:-/tmp}/mpit_netns.XXXXXX")
# shellcheck disable=SC2317  # called by netns_lib.sh cleanup
netns_user_cleanup() { rm -rf -- "$work"; }
printf '%s slots=1\n%s slots=1\n' "$NETNS_ADDR_A" "$NETNS_ADDR_B" >"$work/hosts"
agent=$here/netns_rsh_agent.sh
log=$work/mpirun.log
echo "hosts: $NETNS_A ($NETNS_ADDR_A), $NETNS_B ($NETNS_ADDR_B)"
IWX_MPIRUN_PREFIX="$agent --ns $NETNS_A"
IWX_OOB_IF=$NETNS_SUBNET
export IWX_MPIRUN_PREFIX IWX_OOB_IF
rc=0
start=$SECONDS
iwx_mpirun "$log" 240 2 --hostfile "$work/hosts" --mca plm_rsh_agent "$agent" \
  --mca btl_iwarpx_if_include "$NETNS_SUBNET" "$mpit" "${tests[@]}" || rc=$?
cat "$log"
echo "mpirun exited $rc after $((SECONDS - start)) s"
if ((rc != 0)); then
  echo "FAIL: mpirun across $NETNS_A and $NETNS_B exited $rc"
  exit 1
fi
fail=0
for t in "${tests[@]}"; do
  grep -q "mpit: $t OK 2 ranks" "$log" || { echo "FAIL: no 'mpit: $t OK' line"; fail=1; }
done
grep -q "mpit: OK 2 ranks" "$log" || { echo "FAIL: no final OK line from rank 0"; fail=1; }
for ns in "$NETNS_A" "$NETNS_B"; do
  grep -q "\[$ns:[0-9]*\] btl:iwarpx: module ready" "$log" ||
    { echo "FAIL: no rank with the iwarpx module ready on host $ns"; fail=1; }
done
rdma=none
[[ " ${tests[*]} " == *" p2p "* ]] && rdma=rdma
iwx_check_btl "$log" 2 "$rdma" || fail=1
((fail == 0)) || exit 1

# Control: without btl_iwarpx_if_include each rank binds the wildcard address, which the other
# host cannot reach. The BTL must call such a peer unreachable (so MPI fails at once), not hang.
rc=0
start=$SECONDS
iwx_mpirun "$log" 90 2 --hostfile "$work/hosts" --mca plm_rsh_agent "$agent" "$mpit" anysrc ||
  rc=$?
elapsed=$((SECONDS - start))
cat "$log"
echo "control: mpirun without btl_iwarpx_if_include exited $rc after $elapsed s"
if ((rc == 0 || elapsed >= 60)); then
  echo "FAIL: without btl_iwarpx_if_include the run must fail within 60 s (rc $rc, $elapsed s)"
  exit 1
fi
if ! grep -q "btl:iwarpx: .* is on another node but published the wildcard address" "$log"; then
  echo "FAIL: the BTL did not say why the peer on the other host is unreachable"
  exit 1
fi
echo "PASS: mpit (${tests[*]}) across two namespaces over btl self,iwarpx; without"
echo "      btl_iwarpx_if_include the same job fails in $elapsed s with the reason logged"
exit 0
