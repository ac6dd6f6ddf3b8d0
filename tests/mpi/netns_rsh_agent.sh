#!/bin/sh
# netns_rsh_agent.sh: runs commands as if on one of the two "hosts" that tests/netns/netns_lib.sh
# makes (TESTING.md "A two-host recipe"): inside the host's network namespace and in a UTS
# namespace of its own whose hostname is the namespace's name (Open MPI tells nodes apart by
# hostname).
#   netns_rsh_agent.sh --ns NS CMD [ARG...]   exec CMD with its arguments inside NS (used to start
#                                             mpirun on the first host).
#   netns_rsh_agent.sh HOST WORD...           rsh-agent form (--mca plm_rsh_agent): HOST is
#                                             $NETNS_ADDR_A / $NETNS_ADDR_B or $NETNS_A / $NETNS_B
#                                             (exported by netns_setup); the WORDs are joined into
#                                             one /bin/sh command line, as rsh would.
# Any other HOST is refused (exit 255, like ssh): the test may only touch its own namespaces.
set -eu
if [ "${1:-}" = --ns ]; then
  [ $# -ge 3 ] || { echo "usage: $0 --ns NS CMD [ARG...]" >&2; exit 255; }
  ns=$2
  shift 2
  # shellcheck disable=SC2016  # expanded by the inner shell
  exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
fi
[ $# -ge 2 ] || { echo "usage: $0 HOST COMMAND..." >&2; exit 255; }
host=$1
shift
case "$host" in
  "${NETNS_ADDR_A:-/}" | "${NETNS_A:-/}") ns=$NETNS_A ;;
  "${NETNS_ADDR_B:-/}" | "${NETNS_B:-/}") ns=$NETNS_B ;;
  *)
    echo "netns_rsh_agent: unknown host '$host' (not ${NETNS_ADDR_A:-unset} or ${NETNS_ADDR_B:-unset})" >&2
    exit 255
    ;;
esac
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
