# shellcheck shell=bash
# scripts/bench_lib.sh - sourced by the benchmark scripts (bench_msg.sh, bench_rdm_bw.sh,
# bench_btl.sh): the per-run work directory and the processes a script started.
#
#   bench_work_start NAME   makes $work (/tmp/NAME.XXXXXX, with logs/ and data/), empties
#                           started_pids, and installs the EXIT/INT/TERM traps
#   started_pids+=("$pid")  the script records every background process it starts
# On exit only those PIDs are stopped, and $work is removed unless keep_logs=1 (then its path
# is printed). Needs bash.

bench_cleanup() {
  local pid
  for pid in "${started_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill "$pid" 2>/dev/null
  done
  if ((${keep_logs:-0})); then echo "logs kept in $work" >&2; else rm -rf "$work"; fi
}

bench_work_start() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  mkdir -p "$work/logs" "$work/data"
  started_pids=()
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}
