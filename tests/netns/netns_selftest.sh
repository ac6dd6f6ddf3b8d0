#!/bin/bash
# netns_selftest.sh: shows that netns_lib.sh does what it promises.
#   (a) TCP from namespace a to b's address works (server started with netns_bg, client with
#       netns_run);
#   (b) UDP echo of COUNT datagrams a -> b -> a: with loss 0 every one comes back and no loss
#       table exists; with loss 5 % the loss of each direction and of the round trip lies in a
#       6-sigma binomial band, and equals exactly what the nftables counters dropped;
#   (c) cleanup: child scripts that exit with an error, or are killed with TERM, leave no
#       namespace and no background process behind and keep their exit status; a namespace
#       that existed before (a stale name) makes netns_setup fail and is left alone; after
#       netns_teardown this script's own namespaces are gone.
# Exit 0 pass, 1 fail, 77 skip (not root, no CAP_NET_ADMIN, no nft, no /usr/bin/python3).
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lib.sh
source "$here/netns_lib.sh"
netns_skip_unless_able
PY=/usr/bin/python3
[[ -x $PY ]] || _netns_skip "$PY not found"
traffic=("$PY" "$here/netns_traffic.py")

COUNT=${NETNS_SELFTEST_COUNT:-4000}
LOSS=5
SIGMAS=6
TCP_PORT=5001
UDP_PORT=5002

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/netns_selftest.XXXXXX") || exit 1
netns_user_cleanup() { rm -rf -- "$work"; }
trap 'rm -rf -- "$work"' EXIT  # until netns_setup takes the traps over

# Integer field KEY of a one-line JSON object.
jget() {
  [[ $1 =~ \"$2\":\ ([0-9]+) ]] || return 1
  echo "${BASH_REMATCH[1]}"
}

gone() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]]
}

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }

# Udp RcvbufErrors in namespace $1: datagrams the kernel dropped for a full receive buffer,
# the one loss besides the nftables rule that this test could see.
rcvbuf_errors() {
  netns_run "$1" 5 cat /proc/net/snmp |
    awk '$1 == "Udp:" { if (!n) { for (i = 2; i <= NF; i++) k[i] = $i; n = 1 }
                        else for (i = 2; i <= NF; i++) if (k[i] == "RcvbufErrors") print $i }'
}

# band_check WHAT LOST N P: LOST of N within P +- SIGMAS*sqrt(P(1-P)/N).
band_check() {
  local verdict
  verdict=$(awk -v lost="$2" -v n="$3" -v p="$4" -v s="$SIGMAS" 'BEGIN {
      sd = sqrt(p * (1 - p) / n); lo = p - s * sd; hi = p + s * sd; r = lost / n
      printf "%s %.2f%% (%d of %d), band %.2f..%.2f%% (p %.2f%%, %d sigma)",
             (r >= lo && r <= hi) ? "in" : "out", 100 * r, lost, n, 100 * lo, 100 * hi,
             100 * p, s }')
  if [[ $verdict == in* ]]; then
    ok "$1 loss ${verdict#in }"
  else
    fail "$1 loss ${verdict#out }"
  fi
}

# udp_round: one UDP echo run a -> b -> a. Sets CLIENT and SERVER (JSON lines).
udp_round() {
  CLIENT="" SERVER=""
  local srv rc
  srv=$(netns_bg "$NETNS_B" "${traffic[@]}" udp-echo "$UDP_PORT" 20) || return 1
  if ! netns_wait_log "$srv" '^READY' 5; then
    fail "udp-echo server did not start: $(cat "$(netns_bg_log "$srv")")"
    return 1
  fi
  CLIENT=$(netns_run "$NETNS_A" 20 "${traffic[@]}" udp-client "$NETNS_ADDR_B" "$UDP_PORT" "$COUNT")
  rc=$?
  kill -TERM "$srv"
  netns_wait_exit "$srv" 5
  SERVER=$(grep '^{' "$(netns_bg_log "$srv")")
  echo "  client $CLIENT"
  echo "  server $SERVER"
  if ((rc != 0)) || [[ -z $CLIENT || -z $SERVER ]]; then
    fail "udp round: client status $rc, server log: $(cat "$(netns_bg_log "$srv")")"
    return 1
  fi
  local d a
  d=$(jget "$CLIENT" duplicates) a=$(jget "$CLIENT" alien)
  [[ $d == 0 && $a == 0 ]] || fail "udp round: $d duplicate and $a unknown echoes"
  [[ $(jget "$CLIENT" sent) == "$COUNT" ]] || fail "udp round: client sent $(jget "$CLIENT" sent)"
  [[ $(jget "$SERVER" sent) == "$(jget "$SERVER" received)" ]] ||
    fail "udp round: server echoed $(jget "$SERVER" sent) of $(jget "$SERVER" received)"
  return 0
}

# --- (c) cleanup by the traps, in child scripts -------------------------------------------
# The child sources the library, sets up with loss, starts two background sleeps (one as a
# child of its shell, one through $(...)), writes "NS_A NS_B PID1 PID2" and then fails or waits.
# shellcheck disable=SC2016  # expanded by the child
child_script='
source "$1"
mode=$2
if [[ $mode == stale ]]; then
  ip netns add "iwx$$a" || exit 9
  echo "iwx$$a iwx$$b"
  netns_setup 5 && exit 8
  exit 4
fi
netns_setup 5 || exit 9
netns_bg "$NETNS_A" sleep 60 >/dev/null
p2=$(netns_bg "$NETNS_B" sleep 60)
echo "$NETNS_A $NETNS_B $NETNS_BG_PID $p2"
[[ $mode == exit ]] && exit 3
while :; do sleep 0.1; done
'

# check_child MODE EXPECTED_STATUS
check_child() {
  local mode=$1 want=$2 info="$work/child.$1" cpid rc i
  bash -c "$child_script" child "$here/netns_lib.sh" "$mode" >"$info" 2>"$info.err" &
  cpid=$!
  if [[ $mode == term ]]; then
    for ((i = 0; i < 100; i++)); do
      [[ -s $info ]] && break
      sleep 0.05
    done
    kill -TERM "$cpid"
  fi
  for ((i = 0; i < 200; i++)); do
    gone "$cpid" && break
    sleep 0.05
  done
  if ! gone "$cpid"; then
    kill -KILL "$cpid"
    fail "child ($mode) did not end within 10 s"
  fi
  wait "$cpid"
  rc=$?
  local a b p1 p2
  read -r a b p1 p2 <"$info"
  if [[ -z ${b:-} ]]; then
    fail "child ($mode) printed nothing, status $rc: $(cat "$info.err")"
    return
  fi
  [[ $rc == "$want" ]] || fail "child ($mode) exit status $rc, expected $want: $(cat "$info.err")"
  if [[ $mode == stale ]]; then
    # The pre-existing namespace must survive, the second one must never have been kept.
    if ns_exists "$a"; then
      ok "child (stale): netns_setup refused and left the existing $a alone"
      ip netns del "$a"
    else
      fail "child (stale): netns_setup deleted $a, which it did not create"
    fi
    ns_exists "$b" && fail "child (stale): $b left behind" && ip netns del "$b"
    return
  fi
  local leaked=0 ns p
  for ns in "$a" "$b"; do
    if ns_exists "$ns"; then
      fail "child ($mode): namespace $ns left behind"
      leaked=1
      ip netns pids "$ns" | xargs -r kill -KILL
      ip netns del "$ns"
    fi
  done
  for p in "$p1" "$p2"; do
    if ! gone "$p"; then
      fail "child ($mode): background PID $p still running"
      leaked=1
    fi
  done
  ((leaked)) || ok "child ($mode): status $rc, namespaces $a $b and PIDs $p1 $p2 gone"
}

echo "== (c) cleanup on exit, on TERM, and around a stale namespace"
check_child exit 3
check_child term 143
check_child stale 4

# --- (a) and (b) with this script's own namespaces ---------------------------------------
echo "== setup with loss 0"
if ! netns_setup 0; then
  fail "netns_setup 0"
  exit 1
fi
echo "  $NETNS_A $NETNS_ADDR_A <-> $NETNS_B $NETNS_ADDR_B"
for ns in "$NETNS_A" "$NETNS_B"; do
  netns_loss_counters "$ns" >/dev/null 2>&1 && fail "loss 0 but $ns has a loss table"
done

echo "== (a) TCP $NETNS_A -> $NETNS_ADDR_B:$TCP_PORT"
srv=$(netns_bg "$NETNS_B" "${traffic[@]}" tcp-server "$TCP_PORT")
if ! netns_wait_log "$srv" '^READY' 5; then
  fail "tcp-server did not start: $(cat "$(netns_bg_log "$srv")")"
elif netns_run "$NETNS_A" 10 "${traffic[@]}" tcp-client "$NETNS_ADDR_B" "$TCP_PORT"; then
  netns_wait_exit "$srv" 5
  if grep -q "^served $NETNS_ADDR_A\$" "$(netns_bg_log "$srv")"; then
    ok "TCP echo between the namespaces, server saw $NETNS_ADDR_A"
  else
    fail "tcp-server log: $(cat "$(netns_bg_log "$srv")")"
  fi
else
  fail "tcp-client $NETNS_ADDR_B:$TCP_PORT"
fi

echo "== (b) UDP echo of $COUNT datagrams, loss 0"
if udp_round; then
  echoed=$(jget "$CLIENT" echoed)
  if [[ $echoed == "$COUNT" && $(jget "$SERVER" received) == "$COUNT" ]]; then
    ok "loss 0: all $COUNT datagrams echoed"
  else
    fail "loss 0: server received $(jget "$SERVER" received), client got $echoed echoes of $COUNT"
  fi
fi

echo "== (b) UDP echo of $COUNT datagrams, loss $LOSS % in both namespaces"
netns_set_loss "$LOSS" || fail "netns_set_loss $LOSS"
if udp_round; then
  sent=$(jget "$CLIENT" sent) echoed=$(jget "$CLIENT" echoed)
  srv_recv=$(jget "$SERVER" received) srv_sent=$(jget "$SERVER" sent)
  p=$(awk -v l="$LOSS" 'BEGIN { print l / 100 }')
  band_check "a->b" $((sent - srv_recv)) "$sent" "$p"
  band_check "b->a" $((srv_sent - echoed)) "$srv_sent" "$p"
  p_round=$(awk -v p="$p" 'BEGIN { print 1 - (1 - p) ^ 2 }')
  band_check "round trip" $((sent - echoed)) "$sent" "$p_round"
  # Every datagram lost was dropped by the rule: the counters match the endpoints exactly.
  for ns in "$NETNS_A" "$NETNS_B"; do
    e=$(rcvbuf_errors "$ns")
    [[ $e == 0 ]] || fail "$ns: $e UDP receive-buffer drops (the exact checks below assume 0)"
  done
  # The rules sit on the input hook: b's rule sees what a sent, a's rule what b echoed.
  read -r seen_a drop_a < <(netns_loss_counters "$NETNS_A")
  read -r seen_b drop_b < <(netns_loss_counters "$NETNS_B")
  if [[ ${seen_b:-} == "$sent" && ${drop_b:-} == $((sent - srv_recv)) &&
    ${seen_a:-} == "$srv_sent" && ${drop_a:-} == $((srv_sent - echoed)) ]]; then
    ok "nftables counters: $NETNS_B saw $seen_b dropped $drop_b," \
      "$NETNS_A saw $seen_a dropped $drop_a, as the endpoints counted"
  else
    fail "nftables counters ${seen_a:-?}/${drop_a:-?} ${seen_b:-?}/${drop_b:-?} (seen/dropped" \
      "a, b) do not match the endpoints: sent $sent, received $srv_recv, echoed $srv_sent," \
      "back $echoed"
  fi
fi

echo "== (c) teardown"
a=$NETNS_A b=$NETNS_B
netns_teardown
if ns_exists "$a" || ns_exists "$b"; then
  fail "namespaces left after netns_teardown: $(ip netns list | tr '\n' ' ')"
  for ns in "$a" "$b"; do
    ns_exists "$ns" && ip netns del "$ns"
  done
else
  ok "after netns_teardown neither $a nor $b exists"
fi
rm -rf -- "$work"

if ((failures)); then
  echo "netns_selftest: $failures failure(s)"
  exit 1
fi
echo "netns_selftest: all checks passed"
exit 0
