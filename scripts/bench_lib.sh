# shellcheck shell=bash
# scripts/bench_lib.sh - sourced by the benchmark scripts (bench_msg.sh, bench_rdm_bw.sh,
# bench_btl.sh, bench_osc.sh, bench_scale.sh): the per-run work directory, the processes a
# script started, server + client pairs (bench_pair), the MPI benchmarks' start (bench_mpi_setup),
# mpirun runs (bench_mpirun) and the
# medians / ratios / spreads of the tables.
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

# bench_mpi_setup SCRIPT PROG MCA_SO [TARGET...]: the MPI benchmarks' common start (bench_btl.sh,
# bench_osc.sh). With do_build=1 builds PROG and, when run_iwarpx=1, the TARGETs; sets prog
# ($build/bench/mpi/PROG), mca_dir, fi_dir, mpirun (${MPIRUN:-mpirun}) and ompi_dir (Open MPI's
# component directory); checks that PROG and, with run_iwarpx=1, MCA_SO and the provider exist;
# unsets every OMPI_MCA_* variable so only the command line decides. Exits 1 with a message
# naming SCRIPT on any failure. Reads $build, $do_build, $run_iwarpx.
bench_mpi_setup() {
  local script=$1 name=$2 mca_so=$3 f v
  shift 3
  if ((${do_build:-1})); then
    local targets=("$name")
    ((${run_iwarpx:-1})) && targets+=("$@")
    cmake --build "${build:?}" -j1 --target "${targets[@]}" >&2 ||
      { echo "$script: build failed" >&2; exit 1; }
  fi
  prog=$build/bench/mpi/$name
  mca_dir=$build/mca
  fi_dir=$build/prov/iwarpx/src/ofi
  # shellcheck disable=SC2034 # the callers' mpirun command
  mpirun=${MPIRUN:-mpirun}
  [[ -x $prog ]] || { echo "$script: $prog missing (build it first)" >&2; exit 1; }
  if ((${run_iwarpx:-1})); then
    for f in "$mca_dir/$mca_so" "$fi_dir/libiwarpx-fi.so"; do
      [[ -f $f ]] || { echo "$script: $f missing (build it first)" >&2; exit 1; }
    done
  fi
  ompi_dir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
  [[ -d $ompi_dir ]] || { echo "$script: ompi_info gives no pkglibdir" >&2; exit 1; }
  for v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
}

# bench_show_cmd ARGS...: the command as one line a shell reads back (quotes only where needed,
# single quotes when the argument has none of its own).
bench_show_cmd() {
  local a out=""
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then out+="$a "
    elif [[ $a != *"'"* ]]; then out+="'$a' "
    else out+="$(printf '%q' "$a") "; fi
  done
  echo "${out% }"
}

# Data files hold lines "KEY... VALUE" (e.g. "latency 8 3.14" or "put_bw lock 1048576 812.5").
# bench_values FILE KEY: the values of the lines whose fields before the last equal KEY
# (fields separated by single spaces), sorted numerically.
bench_values() {
  [[ -f $1 ]] || return 0
  awk -v k="$2" '{ v = $NF; $NF = ""; sub(/ $/, ""); if ($0 == k) print v }' "$1" | sort -g
}

# bench_median FILE KEY: the median of those values ("n/a" if none); no decimals from 100,
# 2 from 1, 4 below 1 (a few bytes per millisecond must not read 0.00).
bench_median() {
  bench_values "$1" "$2" | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "n/a"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf (m >= 100 ? "%.0f\n" : (m >= 1 ? "%.2f\n" : "%.4f\n")), m
    }'
}

# bench_ratio A B: A / B with 2 decimals, "n/a" if either is n/a or B is 0.
bench_ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# bench_spread FILE KEY WHAT UNIT: "WHAT: min X, max Y UNIT over N run(s)", nothing if no data.
bench_spread() {
  bench_values "$1" "$2" | awk -v what="$3" -v unit="$4" '{ v[NR] = $1 } END {
    if (NR == 0) exit
    printf "%s: min %.2f, max %.2f %s over %d run(s)\n", what, v[1], v[NR], unit, NR }'
}

# bench_paired A B SIZE VCOL RCOL: the ratio A/B of column VCOL between the lines of files
# A and B for SIZE (column 1) from the same round (column RCOL), as "median (min-max) over
# N rounds", or n/a. This host's bandwidth moves in phases of minutes (docs/PERFORMANCE.md
# "After it, on the same host"); a round's runs are seconds apart, so its ratio compares
# like with like where a ratio of two medians may not.
bench_paired() {
  [[ -f $1 && -f $2 ]] || { echo n/a; return; }
  awk -v s="$3" -v c="$4" -v r="$5" 'FNR == NR { if ($1 == s) a[$r] = $c; next }
    $1 == s && ($r in a) && $c > 0 { print a[$r] / $c }' "$1" "$2" | sort -g |
    awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "n/a"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.2f (%.2f-%.2f) over %d rounds\n", m, v[1], v[NR], NR }'
}

# bench_mpirun NAME LOG SECONDS CMD...: runs CMD (an mpirun) in the background under
# `timeout -k 10 SECONDS`, root allowed, output in LOG.out / LOG.err, its PID recorded in
# started_pids; sets cmd_NAME to the quoted command for the report. On failure prints why
# (data check, time limit, the last lines of stderr) and returns 1.
bench_mpirun() {
  local name=$1 log=$2 limit=$3 pid rc=0 why
  shift 3
  printf -v "cmd_$name" '%s' "$(bench_show_cmd "$@")"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 "$limit" "$@" >"$log.out" 2>"$log.err" &
  pid=$!
  started_pids+=("$pid")
  wait "$pid" || rc=$?
  if ((rc != 0)); then
    why=$(grep -m1 -h "data check failed" "$log.err" "$log.out")
    ((rc == 124)) && why="timed out after $limit s"
    echo "== $name: FAILED (mpirun rc=$rc)${why:+: $why}" >&2
    tail -n 8 "$log.err" | sed 's/^/   /' >&2
    return 1
  fi
}

# bench_pair NAME LOG: one server + client pair of a fabtests_ext benchmark program on
# 127.0.0.1. The caller sets the arrays pair_server (the server's command: env, program and
# options) and pair_client (the client's); bench_pair adds "-s 127.0.0.1 -B 0 --port-file
# LOG.port" to the server, which runs in the background under `timeout 900` with its PID in
# started_pids, and "-P PORT --csv 127.0.0.1" to the client (`timeout 600`). Output goes to
# LOG.{server,client}.{out,err}. Returns 1 with the reason on stderr ("== NAME: ...") if the
# server does not start listening within 10 s, either side fails, or the server outlives its
# client by 10 s; on success prints "== NAME: ok" on stderr and the client's CSV is in
# LOG.client.out.
# shellcheck disable=SC2154  # pair_server and pair_client are the caller's
bench_pair() {
  local name=$1 log=$2 port_file=$2.port spid i rc=0 src=0
  timeout 900 "${pair_server[@]}" -s 127.0.0.1 -B 0 --port-file "$port_file" \
    >"$log.server.out" 2>"$log.server.err" &
  spid=$!
  started_pids+=("$spid")
  for ((i = 0; i < 100; i++)); do
    [[ -s $port_file ]] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -s $port_file ]]; then
    echo "== $name: server did not start listening:" >&2
    tail -n 5 "$log.server.err" >&2
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    return 1
  fi
  timeout 600 "${pair_client[@]}" -P "$(cat "$port_file")" --csv 127.0.0.1 \
    >"$log.client.out" 2>"$log.client.err" || rc=$?
  for ((i = 0; i < 100; i++)); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$spid" 2>/dev/null; then
    kill "$spid" 2>/dev/null
    src=1
  fi
  wait "$spid" || src=$?
  if ((rc != 0 || src != 0)); then
    echo "== $name: FAILED (client rc=$rc, server rc=$src)" >&2
    sed 's/^/   client: /' "$log.client.err" | tail -n 5 >&2
    sed 's/^/   server: /' "$log.server.err" | tail -n 5 >&2
    return 1
  fi
  echo "== $name: ok" >&2
}

# bench_iwarpx_mode MODE: the environment of an iwarpx send-rule mode, one VAR=value per line
# (FI_PROVIDER_PATH is the caller's); returns 1 for an unknown mode.
#   ud      datagram channels only: any:ud_sr,any:ud_zcopy
#   hybrid  size<=8192:rc_sr,any:ud_sr,any:ud_zcopy with the default thresholds: a peer moves
#           to an on-demand connection after FI_IWARPX_RC_THRESHOLD_MSGS messages
#   rc      the same chain with a connection at the first message (threshold 1, MAX_RC 4096)
#   tcp     FI_EP_MSG over MPA/TCP (FI_IWARPX_LLP=tcp, the default)
#   sctp    FI_EP_MSG over SCTP, RFC 5043 (FI_IWARPX_LLP=sctp; usrsctp where the kernel has none)
#   fp      size<=2048:rc_fp,size<=8192:rc_sr,any:ud_sr,any:ud_zcopy, connection at the first
#           message: up to 2 KiB by RDMA Write into the peer's RC-FP ring, larger ones as rc
#   write   the default chain with the RDMA-write rendezvous handshake (FI_IWARPX_RNDV=write)
#   rc-write  rc with the RDMA-write rendezvous handshake
#   rdma    size<=65504:ud_sr,any:rc_rdma,any:ud_zcopy, connection at the first message: eager
#           sizes over datagrams, larger ones by a Read rendezvous over the connection (MPA/TCP)
#   rdma-nocrc  rdma with the MPA CRC negotiated off (FI_IWARPX_MPA_CRC=0): what the CRC costs
#   nocrc   the default chain with the datagram CRC32c off (FI_IWARPX_DGRAM_CRC=0): what the CRC
#           costs the default path (a measurement, not a configuration to run: docs/wire.md §3.4)
# Benchmarks take them as providers named iwarpx+MODE (bench_pingpong.sh, bench_rdm_bw.sh).
bench_iwarpx_mode() {
  case $1 in
    ud) echo "FI_IWARPX_SEND_RULES=any:ud_sr,any:ud_zcopy" ;;
    hybrid) echo "FI_IWARPX_SEND_RULES=size<=8192:rc_sr,any:ud_sr,any:ud_zcopy" ;;
    rc) printf '%s\n' "FI_IWARPX_SEND_RULES=size<=8192:rc_sr,any:ud_sr,any:ud_zcopy" \
          FI_IWARPX_RC_THRESHOLD_MSGS=1 FI_IWARPX_MAX_RC=4096 ;;
    tcp) echo "FI_IWARPX_LLP=tcp" ;;
    sctp) echo "FI_IWARPX_LLP=sctp" ;;
    fp) printf '%s\n' "FI_IWARPX_SEND_RULES=size<=2048:rc_fp,size<=8192:rc_sr,any:ud_sr,any:ud_zcopy" \
          FI_IWARPX_RC_THRESHOLD_MSGS=1 FI_IWARPX_MAX_RC=4096 FI_IWARPX_MAX_FASTPATH=4096 ;;
    write) echo "FI_IWARPX_RNDV=write" ;;
    rc-write) printf '%s\n' "FI_IWARPX_SEND_RULES=size<=8192:rc_sr,any:ud_sr,any:ud_zcopy" \
          FI_IWARPX_RC_THRESHOLD_MSGS=1 FI_IWARPX_MAX_RC=4096 FI_IWARPX_RNDV=write ;;
    nocrc) echo "FI_IWARPX_DGRAM_CRC=0" ;;
    rdma | rdma-nocrc)
      printf '%s\n' "FI_IWARPX_SEND_RULES=size<=65504:ud_sr,any:rc_rdma,any:ud_zcopy" \
        FI_IWARPX_RC_THRESHOLD_MSGS=1 FI_IWARPX_MAX_RC=4096
      if [[ $1 == rdma-nocrc ]]; then echo FI_IWARPX_MPA_CRC=0; fi
      ;;
    *) return 1 ;;
  esac
}
