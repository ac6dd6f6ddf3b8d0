#!/bin/sh
# Usage: mpit_kill_test.sh <mpirun> <Open MPI component dir> <build mca dir> <provider dir>
#                          <mpit> <ranks> <bound seconds> runtime|btl|btl-sctp
# A killed rank must end the job, never hang. mpit over --mca pml ob1 --mca btl self,iwarpx
# (btl_iwarpx_lib.sh); every rank prints its PID, the last rank raise(SIGKILL)s itself
# (mpit_kill.c). The run is cut at bound + 30 s, so a hang fails instead of blocking ctest.
# runtime: sub-test "kill", plain mpirun: the victim dies in the middle of a 4 MiB ring
#          exchange while the others are blocked in communication with it. mpirun must exit
#          non-zero within <bound> s and report the rank killed by signal 9.
# btl:     sub-test "killsend" with --enable-recovery, so the runtime does NOT abort the job
#          when the victim dies and only the BTL can notice: the survivors keep sending to the
#          victim, and each survivor's BTL must log the completion error for the victim and
#          hand it to the PML (ob1 prints the BTL's reason "iwarpx: peer unreachable" and
#          aborts the process), within <bound> s (FI_IWARPX_RD_TIMEOUT=2000 ms). mpirun's exit
#          status is not checked in this mode: with --enable-recovery Open MPI 4.1 exits 0.
# btl-sctp: btl with --mca btl_iwarpx_p2p sctp (if_include lo): the sends to the victim go on
#          its SCTP association, which never reports the death (usrsctp gets no ABORT from a
#          dead process); the BTL's liveness probe (a zero-length RDMA Read on the RDM
#          endpoint, see ompi_btl_iwarpx/btl_iwarpx_sctp.h) must fail and report the loss.
# Both: the victim announced itself, no survivor returned from talking to the dead rank (mpit
# would say so and exit 3), every rank had the iwarpx module ready (the BTL was the transport),
# and every rank's process is gone within 10 s after mpirun (one left behind is killed by its
# PID and fails the test).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=btl_iwarpx_lib.sh
. "$here/btl_iwarpx_lib.sh"
[ $# -eq 8 ] || { echo "usage: $0 mpirun ompi_dir mca_dir fi_dir mpit ranks bound runtime|btl"; exit 2; }
iwx_mpi_setup "$1" "$2" "$3" "$4" "$5" || exit 1
mpit=$5
np=$6
bound=$7
mode=$8
victim_rank=$((np - 1))
log=$(mktemp "${TMPDIR:-/tmp}/mpit_kill_test.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
start=$(date +%s)
case $mode in
  runtime) iwx_mpirun "$log" $((bound + 30)) "$np" "$mpit" kill || rc=$? ;;
  btl)
    FI_IWARPX_RD_TIMEOUT=2000 iwx_mpirun "$log" $((bound + 30)) "$np" --enable-recovery \
      -x FI_IWARPX_RD_TIMEOUT "$mpit" killsend || rc=$?
    ;;
  btl-sctp)
    FI_IWARPX_RD_TIMEOUT=2000 iwx_mpirun "$log" $((bound + 30)) "$np" --enable-recovery \
      -x FI_IWARPX_RD_TIMEOUT --mca btl_iwarpx_p2p sctp --mca btl_iwarpx_if_include lo \
      "$mpit" killsend || rc=$?
    ;;
  *) echo "FAIL: unknown mode '$mode'"; exit 2 ;;
esac
elapsed=$(($(date +%s) - start))
cat "$log"
echo "mpirun exited $rc after $elapsed s"
fail=0
if [ $rc -eq 124 ] || [ "$elapsed" -ge $((bound + 30)) ]; then
  # (137 alone proves nothing: mpirun itself exits 128 + 9 for a rank killed by SIGKILL.)
  echo "FAIL: mpirun hung after the kill (cut by timeout after $elapsed s)"
  fail=1
elif [ "$elapsed" -gt "$bound" ]; then
  echo "FAIL: mpirun took $elapsed s to end (bound $bound s)"
  fail=1
fi
victim=$(iwx_matches "$log" 'mpit: kill: rank [0-9]+ \(pid [0-9]+\) raises SIGKILL' |
  sed 's/.*(pid \([0-9]*\)).*/\1/')
[ -n "$victim" ] || { echo "FAIL: the victim rank never announced its kill"; fail=1; }
if [ "$mode" = runtime ]; then
  [ $rc -ne 0 ] || { echo "FAIL: mpirun exited 0 although a rank was killed"; fail=1; }
  if ! grep -Eq "process rank $victim_rank with PID [0-9]+ on node .* exited on signal 9" "$log"; then
    # Open MPI 4.1's message often says "PID 0", so the PID itself is not compared.
    echo "FAIL: mpirun did not report rank $victim_rank (PID $victim) killed by signal 9"
    fail=1
  fi
else
  n=$(iwx_count "$log" "btl:iwarpx: completion error [^[]* for \[\[[0-9]+,[0-9]+\],$victim_rank\]")
  [ "$n" -ge $((np - 1)) ] ||
    { echo "FAIL: $n of $((np - 1)) survivors' BTL logged a completion error for the victim"; fail=1; }
  n=$(iwx_count "$log" "iwarpx: peer unreachable")
  [ "$n" -ge $((np - 1)) ] ||
    { echo "FAIL: the PML was told of the peer loss by $n of $((np - 1)) survivors"; fail=1; }
fi
if grep -q "returned from a barrier with a dead rank" "$log"; then
  echo "FAIL: a survivor completed communication with the dead rank"
  fail=1
fi
n=$(iwx_count "$log" "btl:iwarpx: module ready on the iwarpx RDM endpoint")
[ "$n" -eq "$np" ] || { echo "FAIL: $n 'module ready' lines, expected $np"; fail=1; }
pids=$(iwx_matches "$log" 'mpit: kill: rank [0-9]+ pid [0-9]+' | sed 's/.* pid //')
n=$(printf '%s\n' "$pids" | grep -c . || true)
[ "$n" -eq "$np" ] || { echo "FAIL: $n rank PIDs printed, expected $np"; fail=1; }
for pid in $pids; do
  i=0
  while [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] &&
    [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  # Only a process still running our program under that PID is ours.
  if [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] &&
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$mpit")" ]; then
    echo "FAIL: rank process $pid survived mpirun; killing it"
    kill -9 "$pid" 2>/dev/null || true
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "PASS: a SIGKILLed rank ended the job ($mode; mpirun $rc) in $elapsed s (bound $bound s)"
exit $fail
