#!/usr/bin/env bash
# soak_report.sh - the verdict and markdown report of one scripts/soak.sh run, from the files
# it left in its work directory (called by soak.sh; see its header for the rules).
#
#   soak_report.sh --work DIR --seconds S --elapsed E --fault SPEC --netns-loss PCT --mpi 0|1
#                  --rss-bound KIB --warmup SEC --interval SEC --load TEXT --rc "name=code ..."
#
# Reads: {msg,rdm}.{client,server}.{out,err} (the generators' "soak: ..." totals lines and
# stderr with "iwarpx stats: ..." and failure lines), mpi.runs ("N PROGRAM rc=R ok=0|1") and
# mpi.N.log, rss.txt ("T NAME KIB"). Writes the report to stdout; exit 0 when every check
# passes, 1 otherwise. Every section is always present (with "none" when there is nothing).
set -uo pipefail
while (($#)); do
  case $1 in
    --work) work=$2 ;;
    --seconds) seconds=$2 ;;
    --elapsed) elapsed=$2 ;;
    --fault) fault=$2 ;;
    --netns-loss) netns_loss=$2 ;;
    --mpi) mpi=$2 ;;
    --rss-bound) rss_bound=$2 ;;
    --warmup) warmup=$2 ;;
    --interval) interval=$2 ;;
    --load) load=$2 ;;
    --rc) rcs=$2 ;;
    *) echo "soak_report.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
violations=()
bad() { violations+=("$*"); }

# key=value of a "soak: PROG SIDE OK k=v ..." line in FILE (empty when absent).
totals() { sed -n 's/^soak: [a-z_]* [a-z]* OK //p' "$1" 2>/dev/null | tail -1; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
rc_of() { tr ' ' '\n' <<<"$rcs" | sed -n "s/^$1=//p"; }
# Sums every "iwarpx stats:" counter over the given files: "name=sum ..." (sorted).
stats_sum() {
  cat "$@" 2>/dev/null | grep -o 'iwarpx stats: .*' | tr ' ' '\n' | grep -E '^[a-z_]+=[0-9]+$' |
    awk -F= '{ s[$1] += $2 } END { for (k in s) printf "%s=%s ", k, s[k] }'
}
num() { local v; v=$(field "$1" "$2"); echo "${v:-0}"; }

echo "# iwarpx soak report"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(hostname), $(nproc) CPUs, load average $load"
echo "- duration: ${seconds} s requested, ${elapsed} s with start-up and the last runs"
echo "- faults: FI_IWARPX_FAULT=$fault (per mille) on the rdm pair and every MPI rank; nftables loss between namespaces: ${netns_loss} %"
echo

echo "## Traffic"
echo
echo "| component | rounds / runs | messages | message bytes | RMA writes (bytes) | RMA reads (bytes) | atomics |"
echo "|---|---|---|---|---|---|---|"
for c in msg rdm; do
  t=$(totals "$work/$c.client.out")
  if [[ -z $t ]]; then
    echo "| $c | - | - | - | - | - | - |"
    continue
  fi
  echo "| $c | $(num "$t" rounds) | $(num "$t" msgs) | $(num "$t" msg_bytes) | $(num "$t" writes) ($(num "$t" write_bytes)) | $(num "$t" reads) ($(num "$t" read_bytes)) | $(num "$t" atomics) |"
done
mpi_runs=$(wc -l <"$work/mpi.runs" 2>/dev/null || echo 0)
mpi_ok=$(grep -c 'rc=0 ok=1$' "$work/mpi.runs" 2>/dev/null)
mpi_btl=$(cat "$work"/mpi.*.log 2>/dev/null | grep -o 'finalize: sent [0-9]* messages ([0-9]* bytes), received [0-9]* ([0-9]* bytes), [0-9]* puts, [0-9]* gets, [0-9]* atomics' |
  awk '{ s += $3; b += substr($5, 2); p += $11; g += $13; a += $15 } END { printf "%d %d %d %d %d", s, b, p, g, a }')
read -r mpi_msgs mpi_bytes mpi_puts mpi_gets mpi_atomics <<<"${mpi_btl:-0 0 0 0 0}"
if ((mpi)); then
  echo "| mpi (btl/osc iwarpx, 2 ranks) | $mpi_runs | $mpi_msgs | $mpi_bytes | $mpi_puts puts | $mpi_gets gets | $mpi_atomics |"
fi
echo
echo "Messages and bytes are the client's (msg, rdm: each verified by the server) or the BTL's"
echo "finalize counters summed over every rank of every run (mpi: the programs check every byte)."
echo

echo "## Loss and duplication"
echo
echo "| component | sent | verified | exit codes | verdict |"
echo "|---|---|---|---|---|"
for c in msg rdm; do
  ct=$(totals "$work/$c.client.out")
  st=$(totals "$work/$c.server.out")
  rc_c=$(rc_of "${c}_client") rc_s=$(rc_of "${c}_server")
  sent=$(num "$ct" msgs) got=$(num "$st" msgs)
  v=ok
  if [[ -z $ct || -z $st ]]; then
    v=FAIL
    bad "$c: no totals line from the $([[ -z $ct ]] && echo client || echo server)"
  elif [[ $sent != "$got" || $(num "$ct" msg_bytes) != "$(num "$st" msg_bytes)" ]]; then
    v=FAIL
    bad "$c: client sent $sent messages, server verified $got"
  elif ((sent == 0)); then
    v=FAIL
    bad "$c: no message moved"
  fi
  [[ $rc_c == 0 && $rc_s == 0 ]] || { v=FAIL; bad "$c: client exited $rc_c, server $rc_s (124: timeout)"; }
  echo "| $c | $sent | $got | client $rc_c, server $rc_s | $v |"
done
if ((mpi)); then
  v=ok
  ((mpi_runs > 0)) || { v=FAIL; bad "mpi: no run finished"; }
  ((mpi_ok == mpi_runs)) || { v=FAIL; bad "mpi: $((mpi_runs - mpi_ok)) of $mpi_runs runs failed: $(grep -v 'rc=0 ok=1$' "$work/mpi.runs" | head -3 | tr '\n' ';')"; }
  echo "| mpi | $mpi_runs runs | $mpi_ok passed every check | $(awk '{ print $3 }' "$work/mpi.runs" | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep=", " }') | $v |"
fi
echo
failures=$(cat "$work"/*.err "$work"/mpi.*.log 2>/dev/null | grep -E 'data check failed|completion error|timed out|FAIL' | sort -u | head -5)
if [[ -n $failures ]]; then
  echo "Failure lines (first 5):"
  echo
  while IFS= read -r line; do echo "    $line"; done <<<"$failures"
else
  echo "Failure lines: none (no data check failure, error completion or timeout was printed)."
fi
echo

echo "## Faults and errors"
echo
echo "Sums of the provider's FI_IWARPX_STATS=1 counters over every endpoint of the component."
echo
echo "| component | endpoints | dropped | duplicated | reordered | corrupted | retransmitted | CRC/malformed drops | terminates | failed peers/connections | send errors | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
want() { tr ',' '\n' <<<"$fault" | sed -n "s/^$1=//p"; }
for c in msg rdm mpi; do
  ((mpi)) || [[ $c != mpi ]] || continue
  if [[ $c == mpi ]]; then files=("$work"/mpi.*.log); else files=("$work/$c.client.err" "$work/$c.server.err"); fi
  s=$(stats_sum "${files[@]}")
  eps=$(cat "${files[@]}" 2>/dev/null | grep -c 'iwarpx stats:')
  drops=$(($(num "$s" rx_bad_crc) + $(num "$s" rx_malformed) + $(num "$s" rx_no_crc)))
  terms=$(($(num "$s" terminates_sent) + $(num "$s" terminates_received)))
  failed=$(($(num "$s" rd_peers_failed) + $(num "$s" rc_failed)))
  errs=$(($(num "$s" tx_errors) + $(num "$s" rx_truncated)))
  corrupted=$(num "$s" fault_corrupted)
  v=ok
  ((eps > 0)) || { v=FAIL; bad "$c: no FI_IWARPX_STATS line (no endpoint closed normally)"; }
  ((terms == 0)) || { v=FAIL; bad "$c: $terms Terminates"; }
  ((failed == 0)) || { v=FAIL; bad "$c: $failed failed peers or connections"; }
  ((errs == 0)) || { v=FAIL; bad "$c: $errs socket send errors or truncated datagrams"; }
  ((drops <= 2 * corrupted)) || { v=FAIL; bad "$c: $drops CRC/malformed drops, only $corrupted corruptions injected"; }
  if [[ $c != msg ]] && ((eps > 0)); then
    for k in drop:fault_dropped dup:fault_duplicated reorder:fault_reordered corrupt:fault_corrupted; do
      w=$(want "${k%%:*}")
      if [[ -n $w && $w != 0 ]] && (($(num "$s" "${k#*:}") == 0)); then
        v=FAIL
        bad "$c: FI_IWARPX_FAULT asks for ${k%%:*}=$w but ${k#*:} is 0 (faults not applied)"
      fi
    done
  fi
  echo "| $c | $eps | $(num "$s" fault_dropped) | $(num "$s" fault_duplicated) | $(num "$s" fault_reordered) | $corrupted | $(num "$s" rd_retransmitted) | $drops | $terms | $failed | $errs | $v |"
done
echo
echo "msg runs over TCP (no datagram path): FI_IWARPX_FAULT does not reach it; only --netns-loss does."
echo

echo "## Memory (RSS)"
echo
echo "Sampled every ${interval} s; warm-up ${warmup} s; bound ${rss_bound} KiB growth after warm-up."
echo
echo "| process | samples | first KiB | after warm-up KiB | max later KiB | last KiB | growth KiB | verdict |"
echo "|---|---|---|---|---|---|---|---|"
for name in msg_server msg_client rdm_server rdm_client; do
  row=$(awk -v n="$name" -v w="$warmup" '
    $2 == n { c++; if (c == 1) first = $3; last = $3
              if ($1 >= w) { if (!base) base = $3; if ($3 > mx) mx = $3 } }
    END { if (!c) { print "0"; exit }
          if (!base) { base = last; mx = last }
          printf "%d %d %d %d %d %d", c, first, base, mx, last, mx - base }' "$work/rss.txt" 2>/dev/null)
  read -r cnt first base mx last growth <<<"$row"
  if ((${cnt:-0} < 2)); then
    echo "| $name | ${cnt:-0} | - | - | - | - | - | FAIL |"
    bad "$name: fewer than 2 RSS samples (the process ended early)"
    continue
  fi
  v=ok
  ((growth <= rss_bound)) || { v=FAIL; bad "$name: RSS grew $growth KiB after warm-up (bound $rss_bound)"; }
  echo "| $name | $cnt | $first | $base | $mx | $last | $growth | $v |"
done
if ((mpi)); then
  echo
  echo "MPI ranks live for one run each (seconds); their memory is not sampled."
fi
echo

echo "## Verdict"
echo
if ((${#violations[@]} == 0)); then
  echo "PASS: every byte verified, client and server counts equal, no error but injected ones, RSS within bound."
  exit 0
fi
echo "FAIL: ${#violations[@]} violation(s):"
echo
for v in "${violations[@]}"; do echo "- $v"; done
exit 1
