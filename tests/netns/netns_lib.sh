# shellcheck shell=bash
# netns_lib.sh: two network namespaces joined by a veth pair, with optional random UDP loss,
# for tests that need two "hosts" on one machine. Source it from bash (4.4 or later).
#
# Contract
#   netns_skip_unless_able       exit 77 (ctest SKIP_RETURN_CODE) with a SKIP: line unless this
#                                process may create namespaces, veth pairs and nftables rules.
#   netns_setup [LOSS]           create namespaces iwx<PID>a / iwx<PID>b (PID = $$ of the
#                                sourcing shell), veth "iwx0" in each, addresses
#                                10.77.X.1/24 (a) and 10.77.X.2/24 (b) with X = PID % 254 + 1,
#                                lo and iwx0 up; LOSS (integer percent, default 0) > 0 installs
#                                the loss table (netns_set_loss). Exports NETNS_A, NETNS_B,
#                                NETNS_ADDR_A, NETNS_ADDR_B, NETNS_SUBNET. Must run in the main
#                                shell (not inside $(...) or a pipeline). Installs the EXIT, INT,
#                                TERM and HUP traps. Returns non-zero, having removed whatever it
#                                made, on failure.
#   netns_set_loss PCT           replace the loss in both namespaces: table "inet iwx_loss", a
#                                chain on hook $NETNS_LOSS_HOOK (default input) that counts UDP
#                                packets (counter udp_seen) and drops PCT % of them at random
#                                (numgen random mod 100 < PCT, counter udp_drop). PCT 0 removes
#                                the table. Each direction crosses one such rule either way.
#   netns_loss_counters NS       print "<udp_seen packets> <udp_drop packets>" of NS's table;
#                                fails if NS has no loss table.
#   netns_bg NS CMD...           start executable CMD inside NS in the background, stdin
#                                /dev/null, stdout+stderr to the file that netns_bg_log PID
#                                names (kept after teardown when NETNS_KEEP_LOGS is set).
#                                Prints the PID (CMD's own) and sets NETNS_BG_PID when called
#                                in the main shell.
#   netns_bg_log PID             print the path of a background command's output file.
#   netns_wait_log PID PATTERN SECONDS
#                                wait until PID's output has a line matching the extended regex
#                                PATTERN; 1 if PID ended first, 124 on timeout.
#   netns_wait_exit PID SECONDS  wait until PID has ended; its exit status when it is a child of
#                                this shell, else 0; 124 on timeout (PID is left running).
#   netns_run NS SECONDS CMD...  run CMD inside NS in the foreground under timeout(1) (TERM after
#                                SECONDS, KILL 5 s later); returns CMD's status, 124 on timeout.
#   netns_teardown               the cleanup below, now; netns_setup may then be called again.
#
# Cleanup (traps, netns_teardown): calls the caller's function netns_user_cleanup if defined;
# sends TERM to the netns_bg commands still running (recognised by PID and start time, so a
# reused PID is never hit) and to every process whose network namespace is one this run created
# (what those commands started there), KILL to those left after NETNS_KILL_GRACE seconds
# (default 3); deletes the namespaces this run created (the veth goes with them); removes its
# own temporary directory. It never signals any other process and never deletes
# a namespace it did not create: a stale iwx<PID>a from an earlier run with the same PID makes
# netns_setup fail instead. A trapped INT/TERM/HUP re-raises the signal after cleanup; the EXIT
# trap keeps the script's exit status. The library owns these traps: put your own cleanup in
# netns_user_cleanup instead of a trap of your own.
#
# Why the input hook by default: a packet that a rule drops on the output hook makes the
# sender's sendmsg() fail with EPERM (the kernel reports local netfilter drops), which is not
# loss but a send error; a drop on the receiver's input hook is silent, like loss on a wire.
# NETNS_LOSS_HOOK=output gives the output-hook rule when a test wants exactly that.
#
# Why 10.77.X with X from the PID: each run's pair lives only in its own two namespaces, so two
# runs cannot clash even with the same X; a per-run subnet keeps concurrent runs apart in logs and
# captures, and X is never 0 (10.77.0.0/24 is the manual recipe in TESTING.md).

_NETNS_OWNER=""    # BASHPID of the shell that ran netns_setup; empty when nothing is set up
_NETNS_STATE=""    # this run's temporary directory (background logs, pid list)
_NETNS_CREATED=()  # namespaces this run created, in creation order
_NETNS_CHILDREN=() # netns_bg PIDs that are children of the main shell (netns_wait_exit reaps)
_NETNS_IN_CLEANUP=0
_NETNS_PENDING_SIG=""

_netns_err() { echo "netns: $*" >&2; }

# True when $1 is a namespace this run created.
_netns_ours() {
  local ns
  for ns in "${_NETNS_CREATED[@]}"; do
    [[ $ns == "$1" ]] && return 0
  done
  return 1
}

_netns_require_ns() {
  if [[ -z $_NETNS_OWNER ]]; then
    _netns_err "netns_setup has not been called"
    return 1
  fi
  if ! _netns_ours "$1"; then
    _netns_err "'$1' is not a namespace of this run (${_NETNS_CREATED[*]})"
    return 1
  fi
}

# Start time of process $1 in clock ticks since boot (field 22 of /proc/PID/stat); fails when
# there is no such process.
_netns_starttime() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  local -a f
  read -r -a f <<<"$stat"
  echo "${f[19]}"
}

# Process is gone (no /proc entry) or a zombie.
_netns_gone() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]]
}

_netns_skip() {
  echo "SKIP: $*"
  exit 77
}

netns_skip_unless_able() {
  [[ $EUID -eq 0 ]] || _netns_skip "needs root (network namespaces, veth, nftables)"
  local c
  for c in ip nft timeout; do
    command -v "$c" >/dev/null 2>&1 || _netns_skip "'$c' not found"
  done
  local probe="iwx$$p" out
  [[ -e /run/netns/$probe ]] && _netns_skip "probe namespace $probe exists already"
  if ! out=$(ip netns add "$probe" 2>&1); then
    _netns_skip "cannot create a network namespace (no CAP_NET_ADMIN?): $out"
  fi
  # Everything below must delete the probe, also when interrupted.
  trap 'ip netns del "'"$probe"'" 2>/dev/null' EXIT INT TERM HUP
  local why=""
  if ! out=$(ip -n "$probe" link add iwx0 type veth peer name iwx1 2>&1); then
    why="cannot create a veth pair: $out"
  elif ! out=$(ip netns exec "$probe" nft -f - 2>&1 <<'EOF'
table inet iwx_probe {
  chain out {
    type filter hook output priority 0; policy accept;
    meta l4proto udp numgen random mod 100 < 5 drop
  }
}
EOF
  ); then
    why="cannot install an nftables numgen drop rule: $out"
  fi
  ip netns del "$probe" 2>/dev/null
  trap - EXIT INT TERM HUP
  [[ -z $_NETNS_OWNER ]] || _netns_traps
  [[ -z $why ]] || _netns_skip "$why"
  return 0
}

_netns_traps() {
  trap _netns_on_exit EXIT
  trap '_netns_on_signal INT' INT
  trap '_netns_on_signal TERM' TERM
  trap '_netns_on_signal HUP' HUP
}

_netns_on_exit() {
  local rc=$?
  netns_teardown
  return "$rc"
}

# A signal during the cleanup must not cut it short: it is noted and re-raised at its end.
_netns_on_signal() {
  if ((_NETNS_IN_CLEANUP)); then
    _NETNS_PENDING_SIG=$1
    return
  fi
  netns_teardown
  _netns_reraise "$1"
}

_netns_reraise() {
  trap - "$1" EXIT
  kill -s "$1" "$BASHPID"
}

netns_setup() {
  local loss=${1:-0}
  if [[ ! $loss =~ ^[0-9]+$ ]] || ((loss > 100)); then
    _netns_err "loss must be an integer percentage 0..100, not '$loss'"
    return 1
  fi
  if [[ -n $_NETNS_OWNER ]]; then
    _netns_err "already set up (${_NETNS_CREATED[*]}); call netns_teardown first"
    return 1
  fi
  if [[ $BASHPID != "$$" ]]; then
    _netns_err "netns_setup must run in the main shell, not in a subshell"
    return 1
  fi
  _NETNS_OWNER=$BASHPID
  _netns_traps

  if ! _NETNS_STATE=$(mktemp -d "${TMPDIR:-/tmp}/iwx-netns.$$.XXXXXX"); then
    _netns_err "mktemp failed"
    netns_teardown
    return 1
  fi
  : >"$_NETNS_STATE/pids"
  local x=$(($$ % 254 + 1)) ns
  export NETNS_A="iwx$$a" NETNS_B="iwx$$b"
  export NETNS_SUBNET="10.77.$x.0/24" NETNS_ADDR_A="10.77.$x.1" NETNS_ADDR_B="10.77.$x.2"
  for ns in "$NETNS_A" "$NETNS_B"; do
    if ! ip netns add "$ns"; then
      _netns_err "cannot create namespace $ns (left over from an earlier run? 'ip netns del $ns')"
      netns_teardown
      return 1
    fi
    _NETNS_CREATED+=("$ns")
  done
  # Created directly inside the namespaces: no name is ever taken in the caller's namespace.
  if ! ip link add iwx0 netns "$NETNS_A" type veth peer name iwx0 netns "$NETNS_B" ||
    ! ip -n "$NETNS_A" addr add "$NETNS_ADDR_A/24" dev iwx0 ||
    ! ip -n "$NETNS_B" addr add "$NETNS_ADDR_B/24" dev iwx0; then
    _netns_err "veth setup failed"
    netns_teardown
    return 1
  fi
  for ns in "$NETNS_A" "$NETNS_B"; do
    if ! ip -n "$ns" link set lo up || ! ip -n "$ns" link set iwx0 up; then
      _netns_err "cannot bring the links of $ns up"
      netns_teardown
      return 1
    fi
  done
  # The veth reports carrier once both ends are up; wait for it (bounded) so the first packet
  # of a test is not lost to link setup.
  local i state
  for ((i = 0; i < 50; i++)); do
    state=$(ip -n "$NETNS_A" -o link show iwx0)
    [[ $state == *LOWER_UP* ]] && break
    sleep 0.05
  done
  if [[ $state != *LOWER_UP* ]]; then
    _netns_err "veth did not come up: $state"
    netns_teardown
    return 1
  fi
  if ! netns_set_loss "$loss"; then
    netns_teardown
    return 1
  fi
  return 0
}

netns_set_loss() {
  local pct=${1:-}
  if [[ ! $pct =~ ^[0-9]+$ ]] || ((pct > 100)); then
    _netns_err "loss must be an integer percentage 0..100, not '$pct'"
    return 1
  fi
  [[ -n $_NETNS_OWNER ]] || { _netns_err "netns_setup has not been called"; return 1; }
  local hook=${NETNS_LOSS_HOOK:-input}
  if [[ $hook != input && $hook != output ]]; then
    _netns_err "NETNS_LOSS_HOOK must be input or output, not '$hook'"
    return 1
  fi
  local ns
  for ns in "${_NETNS_CREATED[@]}"; do
    if ip netns exec "$ns" nft list table inet iwx_loss >/dev/null 2>&1; then
      ip netns exec "$ns" nft delete table inet iwx_loss || return 1
    fi
    ((pct > 0)) || continue
    if ! ip netns exec "$ns" nft -f - <<EOF; then
table inet iwx_loss {
  counter udp_seen {}
  counter udp_drop {}
  chain loss {
    type filter hook $hook priority 0; policy accept;
    meta l4proto udp counter name "udp_seen"
    meta l4proto udp numgen random mod 100 < $pct counter name "udp_drop" drop
  }
}
EOF
      _netns_err "cannot install the loss table in $ns"
      return 1
    fi
  done
}

netns_loss_counters() {
  _netns_require_ns "${1:-}" || return 1
  local out drop
  out=$(ip netns exec "$1" nft list counter inet iwx_loss udp_seen 2>/dev/null) || return 1
  drop=$(ip netns exec "$1" nft list counter inet iwx_loss udp_drop 2>/dev/null) || return 1
  [[ $out =~ packets\ ([0-9]+) ]] || return 1
  out=${BASH_REMATCH[1]}
  [[ $drop =~ packets\ ([0-9]+) ]] || return 1
  echo "$out ${BASH_REMATCH[1]}"
}

netns_bg() {
  local ns=${1:-}
  shift
  _netns_require_ns "$ns" || return 1
  if (($# == 0)); then
    _netns_err "netns_bg: no command"
    return 1
  fi
  local dir=$_NETNS_STATE
  # Neither ip netns exec nor sh -c 'exec' forks: the PID printed is CMD's. The inner
  # redirection names the output file after that PID. No setsid: the command stays in the
  # script's process group, so whoever kills that group (ctest on timeout) reaches it too.
  # shellcheck disable=SC2016
  ip netns exec "$ns" /bin/sh -c 'd=$1; shift; exec >"$d/bg.$$.log" 2>&1; exec "$@"' \
    netns_bg "$dir" "$@" </dev/null >>"$dir/bg-start.log" 2>&1 &
  local pid=$! start
  # Still ours at this point (a child of this shell, at least a zombie), so the start time read
  # now identifies it for the cleanup.
  start=$(_netns_starttime "$pid") || start=0
  echo "$pid $start $ns $*" >>"$dir/pids"
  if [[ $BASHPID == "$_NETNS_OWNER" ]]; then
    # shellcheck disable=SC2034  # for the caller
    NETNS_BG_PID=$pid
    _NETNS_CHILDREN+=("$pid")
  fi
  echo "$pid"
}

netns_bg_log() {
  echo "$_NETNS_STATE/bg.$1.log"
}

netns_wait_log() {
  local pid=$1 pattern=$2 secs=$3 log
  log=$(netns_bg_log "$pid")
  local end=$((SECONDS + secs))
  while ((SECONDS <= end)); do
    [[ -f $log ]] && grep -Eq -- "$pattern" "$log" && return 0
    if _netns_gone "$pid"; then
      [[ -f $log ]] && grep -Eq -- "$pattern" "$log" && return 0
      return 1
    fi
    sleep 0.05
  done
  return 124
}

netns_wait_exit() {
  local pid=$1 secs=$2
  local end=$((SECONDS + secs))
  while ! _netns_gone "$pid"; do
    ((SECONDS <= end)) || return 124
    sleep 0.05
  done
  # A child of this shell: collect its status (and keep bash from reporting it later).
  local c
  if [[ $BASHPID == "$_NETNS_OWNER" ]]; then
    for c in "${_NETNS_CHILDREN[@]}"; do
      if [[ $c == "$pid" ]]; then
        wait "$pid" 2>/dev/null
        return
      fi
    done
  fi
  return 0
}

netns_run() {
  local ns=${1:-} secs=${2:-}
  shift 2
  _netns_require_ns "$ns" || return 1
  if [[ ! $secs =~ ^[0-9]+$ ]] || (($# == 0)); then
    _netns_err "usage: netns_run NS SECONDS CMD..."
    return 1
  fi
  timeout -k 5 "$secs" ip netns exec "$ns" "$@"
}

# PIDs to stop: the netns_bg commands still running with their recorded start time, and the
# processes inside the namespaces this run created (ip netns pids compares the /proc/PID/ns/net
# of every process with the namespace's file).
_netns_members() {
  local ns pid start rest
  if [[ -f $_NETNS_STATE/pids ]]; then
    while read -r pid start rest; do
      _netns_gone "$pid" && continue
      [[ $(_netns_starttime "$pid") == "$start" ]] && echo "$pid"
    done <"$_NETNS_STATE/pids"
  fi
  for ns in "${_NETNS_CREATED[@]}"; do
    ip netns pids "$ns" 2>/dev/null
  done
}

netns_teardown() {
  [[ -n $_NETNS_OWNER && $BASHPID == "$_NETNS_OWNER" ]] || return 0
  ((_NETNS_IN_CLEANUP == 0)) || return 0
  _NETNS_IN_CLEANUP=1
  local -
  set +e
  if declare -F netns_user_cleanup >/dev/null; then
    netns_user_cleanup
  fi
  local pids pid end sig
  for sig in TERM KILL; do
    pids=$(_netns_members)
    [[ -n $pids ]] || break
    for pid in $pids; do
      kill -s "$sig" "$pid" 2>/dev/null
    done
    end=$((SECONDS + ${NETNS_KILL_GRACE:-3}))
    [[ $sig == KILL ]] && end=$((SECONDS + 5))
    while [[ -n $(_netns_members) ]] && ((SECONDS <= end)); do
      sleep 0.05
    done
  done
  pids=$(_netns_members)
  [[ -z $pids ]] ||
    _netns_err "processes still in ${_NETNS_CREATED[*]} after KILL: ${pids//$'\n'/ }"
  # Reap the background children of this shell quietly.
  for pid in "${_NETNS_CHILDREN[@]}"; do
    _netns_gone "$pid" && wait "$pid" 2>/dev/null
  done
  local ns
  for ns in "${_NETNS_CREATED[@]}"; do
    ip netns del "$ns" || _netns_err "cannot delete namespace $ns"
  done
  if [[ -n $_NETNS_STATE && -d $_NETNS_STATE ]]; then
    if [[ -n ${NETNS_KEEP_LOGS:-} ]]; then
      _netns_err "logs kept in $_NETNS_STATE"
    else
      rm -rf -- "$_NETNS_STATE"
    fi
  fi
  _NETNS_CREATED=()
  _NETNS_CHILDREN=()
  _NETNS_STATE=""
  _NETNS_OWNER=""
  _NETNS_IN_CLEANUP=0
  unset NETNS_A NETNS_B NETNS_ADDR_A NETNS_ADDR_B NETNS_SUBNET NETNS_BG_PID
  if [[ -n $_NETNS_PENDING_SIG ]]; then
    local sig=$_NETNS_PENDING_SIG
    _NETNS_PENDING_SIG=""
    _netns_reraise "$sig"
  fi
  return 0
}
