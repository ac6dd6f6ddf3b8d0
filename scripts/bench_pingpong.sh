#!/usr/bin/env bash
# scripts/bench_pingpong.sh [options] - connectionless ping-pong in one run on
# loopback: iwarpx against libfabric anchor providers, all driven by Debian's own
# fi_pingpong (libfabric-bin). Prints a markdown table of the median latency per
# size over the repeats, each anchor's, and the ratio iwarpx/anchor, plus the
# bandwidth fi_pingpong reports (MB/s) for the largest sizes.
#
#   --ep TYPE       dgram (default), rdm or msg
#   --anchors LIST  comma-separated providers to compare with (default: udp for
#                   dgram; "tcp;ofi_rxm,udp;ofi_rxd" for rdm; iwarpx+sctp for msg, so the
#                   iwarpx column is iWARP/TCP against iWARP/SCTP); iwarpx+MODE is iwarpx under
#                   a mode of bench_lib.sh (send rules ud, hybrid, rc, fp; LLP tcp, sctp)
#   --build DIR     build tree holding libiwarpx-fi.so (default build; built with
#                   `cmake --build DIR -j1 --target iwarpx-fi` first)
#   --no-build      use DIR's libiwarpx-fi.so as it is
#   --sizes LIST    comma-separated sizes for fi_pingpong -S (default 8,64,1024,8192,32768)
#   --iters N       fi_pingpong -I per run (default 20000)
#   --budget BYTES  at most BYTES (k, m, g suffixes) per run and size: -I is
#                   min(N, max(100, BYTES / size)), so large sizes over a slow
#                   transport finish inside the run timeout (default: no budget)
#   --repeat N      runs per provider, alternating, median reported (default 3); with
#                   N > 1 the ratios within each round follow the table as comment lines
#                   ("# paired: ..."), median (min-max) over the rounds
#   --subject PROV  the provider measured against the anchors (default iwarpx; e.g.
#                   --ep msg --subject iwarpx+sctp --anchors iwarpx+tcp: SCTP against TCP)
#
# Each server runs in the background under `timeout` with its PID recorded, on a
# port the kernel chose; only those PIDs are stopped on exit.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

build=build
sizes=8,64,1024,8192,32768
iters=20000
budget=0
repeat=3
ep=dgram
anchors=
subject=iwarpx
do_build=1
cmdline="${IWARPX_BENCH_NAME:-scripts/bench_pingpong.sh} $*"
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --iters) iters=$2; shift ;;
    --budget)
      budget=$(numfmt --from=iec "${2^^}" 2>/dev/null) || { echo "bench_pingpong.sh: --budget $2" >&2; exit 2; }
      shift ;;
    --repeat) repeat=$2; shift ;;
    --ep) ep=$2; shift ;;
    --anchors) anchors=$2; shift ;;
    --subject) subject=$2; shift ;;
    --no-build) do_build=0 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_pingpong.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

case $ep in
  dgram) anchors=${anchors:-udp} ;;
  rdm) anchors=${anchors:-tcp;ofi_rxm,udp;ofi_rxd} ;;
  msg) anchors=${anchors:-iwarpx+sctp} ;;
  *) echo "bench_pingpong.sh: --ep $ep (dgram, rdm or msg)" >&2; exit 2 ;;
esac
pingpong=$(command -v fi_pingpong) || { echo "bench_pingpong.sh: fi_pingpong not found (libfabric-bin)" >&2; exit 1; }
[[ $build = /* ]] || build=$PWD/$build
if ((do_build)); then
  cmake --build "$build" -j1 --target iwarpx-fi >/dev/null || exit 1
fi
export FI_PROVIDER_PATH=$build/prov/iwarpx/src/ofi
unset FI_PROVIDER
work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # bench_iwarpx_mode (this script runs from the repository root)

# run PROV SIZE OUT: one fi_pingpong pair; appends "size usec MB/s" lines to OUT. PROV
# iwarpx+MODE is iwarpx under a send-rule mode of bench_lib.sh.
run() {
  local prov=$1 size=$2 out=$3 port srv mode_env=()
  if [[ $prov == iwarpx+* ]]; then
    mapfile -t mode_env < <(bench_iwarpx_mode "${prov#iwarpx+}")
    prov=iwarpx
  fi
  local env_args=(env -u FI_IWARPX_SEND_RULES -u FI_IWARPX_RC_THRESHOLD_MSGS -u FI_IWARPX_MAX_RC
                  -u FI_IWARPX_LLP -u FI_IWARPX_MPA_CRC -u FI_IWARPX_DGRAM_CRC "${mode_env[@]}")
  ((${#mode_env[@]})) || env_args=(env)
  local n=$iters
  if ((budget > 0 && budget / size < n)); then
    n=$((budget / size > 100 ? budget / size : 100))
  fi
  port=$(free_port)
  "${env_args[@]}" timeout 120 "$pingpong" -p "$prov" -e "$ep" -I "$n" -S "$size" -B "$port" >/dev/null 2>&1 &
  srv=$!
  pids+=("$srv")
  for _ in $(seq 100); do
    ss -H -ltn "sport = :$port" | grep -q LISTEN && break
    sleep 0.1
  done
  "${env_args[@]}" timeout 120 "$pingpong" -p "$prov" -e "$ep" -I "$n" -S "$size" -P "$port" 127.0.0.1 2>&1 |
    awk -v s="$size" -v r="$round" '$1 ~ /^[0-9]/ && $3 ~ /^=/ { print s, $7, $6, r }' >>"$out"
  wait "$srv" 2>/dev/null
}

IFS=, read -ra size_list <<<"$sizes"
IFS=, read -ra anchor_list <<<"$anchors"
for p in "$subject" "${anchor_list[@]}"; do
  if [[ $p == iwarpx+* ]] && ! bench_iwarpx_mode "${p#iwarpx+}" >/dev/null; then
    echo "bench_pingpong.sh: unknown iwarpx mode in $p (ud, hybrid, rc, tcp, sctp)" >&2
    exit 2
  fi
done
file_of() { tr ';' '_' <<<"$1"; }
subj_file=$work/subject.$(file_of "$subject")
for ((r = 0; r < repeat; ++r)); do
  round=$r  # run() tags its lines with it
  for s in "${size_list[@]}"; do
    for a in "${anchor_list[@]}"; do run "$a" "$s" "$work/$(file_of "$a")"; done
    run "$subject" "$s" "$subj_file"
  done
done

median() {  # median of column $3 (2: usec, 3: MB/s) for size $2 in file $1
  awk -v s="$2" -v c="$3" '$1 == s { print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n/a"; exit }
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "# $cmdline"
budget_note=
((budget > 0)) && budget_note=" (at most $(numfmt --to=iec "$budget")B per size)"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, fi_pingpong -e $ep -I $iters$budget_note, median of $repeat"
echo
head="| size (B) |"
rule="|---:|"
for a in "${anchor_list[@]}"; do head+=" $a (µs) |"; rule+="---:|"; done
head+=" $subject (µs) |"
rule+="---:|"
for a in "${anchor_list[@]}"; do head+=" $subject/$a |"; rule+="---:|"; done
head+=" $subject MB/s |"
rule+="---:|"
echo "$head"
echo "$rule"
for s in "${size_list[@]}"; do
  i=$(median "$subj_file" "$s" 2)
  line="| $s |"
  for a in "${anchor_list[@]}"; do line+=" $(median "$work/$(file_of "$a")" "$s" 2) |"; done
  line+=" $i |"
  for a in "${anchor_list[@]}"; do line+=" $(ratio "$i" "$(median "$work/$(file_of "$a")" "$s" 2)") |"; done
  line+=" $(median "$subj_file" "$s" 3) |"
  echo "$line"
done
if ((${#anchor_list[@]})) && ((repeat > 1)); then
  echo
  echo "# paired: $subject/anchor latency within each round, median (min-max)"
  for s in "${size_list[@]}"; do
    line="#   $s B:"
    for a in "${anchor_list[@]}"; do
      line+=" $a $(bench_paired "$subj_file" "$work/$(file_of "$a")" "$s" 2 4);"
    done
    echo "${line%;}"
  done
fi
