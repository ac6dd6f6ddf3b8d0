#!/usr/bin/env bash
# scripts/bench_btl.sh [options] - Open MPI point-to-point latency and bandwidth of the
# project's BTL against Open MPI's own btl tcp, in one run on loopback, 2 ranks, both
# driven by the same program (bench/mpi/mpi_bench: osu_latency style ping-pong, half round
# trip in us; osu_bw style window of W nonblocking sends then an ack, MB/s = 10^6 B/s):
#   tcp:    --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo
#   iwarpx: --mca pml ob1 --mca btl self,iwarpx (mca_btl_iwarpx.so and libiwarpx-fi.so of
#           the build tree, through mca_base_component_path and FI_PROVIDER_PATH)
# The runs alternate (tcp, iwarpx, tcp, iwarpx, ...); the table gives the median per size
# over the repeats and the ratios iwarpx/tcp. Issue 6 targets: 8 B latency ratio <= 0.8,
# 1 MiB bandwidth ratio >= 1.3.
#
#   --build DIR      build tree (default build); builds mpi_bench, mca_btl_iwarpx, iwarpx-fi
#   --no-build       use DIR's programs as they are
#   --sizes LIST     message sizes (default 1:4m; see mpi_bench --help)
#   --repeat N       runs per BTL, alternating, median reported (default 3); with N > 1
#                    the ratios within each round follow as "# paired: ..." lines
#   --tests LIST     latency,bw and/or bibw (default latency,bw); bibw adds two columns
#   --iters N / --warmup N / -w N / --budget SIZE   passed to mpi_bench
#   --bind POLICY    mpirun --bind-to (default none; core pins the two ranks)
#   --timeout SEC    bound on every mpirun (default 900)
#   --no-tcp, --no-iwarpx   skip one BTL (its columns read "n/a")
#   --p2p MODES      btl_iwarpx_p2p for the iwarpx runs: datagram (default) or sctp (point-to-
#                    point over SCTP associations, with btl_iwarpx_if_include lo), or a comma
#                    list of both (datagram,sctp): one iwarpx run per mode in each round
#                    (tcp, iwarpx datagram, iwarpx sctp, tcp, ...) and per test one column
#                    per mode, each followed by its ratio against tcp ("iwarpx datagram lat
#                    (us) | ratio | iwarpx sctp lat (us) | ratio"). With one mode the
#                    columns are "iwarpx ..." as without the option.
#   --strict         exit 1 if any run failed (a failed run's numbers read "n/a")
#   --keep-logs      keep the mpirun logs (path printed)
#   --corrupt SIZE   testing: mpi_bench damages the checked data at SIZE, so every run must
#                    fail with "data check failed"
#   MPIRUN=...       mpirun to use (default: mpirun on PATH)
#
# After the table: the min and max over the runs behind the two target cells (8 B latency,
# 1 MiB bandwidth), to tell a busy machine from a real difference.
#
# Every mpirun runs in the background under `timeout` with its PID recorded, as root with
# --allow-run-as-root --oversubscribe and OOB on lo; OMPI_MCA_* variables of the caller are
# dropped so both BTLs see the same settings. On exit only the PIDs this script started are
# stopped (mpirun tears its ranks down on SIGTERM).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

build=build
do_build=1
sizes=1:4m
repeat=3
tests=latency,bw
bind=none
timeout_s=900
run_tcp=1
run_iwarpx=1
p2p=datagram
strict=0
keep_logs=0
prog_args=()
cmdline="${IWARPX_BENCH_NAME:-scripts/bench_btl.sh} $*"

while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --no-build) do_build=0 ;;
    --p2p) p2p=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --tests) tests=$2; shift ;;
    --iters|--warmup|-w|--budget|--corrupt) prog_args+=("$1" "$2"); shift ;;
    --bind) bind=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --no-tcp) run_tcp=0 ;;
    --no-iwarpx) run_iwarpx=0 ;;
    --strict) strict=1 ;;
    --keep-logs) keep_logs=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_btl.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "bench_btl.sh: bad --repeat $repeat" >&2; exit 2; }
IFS=, read -ra modes <<<"$p2p"
((${#modes[@]})) || { echo "bench_btl.sh: bad --p2p '$p2p'" >&2; exit 2; }
for m in "${modes[@]}"; do
  [[ $m == datagram || $m == sctp ]] ||
    { echo "bench_btl.sh: bad --p2p mode '$m' (datagram or sctp)" >&2; exit 2; }
done
[[ $(printf '%s\n' "${modes[@]}" | sort -u | wc -l) -eq ${#modes[@]} ]] ||
  { echo "bench_btl.sh: --p2p $p2p names a mode twice" >&2; exit 2; }
# The iwarpx runs: name (data file, mpi_bench label, "== name" lines), mode, column title.
iw_names=() iw_modes=() iw_titles=()
if ((${#modes[@]} == 1)); then
  iw_names=(iwarpx) iw_modes=("${modes[0]}") iw_titles=(iwarpx)
else
  for m in "${modes[@]}"; do iw_names+=("iwarpx_$m"); iw_modes+=("$m"); iw_titles+=("iwarpx $m"); done
fi
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { echo "bench_btl.sh: bad --timeout $timeout_s" >&2; exit 2; }

[[ $build = /* ]] || build=$root/$build
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh  # the scripts run from the repository root (cd above)
bench_mpi_setup bench_btl.sh mpi_bench mca_btl_iwarpx.so mca_btl_iwarpx iwarpx-fi
if ((run_iwarpx)) && [[ -e $ompi_dir/mca_btl_iwarpx.so ]]; then
  echo "bench_btl.sh: WARNING: $ompi_dir/mca_btl_iwarpx.so is installed and may shadow the build tree's" >&2
fi

bench_work_start bench_btl

common=(--allow-run-as-root --oversubscribe --bind-to "$bind" -np 2 --mca oob_tcp_if_include lo
        --mca pml ob1)

failures=0
runs=0
# run NAME [MODE]: one mpirun over all tests and sizes (MODE: btl_iwarpx_p2p of an iwarpx
# run); appends "test size value" lines to $work/data/NAME. Returns non-zero on any failure.
run() {
  runs=$((runs + 1))
  local name=$1 mode=${2:-} log=$work/logs/$runs.$1
  local btl_args=()
  case $name in
    tcp) btl_args=(--mca btl "self,tcp" --mca btl_tcp_if_include lo) ;;
    iwarpx*) btl_args=(--mca mca_base_component_path "$ompi_dir:$mca_dir" --mca btl "self,iwarpx"
                       -x FI_PROVIDER_PATH="$fi_dir" --mca btl_iwarpx_p2p "$mode")
             [[ $mode == sctp ]] && btl_args+=(--mca btl_iwarpx_if_include lo) ;;
  esac
  local cmd=("$mpirun" "${common[@]}" "${btl_args[@]}"
             "$prog" --csv --label "$name" --tests "$tests" --sizes "$sizes" "${prog_args[@]}")
  bench_mpirun "$name" "$log" "$timeout_s" "${cmd[@]}" || return 1
  awk -F, -v n="$name" '$1 == "mpi_bench" && $2 == n { print $3, $4, $6 }' "$log.out" \
    >>"$work/data/$name"
  # The same, per test as "size value round", for the ratios within a round (bench_paired).
  mkdir -p "$work/rounds"
  awk -F, -v n="$name" -v r="$round" -v d="$work/rounds" \
    '$1 == "mpi_bench" && $2 == n { print $4, $6, r >>(d "/" n "." $3) }' "$log.out"
  echo "== $name: ok" >&2
}

for ((r = 0; r < repeat; ++r)); do
  round=$r  # run() tags its lines with it
  if ((run_tcp)); then run tcp || failures=$((failures + 1)); fi
  if ((run_iwarpx)); then
    for i in "${!iw_names[@]}"; do run "${iw_names[i]}" "${iw_modes[i]}" || failures=$((failures + 1)); done
  fi
done

size_list=$(cat "$work"/data/* 2>/dev/null | awk '{ print $2 }' | sort -gu)
has() { [[ ,$tests, == *,$1,* ]]; }

echo "# $cmdline"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load$(uptime | sed 's/.*load average//'), mpirun --bind-to $bind, btl_iwarpx_p2p $p2p, mpi_bench --tests $tests ${prog_args[*]}, median of $repeat"
((run_tcp)) && echo "# tcp:    ${cmd_tcp:-}"
if ((run_iwarpx)); then
  for name in "${iw_names[@]}"; do
    label="$name:"
    var=cmd_$name
    printf '# %-7s %s\n' "$label" "${!var:-}"
  done
fi
if ((${#iw_names[@]} == 1)); then
  echo "# latency: half round trip (us), lower is better; bandwidth: MB/s (10^6 B/s); ratio = iwarpx / tcp"
else
  echo "# latency: half round trip (us), lower is better; bandwidth: MB/s (10^6 B/s); each ratio = the iwarpx column left of it / tcp"
fi
echo
head="| size (B) |"
rule="|---:|"
# columns TITLE: the header cells of one test (tcp, then each iwarpx mode and its ratio).
columns() {
  head+=" tcp $1 |"
  rule+="---:|"
  for title in "${iw_titles[@]}"; do head+=" $title $1 | ratio |"; rule+="---:|---:|"; done
}
has latency && columns "lat (us)"
has bw && columns "MB/s"
has bibw && columns "bibw MB/s"
echo "$head"
echo "$rule"
for s in $size_list; do
  line="| $s |"
  for t in latency bw bibw; do
    has $t || continue
    a=$(bench_median "$work/data/tcp" "$t $s")
    line+=" $a |"
    for name in "${iw_names[@]}"; do
      b=$(bench_median "$work/data/$name" "$t $s")
      line+=" $b | $(bench_ratio "$b" "$a") |"
    done
  done
  echo "$line"
done
# The spread behind the two target cells: a median of runs that disagree by 10x says the
# machine was busy, not which BTL is faster.
spreads=()
for btl in tcp "${iw_names[@]}"; do
  has latency && spreads+=("$(bench_spread "$work/data/$btl" "latency 8" "$btl latency 8 B" us)")
  has bw && spreads+=("$(bench_spread "$work/data/$btl" "bw 1048576" "$btl bw 1048576 B" MB/s)")
done
spread_line=$(printf '%s; ' "${spreads[@]}" | sed 's/^\(; \)*//; s/\(; \)*$//; s/; \(; \)*/; /g')
if [[ -n $spread_line ]]; then
  echo
  echo "# spread: $spread_line"
fi
if ((run_tcp)) && ((run_iwarpx)) && ((repeat > 1)); then
  echo "# paired: iwarpx/tcp within each round, median (min-max)"
  for t in latency bw bibw; do
    has $t || continue
    for s in $size_list; do
      line="#   $t $s B:"
      for name in "${iw_names[@]}"; do
        line+=" $name $(bench_paired "$work/rounds/$name.$t" "$work/rounds/tcp.$t" "$s" 2 3);"
      done
      echo "${line%;}"
    done
  done
fi
if ((failures)); then
  echo
  echo "# $failures of $runs run(s) failed (see stderr)"
  ((strict)) && exit 1
fi
exit 0
