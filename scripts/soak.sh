#!/usr/bin/env bash
# soak.sh - a bounded soak test of iwarpx: MSG, RDM and MPI traffic at once, with fault
# injection, every byte verified, RSS watched for leaks. Not part of scripts/test.sh
# (ctest runs a 30 s version: label soak-smoke).
#
#   scripts/soak.sh [--minutes N | --seconds N] [--build DIR] [--report FILE]
#                   [--fault SPEC] [--netns-loss PCT] [--no-mpi] [--rss-bound KIB]
#
# What runs (all concurrently, for the whole duration):
#   msg  soak_msg server + client (fabtests_ext/soak): send/recv of mixed sizes 1 B - 1 MiB
#        and RMA write + read-back over connected iWARP (TCP), every byte checked.
#   rdm  soak_rdm server + client: tagged messages of the same mix, RMA write + read and
#        atomics over reliable datagrams, both sides under FI_IWARPX_FAULT=SPEC (different
#        seeds): drops, duplicates, reordering and corruption on every datagram path.
#   mpi  a loop of mpirun -np 2 --mca btl self,iwarpx --mca osc iwarpx, in turn: tests/mpi
#        mpit anysrc many2one probe dtype; osc_iwarpx_acc_test (the accumulate family);
#        mpit p2p (0 B - 64 MiB; runs of 2 minutes or more); every byte checked,
#        FI_IWARPX_FAULT=SPEC in the ranks.
#   With --netns-loss PCT (root) the msg and rdm pairs run between two network namespaces
#   this script creates (and deletes in a trap), with an nftables rule dropping PCT % of
#   the packets each namespace receives from the other at random.
#
# Verdict (exit 0 only if all hold; the report lists every violation):
#   - every generator and every mpirun exits 0 (a data check failure, an error completion
#     or a timeout exits non-zero) and each pair's client and server agree on the message
#     and byte counts (zero loss, zero duplication: the generators check sequence numbers);
#   - the provider's counters (FI_IWARPX_STATS=1 lines) show no errors except injected ones:
#     terminates, failed peers, failed connections, socket send errors and truncations are
#     0; CRC/malformed drops are at most twice the corruptions injected (a corrupted
#     datagram can also be duplicated) and 0 without corruption; the injected faults were
#     really applied (fault_* > 0 for each kind SPEC asks for);
#   - RSS of each long-running process, sampled every ~10 s (duration / 6 when shorter), grows
#     by at most --rss-bound KiB (default 8192) from the first sample after warm-up (the
#     first quarter of the run) to the largest later one. The generators allocate their
#     buffers before the first round and the provider's pools reach their size within the
#     first rounds; a leak of even 2 B per message moved (thousands of messages a second)
#     exceeds 8 MiB within the 10-minute default, while allocator noise stays well below it.
# Exit: 0 pass, 1 a violation, 2 usage or missing build.
#
# IWARPX_SOAK_BREAK=msg|rdm (testing): that client damages message 100 so its verification
# must fail: proves the soak can fail (tests/soak/soak_smoke_check.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

seconds=600
build=build
report=
fault="drop=20,dup=10,reorder=20,corrupt=5"
netns_loss=0
mpi=1
rss_bound=8192
sizes=1,8,64,512,4k,16383,16384,16385,64k,256k,1m
window=16

usage() {
  sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}
while (($#)); do
  case $1 in
    --minutes) seconds=$(awk -v m="$2" 'BEGIN { printf "%d", m * 60 }') || usage; shift ;;
    --seconds) seconds=$2; shift ;;
    --build) build=$2; shift ;;
    --report) report=$2; shift ;;
    --fault) fault=$2; shift ;;
    --netns-loss) netns_loss=$2; shift ;;
    --no-mpi) mpi=0 ;;
    --rss-bound) rss_bound=$2; shift ;;
    -h | --help) usage ;;
    *) echo "soak.sh: unknown option $1" >&2; usage ;;
  esac
  shift
done
[[ $seconds =~ ^[0-9]+$ && $seconds -ge 10 ]] || { echo "soak.sh: duration must be >= 10 s" >&2; exit 2; }
[[ $netns_loss =~ ^[0-9]+$ && $netns_loss -le 50 ]] || { echo "soak.sh: --netns-loss 0..50" >&2; exit 2; }
build=$(cd "$build" 2>/dev/null && pwd) || { echo "soak.sh: no build directory" >&2; exit 2; }
prov_dir=$build/prov/iwarpx/src/ofi
bins=("$build/fabtests_ext/soak/soak_msg" "$build/fabtests_ext/soak/soak_rdm" "$prov_dir/libiwarpx-fi.so")
ompi_dir=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
if ((mpi)); then
  bins+=("$build/tests/mpi/mpit" "$build/tests/mpi/osc_iwarpx_acc_test" "$build/mca/mca_btl_iwarpx.so"
    "$build/mca/mca_osc_iwarpx.so")
fi
for f in "${bins[@]}"; do
  [[ -e $f ]] || { echo "soak.sh: $f not built (cmake --build $build -j1)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/iwarpx-soak.XXXXXX")
[[ -n $report ]] || report=$work/soak-report.md
export FI_PROVIDER_PATH=$prov_dir FI_IWARPX_STATS=1
unset FI_PROVIDER FI_IWARPX_FAULT
for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

# --- processes, namespaces and cleanup -------------------------------------------------------
pids=()
ns1='' ns2=''
msg_server='' msg_client='' rdm_server='' rdm_client='' mpi_pid=''
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null; done # only our own jobs still running
  wait 2>/dev/null
  if [[ -n $ns1 ]]; then ip netns del "$ns1" 2>/dev/null; fi
  if [[ -n $ns2 ]]; then ip netns del "$ns2" 2>/dev/null; fi
  return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM

srv_addr=127.0.0.1
in_ns1=() in_ns2=()
if ((netns_loss > 0)); then
  [[ $(id -u) -eq 0 ]] || { echo "soak.sh: --netns-loss needs root" >&2; exit 2; }
  ns1=iwxsoak$$a ns2=iwxsoak$$b
  if ! { ip netns add "$ns1" && ip netns add "$ns2" &&
    ip link add "vsk$$a" type veth peer name "vsk$$b" &&
    ip link set "vsk$$a" netns "$ns1" && ip link set "vsk$$b" netns "$ns2" &&
    ip -n "$ns1" addr add 10.79.0.1/24 dev "vsk$$a" && ip -n "$ns2" addr add 10.79.0.2/24 dev "vsk$$b" &&
    ip -n "$ns1" link set "vsk$$a" up && ip -n "$ns2" link set "vsk$$b" up &&
    ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up; }; then
    echo "soak.sh: namespace setup failed" >&2
    exit 1
  fi
  for ns in "$ns1" "$ns2"; do
    # On input: a drop on output makes sendmsg fail with EPERM (counted as a send error).
    printf 'table inet soak {\n chain in {\n  type filter hook input priority 0;\n  ip saddr 10.79.0.0/24 numgen random mod 100 < %d drop\n }\n}\n' \
      "$netns_loss" | ip netns exec "$ns" nft -f - || { echo "soak.sh: nft rule failed" >&2; exit 1; }
  done
  srv_addr=10.79.0.2
  in_ns1=(ip netns exec "$ns1")
  in_ns2=(ip netns exec "$ns2")
fi

# --- the generator pairs ---------------------------------------------------------------------
start_pair() { # NAME PROGRAM FAULT_SPEC_SERVER FAULT_SPEC_CLIENT
  local name=$1 prog=$2 fs=$3 fc=$4 port_file=$work/$1.port extra=()
  [[ ${IWARPX_SOAK_BREAK:-} == "$name" ]] && extra=(--corrupt 100)
  env ${fs:+FI_IWARPX_FAULT=$fs} "${in_ns2[@]}" timeout -k 5 $((seconds + 120)) "$prog" -p iwarpx \
    ${ns2:+-s $srv_addr} -B 0 --port-file "$port_file" -w "$window" --sizes "$sizes" \
    >"$work/$name.server.out" 2>"$work/$name.server.err" &
  local spid=$!
  pids+=("$spid")
  for _ in $(seq 100); do [[ -s $port_file ]] && break; sleep 0.1; done
  [[ -s $port_file ]] || { echo "soak.sh: $name server did not start" >&2; cat "$work/$name.server.err" >&2; exit 1; }
  env ${fc:+FI_IWARPX_FAULT=$fc} "${in_ns1[@]}" timeout -k 5 $((seconds + 90)) "$prog" -p iwarpx \
    ${ns1:+-s 10.79.0.1} -P "$(cat "$port_file")" -w "$window" --sizes "$sizes" --seconds "$seconds" "${extra[@]}" \
    "$srv_addr" >"$work/$name.client.out" 2>"$work/$name.client.err" &
  local cpid=$!
  pids+=("$cpid")
  eval "${name}_server=$spid ${name}_client=$cpid"
}

# --- the MPI loop ----------------------------------------------------------------------------
mpi_loop() { # runs until the deadline; one line per run in $work/mpi.runs
  local i=0 prog log rc run=''
  trap 'if [[ -n $run ]]; then kill "$run" 2>/dev/null; fi; exit 1' TERM
  while (($(date +%s) < deadline)); do
    i=$((i + 1))
    log=$work/mpi.$i.log
    case $((i % 3)) in
      # Not coll: its Barrier check (nobody leaves within 150 ms of rank 0's 200 ms late entry)
      # assumes no retransmission delay; an injected drop of the first Barrier's message lets
      # both Barriers' messages arrive together and fails it without any data error.
      1) prog=("$build/tests/mpi/mpit" anysrc many2one probe dtype) ;;
      2) prog=("$build/tests/mpi/osc_iwarpx_acc_test") ;;
      0) prog=("$build/tests/mpi/mpit" p2p) ;; # 0 B - 64 MiB: ~30 s on 2 loaded CPUs
    esac
    # p2p would outlast a short soak by half a minute: only in runs of 2 minutes or more.
    if [[ ${prog[1]:-} == p2p ]] && ((seconds < 120)); then continue; fi
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FI_IWARPX_FAULT="$fault,seed=$((100 + i))" \
      timeout -k 10 240 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
      --mca mca_base_component_path "$ompi_dir:$build/mca" --mca pml ob1 --mca btl self,iwarpx \
      --mca osc iwarpx --mca btl_iwarpx_verbose 1 --mca mpi_yield_when_idle 1 \
      --mca oob_tcp_if_include lo -x FI_PROVIDER_PATH -x FI_IWARPX_STATS -x FI_IWARPX_FAULT \
      "${prog[@]}" >"$log" 2>&1 &
    run=$!
    wait "$run"
    rc=$?
    local ok=0
    case ${prog[0]##*/} in
      mpit) grep -q "mpit: OK 2 ranks" "$log" && ok=1 ;;
      *) grep -q "osc_iwarpx_acc_test: OK 2 ranks" "$log" && ok=1 ;;
    esac
    echo "$i ${prog[0]##*/} rc=$rc ok=$ok" >>"$work/mpi.runs"
  done
}

# --- RSS sampling ----------------------------------------------------------------------------
interval=$((seconds / 6 < 10 ? (seconds / 6 > 1 ? seconds / 6 : 1) : 10))
sample_rss() { # T: one line per watched process still alive
  local t=$1 name pid rss
  for name in msg_server msg_client rdm_server rdm_client; do
    # $! is timeout(1) (env and ip netns exec exec it); the generator is its child.
    pid=$(cat "/proc/${!name}/task/${!name}/children" 2>/dev/null) || continue
    pid=${pid%% *}
    [[ -n $pid ]] || continue
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
    [[ -n $rss ]] && echo "$t $name $rss" >>"$work/rss.txt"
  done
}

begin=$(date +%s)
deadline=$((begin + seconds))
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "soak.sh: ${seconds} s of msg, rdm$( ((mpi)) && echo ", mpi") traffic, faults $fault$( ((netns_loss)) && echo ", ${netns_loss} % nftables loss"); logs in $work"
start_pair msg "$build/fabtests_ext/soak/soak_msg" "" ""
start_pair rdm "$build/fabtests_ext/soak/soak_rdm" "$fault,seed=11" "$fault,seed=12"
: >"$work/mpi.runs"
if ((mpi)); then
  mpi_loop &
  mpi_pid=$!
  pids+=("$mpi_pid")
fi
: >"$work/rss.txt"
sample_rss 0
next=$interval
while (($(date +%s) < deadline + 90)); do
  alive=0
  for p in "$msg_client" "$rdm_client" ${mpi_pid:+"$mpi_pid"}; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 1
  now=$(($(date +%s) - begin))
  if ((now >= next)); then
    sample_rss "$now"
    next=$((next + interval))
    ((now % 60 < interval)) && echo "soak.sh: ${now} s"
  fi
done
# Each exit status from a wait in this shell, not in $(...): a subshell cannot wait for its
# parent's jobs, and bash then returns -1 at once for one still running, such as a server
# lingering in its close for a last ack (FI_IWARPX_RD_LINGER, up to 2 s after its client
# ended). Bounded: every generator runs under timeout(1).
wait "$msg_client" 2>/dev/null
rc_msg_client=$?
wait "$msg_server" 2>/dev/null
rc_msg_server=$?
wait "$rdm_client" 2>/dev/null
rc_rdm_client=$?
wait "$rdm_server" 2>/dev/null
rc_rdm_server=$?
((mpi)) && wait "$mpi_pid"
elapsed=$(($(date +%s) - begin))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- verdict and report ----------------------------------------------------------------------
"$root/scripts/soak_report.sh" --work "$work" --seconds "$seconds" --elapsed "$elapsed" \
  --fault "$fault" --netns-loss "$netns_loss" --mpi "$mpi" --rss-bound "$rss_bound" \
  --warmup $((seconds / 4)) --interval "$interval" --load "$load_start -> $load_end" \
  --rc "msg_client=$rc_msg_client msg_server=$rc_msg_server rdm_client=$rc_rdm_client rdm_server=$rc_rdm_server" \
  >"$report"
verdict=$?
cat "$report"
echo "soak.sh: report $report, logs $work"
exit $verdict
