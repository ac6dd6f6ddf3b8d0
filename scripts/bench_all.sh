#!/usr/bin/env bash
# scripts/bench_all.sh [options] - every comparison of docs/PERFORMANCE.md in one run, side
# by side: a markdown report (OUT/REPORT.md) with the machine, every table, its ratios to the
# anchor, the exact commands and the issue targets met / not met, plus PNG plots (latency and
# bandwidth vs size per comparison, memory per peer vs peer count). It runs the existing
# benchmark scripts, one per section, and keeps their own output (OUT/raw/SECTION.md):
#
#   dgram  FI_EP_DGRAM iwarpx vs udp                     scripts/bench_dgram.sh
#   rdm    FI_EP_RDM latency and tagged bandwidth, iwarpx (and iwarpx+ud, +hybrid, +rc) vs
#          tcp;ofi_rxm and udp;ofi_rxd                   scripts/bench_rdm.sh
#   msg    FI_EP_MSG latency, RMA write/read bw vs tcp   scripts/bench_msg.sh
#   btl    Open MPI btl iwarpx vs btl tcp                scripts/bench_btl.sh
#   osc    Open MPI osc iwarpx vs osc pt2pt              scripts/bench_osc.sh (its own plots)
#   sctp   fi_pingpong -e msg, FI_IWARPX_LLP=sctp vs tcp scripts/bench_pingpong.sh --ep msg;
#          "not available: <reason>" when the provider offers no FI_IWARPX_LLP (an old build)
#   scale  one RDM endpoint and N peers: memory per peer, hot-peer latency  scripts/bench_scale.sh
#   floor  raw kernel sockets, no libfabric: UDP round trip, one TCP stream  scripts/bench_floor.sh;
#          the report sets the issue targets against it (what any socket transport can reach);
#          the full run adds --anchors: the anchors of those targets in the same rounds
#
#   --quick        small sizes, few iterations, one run each (minutes; numbers are a smoke
#                  check, not figures); default: the sizes and repeats of PERFORMANCE.md
#   --out DIR      where the report goes (default BUILD/bench-report; docs/ is never written
#                  unless named here)
#   --only LIST    comma-separated sections of the list above (default all)
#   --build DIR    build tree (default build)
#   --no-build     use DIR's programs as they are (default: one `cmake --build DIR -j1` of the
#                  targets the chosen sections need, first)
#   --list         print the sections and exit
#   --dry-run      print each chosen section's command (or why it cannot run) and exit
#
# Progress (section i/N, elapsed, an ETA from per-section estimates scaled by how fast the
# finished sections went, the section's last log line) goes to stderr; each section's own
# stderr is kept in OUT/logs/SECTION.log. Exit status: 0 if every section ran (or was not
# available), 1 if any section failed (its table, partial or absent, is still in the report),
# 2 for bad options. Run it under `flock /tmp/iwarpx-bench.lock` on a shared machine.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

all_sections=(dgram rdm msg btl osc sctp scale floor)
build=build
do_build=1
quick=0
dry_run=0
out=
only=
cmdline="scripts/bench_all.sh $*"

while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --list) printf '%s\n' "${all_sections[@]}"; exit 0 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_all.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $build = /* ]] || build=$root/$build
out=${out:-$build/bench-report}
[[ $out = /* ]] || out=$root/$out

sections=()
if [[ -n $only ]]; then
  IFS=, read -ra wanted <<<"$only"
  for s in "${all_sections[@]}"; do  # keep the report's order whatever the option's
    [[ " ${wanted[*]} " == *" $s "* ]] && sections+=("$s")
  done
  for w in "${wanted[@]}"; do
    [[ " ${all_sections[*]} " == *" $w "* ]] ||
      { echo "bench_all.sh: unknown section $w (${all_sections[*]})" >&2; exit 2; }
  done
else
  sections=("${all_sections[@]}")
fi
((${#sections[@]})) || { echo "bench_all.sh: --only selects nothing" >&2; exit 2; }

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # bench_show_cmd, bench_work_start
# shellcheck source=scripts/bench_all_sections.sh
. scripts/bench_all_sections.sh  # section_title, section_targets, section_cmd, section_check
if ((dry_run)); then
  bench_all_probe=0
  for s in "${sections[@]}"; do
    if why=$(section_check "$s"); then
      mapfile -t cmd < <(section_cmd "$s")
      echo "$s: $(bench_show_cmd "${cmd[@]}")"
    else
      echo "$s: not available: $why"
    fi
  done
  exit 0
fi
bench_work_start bench_all  # $work for scratch, started_pids stopped on exit

mkdir -p "$out/raw" "$out/logs" || exit 1
# Only what this script (and bench_report.py) writes: --out may name a directory with more.
rm -f "$out"/raw/* "$out"/logs/* "$out/REPORT.md"
for s in "${all_sections[@]}"; do [[ $s == osc ]] || rm -f "$out/$s"_*.png; done
# bench_osc.sh's own files, only when it is to write them again (the report links them)
if [[ " ${sections[*]} " == *" osc "* ]]; then
  rm -f "$out/osc_latency.png" "$out/osc_bandwidth.png" "$out/osc_bench.md"
fi

t0=$(date +%s)
fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
say() { echo "[bench_all $(fmt_time $(($(date +%s) - t0)))] $*" >&2; }

# The machine, before anything runs (the load average is the point: was it shared?).
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: $cmdline"
  echo "mode: $( ((quick)) && echo "quick (small sizes, one run: a smoke check, not figures)" || echo "full (the sizes and repeats of docs/PERFORMANCE.md)")"
  echo "cpus: $(nproc) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))"
  echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "kernel: $(uname -sr)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "libfabric: $(pkg-config --modversion libfabric 2>/dev/null || fi_info --version 2>/dev/null | head -1)"
  echo "open mpi: $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p' | head -1)"
  echo "iwarpx: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/raw/machine.txt"

# One build of what the chosen sections need, then every script runs with --no-build.
if ((do_build)); then
  targets=()
  for s in "${sections[@]}"; do
    mapfile -t -O "${#targets[@]}" targets < <(section_targets "$s")
  done
  mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
  available=$(cmake --build "$build" --target help 2>/dev/null)
  build_targets=()
  for t in "${targets[@]}"; do grep -q "^$t:" <<<"$available" && build_targets+=("$t"); done
  say "build: cmake --build $build -j1 --target ${build_targets[*]}"
  cmake --build "$build" -j1 --target "${build_targets[@]}" >"$out/logs/build.log" 2>&1 ||
    { say "build failed, see $out/logs/build.log"; tail -n 20 "$out/logs/build.log" >&2; exit 1; }
fi

# Estimated seconds per section on this 2-CPU VM (quick: measured 2026-11-25 under load; full:
# from the runs' sizes, repeats and PERFORMANCE.md's timings); the ETA scales them by how long
# the finished sections really took against their estimates.
declare -A est_full=([dgram]=90 [rdm]=600 [msg]=120 [btl]=180 [osc]=400 [sctp]=180 [scale]=900
                     [floor]=100)
declare -A est_quick=([dgram]=25 [rdm]=180 [msg]=40 [btl]=20 [osc]=15 [sctp]=30 [scale]=20
                      [floor]=5)
estimate() { if ((quick)); then echo "${est_quick[$1]}"; else echo "${est_full[$1]}"; fi; }
done_est=0
done_real=0
# eta INDEX SECTION_ELAPSED: seconds left (this section's rest and the ones after it).
eta() {
  local i=$1 in_sec=$2 left=0 j e
  e=$(estimate "${sections[i]}")
  ((e > in_sec)) && left=$((e - in_sec))
  for ((j = i + 1; j < ${#sections[@]}; j++)); do
    left=$((left + $(estimate "${sections[j]}")))
  done
  if ((done_est > 0)); then  # scale by the observed pace, within 0.5x..4x
    awk -v l="$left" -v r="$done_real" -v e="$done_est" 'BEGIN {
      f = r / e; if (f < 0.5) f = 0.5; if (f > 4) f = 4; printf "%d\n", l * f }'
  else
    echo "$left"
  fi
}

ticker_pid=
# ticker INDEX LOG START: a progress line every 20 s (quick: 10 s) while a section runs.
ticker() {
  local i=$1 log=$2 start=$3 period=20 now last
  ((quick)) && period=10
  while sleep "$period"; do
    now=$(date +%s)
    last=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n 1 | cut -c1-100)
    say "section $((i + 1))/${#sections[@]} ${sections[i]}: running $(fmt_time $((now - start)))," \
      "ETA ~$(fmt_time "$(eta "$i" $((now - start)))")${last:+ | $last}"
  done
}
stop_ticker() {
  [[ -n $ticker_pid ]] || return 0
  kill "$ticker_pid" 2>/dev/null
  wait "$ticker_pid" 2>/dev/null
  ticker_pid=
}
trap 'stop_ticker; bench_cleanup' EXIT

failed=0
for i in "${!sections[@]}"; do
  s=${sections[i]}
  raw=$out/raw/$s
  log=$out/logs/$s.log
  start=$(date +%s)
  section_title "$s" >"$raw.title"
  say "section $((i + 1))/${#sections[@]} $s: $(cat "$raw.title"), ETA ~$(fmt_time "$(eta "$i" 0)")"
  crc=0
  why=$(section_check "$s") || crc=$?
  if ((crc == 1)); then
    echo "not available: $why" >"$raw.status"
    say "section $((i + 1))/${#sections[@]} $s: not available: $why"
    continue
  elif ((crc != 0)); then
    echo "failed: $why" >"$raw.status"
    failed=$((failed + 1))
    say "section $((i + 1))/${#sections[@]} $s: FAILED: $why"
    continue
  fi
  mapfile -t cmd < <(section_cmd "$s")
  bench_show_cmd "${cmd[@]}" >"$raw.cmd"
  ticker "$i" "$log" "$start" &
  ticker_pid=$!
  rc=0
  "${cmd[@]}" >"$raw.md" 2>"$log" &
  pid=$!
  started_pids+=("$pid")
  wait "$pid" || rc=$?
  stop_ticker
  secs=$(($(date +%s) - start))
  echo "$secs" >"$raw.seconds"
  done_est=$((done_est + $(estimate "$s")))
  done_real=$((done_real + secs))
  if ((rc == 0)); then
    echo ok >"$raw.status"
    say "section $((i + 1))/${#sections[@]} $s: done in $(fmt_time "$secs")"
  else
    last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-200)
    echo "failed: exit $rc${last:+: $last}" >"$raw.status"
    failed=$((failed + 1))
    say "section $((i + 1))/${#sections[@]} $s: FAILED (exit $rc) after $(fmt_time "$secs"), log $log"
  fi
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/raw/machine.txt"
echo "total: $(fmt_time $(($(date +%s) - t0)))" >>"$out/raw/machine.txt"

say "report: /usr/bin/python3 scripts/bench_report.py $out"
/usr/bin/python3 scripts/bench_report.py "$out" "${sections[@]}" ||
  { say "the report could not be written"; exit 1; }
say "wrote $out/REPORT.md ($(find "$out" -maxdepth 1 -name '*.png' | wc -l) plots)"
((failed == 0)) || { say "$failed section(s) failed"; exit 1; }
exit 0
