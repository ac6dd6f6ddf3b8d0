#!/usr/bin/env bash
# Usage: sctp_read_soak.sh <build dir> [runs] [min MB/s]
# The usrsctp receive-window stall (docs/design.md "Receive buffers"), as a test that fails
# with it: `runs` (6) adaptive rma_bw --op read runs of 64 KiB Reads, window 16, over iWARP
# over SCTP (FI_IWARPX_LLP=sctp, usrsctp here) with unordered Read Responses
# (FI_IWARPX_SCTP_UNORDERED=1, the mode that stalled), both processes on ONE CPU (the one
# this script may run on first), which is what makes usrsctp's threads and the engines
# compete and the stall come every time: with usrsctp's 128 KiB receive buffer each run
# measured 0.6-5.2 MB/s (every run had 2-9 T3 timeouts of ~0.6 s each); with the fix
# 59-74 MB/s. Every run must verify its data (rma_bw exits 0) and reach `min MB/s` (12):
# a run at 12 MB/s moves the adaptive 0.2 s worth in at most ~1 s, i.e. no ~0.6 s
# stall in most of it. Needs no fixed port (the server takes port 0 and writes it to a file);
# runs in its own network namespace when `unshare -n` works (then nothing else shares its
# loopback), else on the host's loopback. Bounded: 30 s per process.
set -uo pipefail
build=$1
runs=${2:-6}
min_mbs=${3:-12}
bin=$build/fabtests_ext/bench/rma_bw
[[ -x $bin ]] || { echo "FAIL: no $bin"; exit 1; }
if [[ ${SCTP_SOAK_IN_NETNS:-} != 1 ]] && unshare -n true 2>/dev/null; then
  SCTP_SOAK_IN_NETNS=1 exec unshare -n "$0" "$@"
fi
if [[ ${SCTP_SOAK_IN_NETNS:-} == 1 ]]; then
  ip link set lo up || { echo "FAIL: cannot bring lo up in the namespace"; exit 1; }
fi
cpu=$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sctp_read_soak.XXXXXX")
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export FI_PROVIDER_PATH=$build/prov/iwarpx/src/ofi FI_IWARPX_LLP=sctp FI_IWARPX_SCTP_UNORDERED=1
args=(-p iwarpx --op read --sizes 64k -w 16 --timeout 20)
fail=0
echo "rma_bw --op read 64 KiB -w 16, U=1, both processes on CPU $cpu, $runs runs, at least $min_mbs MB/s each"
for ((i = 1; i <= runs; i++)); do
  rm -f "$tmp/port"
  timeout -k 2 30 taskset -c "$cpu" "$bin" "${args[@]}" -s 127.0.0.1 -B 0 --port-file "$tmp/port" \
    >"$tmp/server.out" 2>"$tmp/server.err" &
  server_pid=$!
  for ((k = 0; k < 200; k++)); do [[ -s $tmp/port ]] && break; sleep 0.05; done
  if [[ ! -s $tmp/port ]]; then
    echo "FAIL: run $i: the server did not listen"; sed 's/^/  server: /' "$tmp/server.err"; exit 1
  fi
  rc=0
  timeout -k 2 30 taskset -c "$cpu" "$bin" "${args[@]}" -P "$(cat "$tmp/port")" --csv 127.0.0.1 \
    >"$tmp/client.out" 2>"$tmp/client.err" || rc=$?
  src=0
  wait "$server_pid" || src=$?
  server_pid=
  line=$(grep -v '^program' "$tmp/client.out" | tail -n 1)
  mbs=$(echo "$line" | awk -F, '{print $6}')
  echo "run $i: $line (client rc $rc, server rc $src)"
  if ((rc != 0 || src != 0)) || [[ -z $mbs ]]; then
    echo "FAIL: run $i did not complete and verify"
    sed 's/^/  client: /' "$tmp/client.err" | tail -n 5
    sed 's/^/  server: /' "$tmp/server.err" | tail -n 5
    fail=1
    continue
  fi
  if ! awk -v v="$mbs" -v m="$min_mbs" 'BEGIN { exit !(v >= m) }'; then
    echo "FAIL: run $i: $mbs MB/s < $min_mbs (a receive-window stall?)"
    fail=1
  fi
done
((fail == 0)) && echo "PASS"
exit "$fail"
