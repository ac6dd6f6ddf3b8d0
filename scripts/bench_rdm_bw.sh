#!/usr/bin/env bash
# scripts/bench_rdm_bw.sh [options] - streaming tagged bandwidth of reliable datagram
# endpoints (FI_EP_RDM) in one run on loopback: iwarpx against libfabric's
# "tcp;ofi_rxm" and "udp;ofi_rxd", all driven by the same program
# (fabtests_ext/bench/tagged_bw: osu_bw style, W fi_tsend per iteration into W
# posted fi_trecv, then an ACK). Prints a markdown table of the median MB/s
# (10^6 B/s) per size over the repeats and the ratios iwarpx/anchor (above 1:
# iwarpx is faster; issue 4 wants >= 1.0 against rxm and >= 10 against rxd at 1 MiB).
#
#   --build DIR      build tree (default build); builds tagged_bw and iwarpx-fi first
#   --no-build       use DIR's tagged_bw and libiwarpx-fi.so as they are
#   --anchors LIST   comma-separated providers to compare with
#                    (default "tcp;ofi_rxm,udp;ofi_rxd"; "none": iwarpx alone); iwarpx+MODE
#                    is iwarpx with a mode of bench_lib.sh (ud, hybrid, rc, fp, rdma, ...), so
#                    --anchors "iwarpx+ud,iwarpx+rc,tcp;ofi_rxm" with FI_IWARPX_SEND_RULES set
#                    for the iwarpx column compares channel choices in one run
#   --sizes LIST     message sizes (default 8,1k,16k,64k,1m,4m; see tagged_bw --help)
#   --repeat N       runs per provider, alternating, median reported (default 3); with
#                    N > 1 the ratios within each round follow the table as comment lines
#                    ("# paired: ..."), median (min-max) over the rounds, and so do those
#                    of every iwarpx+MODE anchor against the other providers
#   --min-time SEC / --iters N / --warmup N / -w N   passed to tagged_bw
#   --timeout SEC    tagged_bw's bound on every single wait (default here 120: one
#                    window of 64 x 4 MiB takes seconds through udp;ofi_rxd)
#   --no-iwarpx      skip iwarpx (its columns read "n/a")
#   --strict         exit 1 if any run failed (a failed run's numbers read "n/a")
#   --keep-logs      keep the server/client logs (path printed)
#   --phase-probe    before and after every run, ask fabtests_ext/bench/mem_probe whether the
#                    two CPUs shared a path to memory (this host's fast phase) or were apart
#                    (its slow one; docs/PERFORMANCE.md "The host's two speeds are where its
#                    two vCPUs sit"), and print the paired ratios again over the rounds whose
#                    probes all gave one verdict ("# paired, CPUs shared: ..." / "..., CPUs
#                    apart: ..."; ~1.5 s per probe)
#   --corrupt N      testing: the clients damage message N (tagged_bw --corrupt),
#                    so every run must fail with "data check failed"
#
# Every server runs in the background under `timeout` with its PID recorded,
# binds port 0 on 127.0.0.1 and reports its port through a file; clients run
# under `timeout`. On exit only the PIDs this script started are stopped.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=build
do_build=1
anchors="tcp;ofi_rxm,udp;ofi_rxd"
sizes=8,1k,16k,64k,1m,4m
repeat=3
run_iwarpx=1
strict=0
keep_logs=0
phase_probe=0
prog_args=()
client_args=()
timeout_s=120
cmdline="${IWARPX_BENCH_NAME:-scripts/bench_rdm_bw.sh} $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --anchors) anchors=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --min-time|--iters|--warmup|-w) prog_args+=("$1" "$2"); shift ;;
    --timeout) timeout_s=$2; shift ;;
    --no-iwarpx) run_iwarpx=0 ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    --phase-probe) phase_probe=1 ;;
    --corrupt) client_args+=(--corrupt "$2"); shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_rdm_bw.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "bench_rdm_bw.sh: bad --repeat $repeat" >&2; exit 2; }
prog_args+=(--timeout "$timeout_s")

[[ $build = /* ]] || build=$root/$build
if ((do_build)); then
  targets=(tagged_bw)
  ((phase_probe)) && targets+=(mem_probe)
  ((run_iwarpx)) && targets+=(iwarpx-fi)
  cmake --build "$build" -j1 --target "${targets[@]}" >&2 ||
    { echo "bench_rdm_bw.sh: build failed" >&2; exit 1; }
fi
prog=$build/fabtests_ext/bench/tagged_bw
iwarpx_dir=$build/prov/iwarpx/src/ofi
[[ -x $prog ]] || { echo "bench_rdm_bw.sh: $prog missing (build it first)" >&2; exit 1; }
probe=$build/fabtests_ext/bench/mem_probe
if ((phase_probe)) && [[ ! -x $probe ]]; then
  echo "bench_rdm_bw.sh: $probe missing (build it first)" >&2
  exit 1
fi

# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # the scripts run from the repository root (cd above)
bench_work_start bench_rdm_bw

failures=0
runs=0
# run PROV NAME: one server + client pair over all sizes; appends the client's
# "size MB/s round" lines to $work/data/NAME. Returns non-zero on any failure.
run() {
  runs=$((runs + 1))
  local prov=$1 name=$2 mode_env
  local env_args=(env -u FI_PROVIDER -u FI_PROVIDER_PATH)
  if [[ $prov == iwarpx+* ]]; then  # an iwarpx send-rule mode (bench_lib.sh)
    mapfile -t mode_env < <(bench_iwarpx_mode "${prov#iwarpx+}")
    env_args+=(-u FI_IWARPX_SEND_RULES -u FI_IWARPX_RC_THRESHOLD_MSGS -u FI_IWARPX_MAX_RC
               -u FI_IWARPX_MPA_CRC -u FI_IWARPX_DGRAM_CRC "${mode_env[@]}")
    prov=iwarpx
  fi
  [[ $prov = iwarpx ]] && env_args+=(FI_PROVIDER_PATH="$iwarpx_dir")
  local log=$work/logs/$runs.$name
  pair_server=("${env_args[@]}" "$prog" -p "$prov" --sizes "$sizes" "${prog_args[@]}")
  pair_client=("${env_args[@]}" "$prog" -p "$prov" --sizes "$sizes" "${prog_args[@]}"
               "${client_args[@]}")
  ((phase_probe)) && probe_phase
  bench_pair "$prov" "$log" || return 1
  awk -F, -v r="$round" 'NR > 1 { print $4, $6, r }' "$log.client.out" >>"$work/data/$name"
  ((phase_probe)) && probe_phase
  return 0
}
# probe_phase: appends "ROUND VERDICT" to $work/phase (outside data/, whose files hold sizes);
# run() probes before and after each run, so a phase that changed during it shows.
probe_phase() {
  echo "$round $(timeout 30 "$probe" | awk '{ print $NF }')" >>"$work/phase"
}

anchor_list=()
[[ $anchors != none ]] && IFS=, read -ra anchor_list <<<"$anchors"
for a in "${anchor_list[@]}"; do
  if [[ $a == iwarpx+* ]] && ! bench_iwarpx_mode "${a#iwarpx+}" >/dev/null; then
    echo "bench_rdm_bw.sh: unknown iwarpx mode in $a (see bench_iwarpx_mode in bench_lib.sh)" >&2
    exit 2
  fi
done
file_of() { tr ';' '_' <<<"$1"; }
for ((r = 0; r < repeat; ++r)); do
  round=$r  # run() tags its lines with it
  for a in "${anchor_list[@]}"; do
    run "$a" "$(file_of "$a")" || failures=$((failures + 1))
  done
  if ((run_iwarpx)); then
    run iwarpx iwarpx || failures=$((failures + 1))
  fi
done

median() {  # median MB/s for size $2 in file $1
  [[ -f $1 ]] || { echo n/a; return; }
  awk -v s="$2" '$1 == s { print $2 }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n/a"; exit }
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
# The sizes as the program reports them (bytes), from any run that worked.
size_list=$(cat "$work"/data/* 2>/dev/null | awk '{ print $1 }' | sort -gu)

echo "# $cmdline"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, tagged_bw ${prog_args[*]} (unless given: -w 64, --min-time 0.2), median of $repeat"
echo
head="| size (B) |"
rule="|---:|"
for a in "${anchor_list[@]}"; do head+=" $a MB/s |"; rule+="---:|"; done
head+=" iwarpx MB/s |"
rule+="---:|"
for a in "${anchor_list[@]}"; do head+=" iwarpx/$a |"; rule+="---:|"; done
echo "$head"
echo "$rule"
for s in $size_list; do
  i=$(median "$work/data/iwarpx" "$s")
  line="| $s |"
  for a in "${anchor_list[@]}"; do line+=" $(median "$work/data/$(file_of "$a")" "$s") |"; done
  line+=" $i |"
  for a in "${anchor_list[@]}"; do line+=" $(ratio "$i" "$(median "$work/data/$(file_of "$a")" "$s")") |"; done
  echo "$line"
done
# print_paired DIR LABEL: the paired lines over the data files in DIR (iwarpx against every
# anchor, then every iwarpx+MODE anchor against the other providers).
print_paired() {
  local dir=$1 label=$2 s a m line
  if ((${#anchor_list[@]})) && ((run_iwarpx)); then
    echo
    echo "# paired$label: iwarpx/anchor within each round, median (min-max)"
    for s in $size_list; do
      line="#   $s B:"
      for a in "${anchor_list[@]}"; do
        line+=" $a $(bench_paired "$dir/iwarpx" "$dir/$(file_of "$a")" "$s" 2 3);"
      done
      echo "${line%;}"
    done
  fi
  # An iwarpx mode given as an anchor against the other providers, within each round too.
  for m in "${anchor_list[@]}"; do
    [[ $m == iwarpx+* ]] || continue
    for s in $size_list; do
      line="#   $s B, $m:"
      for a in "${anchor_list[@]}"; do
        [[ $a == iwarpx* ]] && continue
        line+=" $a $(bench_paired "$dir/$(file_of "$m")" "$dir/$(file_of "$a")" "$s" 2 3);"
      done
      [[ $line == *\;* ]] && echo "${line%;}"
    done
  done
}
if ((repeat > 1)); then
  print_paired "$work/data" ""
  if ((phase_probe)) && [[ -f $work/phase ]]; then
    # A round's verdict: its runs' one verdict, or "mixed".
    awk '{ if (!($1 in v)) v[$1] = $2; else if (v[$1] != $2) v[$1] = "mixed" }
      END { for (r in v) print r, v[r] }' "$work/phase" >"$work/round_verdicts"
    echo
    echo "# phase (mem_probe before and after every run): rounds $(awk '{ n[$2]++ } END {
      printf "shared %d, apart %d, mixed %d", n["shared"], n["apart"], n["mixed"] }' \
      "$work/round_verdicts")"
    for verdict in shared apart; do
      mkdir -p "$work/$verdict"
      for f in "$work"/data/*; do
        awk -v want="$verdict" 'FNR == NR { if ($2 == want) keep[$1] = 1; next } ($3 in keep)' \
          "$work/round_verdicts" "$f" >"$work/$verdict/${f##*/}"
      done
      print_paired "$work/$verdict" ", CPUs $verdict"
    done
  fi
fi
if ((failures)); then
  echo
  echo "# $failures run(s) failed (see stderr)"
  ((strict)) && exit 1
fi
exit 0
