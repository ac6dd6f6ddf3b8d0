# shellcheck shell=bash
# scripts/bench_all_sections.sh - sourced by scripts/bench_all.sh: what each section of the
# report runs. Every section is one existing benchmark script (no second copy of its logic);
# this file only chooses its arguments for --quick and for the full run (the sizes and
# repeats of docs/PERFORMANCE.md). Reads bench_all.sh's $build (absolute), $quick and $out.
#
#   section_title S    one line for progress and the report's heading
#   section_targets S  the build targets S needs, one per line
#   section_check S    prints why S cannot run here and returns 1 (not available: a missing
#                      tool or component, or a provider without FI_IWARPX_LLP for sctp), or
#                      returns 2 (a probe of S failed); silent and 0 when S can run
#                      (bench_all_probe=0: no probe, for --dry-run)
#   section_cmd S      the command, one argument per line (run from the repository root)
# shellcheck disable=SC2154  # build, quick and out are bench_all.sh's

# The RDM columns: both libfabric anchors and the iwarpx send-rule modes of bench_lib.sh.
bench_all_rdm_anchors="tcp;ofi_rxm,udp;ofi_rxd,iwarpx+ud,iwarpx+hybrid,iwarpx+rc"

section_title() {
  case $1 in
    dgram) echo "FI_EP_DGRAM ping-pong: iwarpx vs udp" ;;
    rdm) echo "FI_EP_RDM latency and tagged bandwidth: iwarpx (ud, hybrid, rc) vs tcp;ofi_rxm and udp;ofi_rxd" ;;
    msg) echo "FI_EP_MSG latency and RMA bandwidth: iwarpx vs tcp" ;;
    btl) echo "Open MPI point-to-point: btl iwarpx vs btl tcp" ;;
    osc) echo "Open MPI one-sided windows: osc iwarpx vs osc pt2pt" ;;
    sctp) echo "iWARP over SCTP vs over TCP: fi_pingpong -e msg, FI_IWARPX_LLP=sctp vs tcp" ;;
    scale) echo "Scalability: one RDM endpoint and N peers (memory per peer, hot-peer latency)" ;;
    floor) echo "The floor: raw kernel sockets on loopback, no libfabric (UDP round trip, one TCP stream)" ;;
  esac
}

section_targets() {
  case $1 in
    dgram|sctp) echo iwarpx-fi ;;
    rdm) printf '%s\n' iwarpx-fi tagged_bw ;;
    msg) printf '%s\n' iwarpx-fi msg_pingpong rma_bw tcp_pingpong ;;
    btl) printf '%s\n' iwarpx-fi mpi_bench mca_btl_iwarpx ;;
    osc) printf '%s\n' iwarpx-fi osc_bench mca_osc_iwarpx mca_btl_iwarpx ;;
    scale) printf '%s\n' iwarpx-fi rdm_scale ;;
    floor) echo raw_floor ;;
  esac
}

# bench_all_need FILE...: prints the first missing file and returns 1.
bench_all_need() {
  local f
  for f; do
    [[ -e $f ]] || { echo "$f missing (not built here; run without --no-build)"; return 1; }
  done
}

section_check() {
  local fi_dir=$build/prov/iwarpx/src/ofi bench=$build/fabtests_ext/bench
  [[ $1 == floor ]] && { bench_all_need "$bench/raw_floor"; return; }
  bench_all_need "$fi_dir/libiwarpx-fi.so" || return 1
  case $1 in
    dgram|rdm|sctp)
      command -v fi_pingpong >/dev/null || { echo "fi_pingpong not found (Debian libfabric-bin)"; return 1; } ;;
  esac
  case $1 in
    rdm) bench_all_need "$bench/tagged_bw" ;;
    msg) bench_all_need "$bench/msg_pingpong" "$bench/rma_bw" "$bench/tcp_pingpong" ;;
    btl|osc)
      if ! command -v mpirun >/dev/null || ! command -v ompi_info >/dev/null; then
        echo "mpirun or ompi_info not found (Debian openmpi-bin)"
        return 1
      fi
      if [[ $1 == btl ]]; then
        bench_all_need "$build/bench/mpi/mpi_bench" "$build/mca/mca_btl_iwarpx.so"
      else
        bench_all_need "$build/bench/mpi/osc_bench" "$build/mca/mca_osc_iwarpx.so"
      fi ;;
    scale) bench_all_need "$bench/rdm_scale" ;;
    sctp) section_check_sctp "$fi_dir" ;;
  esac
}

# section_check_sctp FI_DIR: the provider must define FI_IWARPX_LLP (fi_info -g lists the
# parameters a provider registered), and a probe must show it honoured: one fi_pingpong -e msg
# pair (10 x 8 B) with FI_IWARPX_LLP=sctp whose client logs "connecting to ... over sctp" at
# FI_LOG_LEVEL=info (the provider's info line, also checked by fi_pingpong_check.sh) and
# prints its timing line. A failing pair would otherwise cost bench_pingpong.sh's 120 s
# timeout for every size; a provider that ignored the parameter would be measured as TCP.
section_check_sctp() {
  local params port srv out rc=0 i
  params=$(FI_PROVIDER_PATH=$1 fi_info -g FI_IWARPX_LLP 2>/dev/null)
  if ! grep -q '^# FI_IWARPX_LLP:' <<<"$params"; then
    echo "the provider in $1 has no FI_IWARPX_LLP parameter (\`fi_info -g FI_IWARPX_LLP\` lists nothing): iWARP over SCTP (issue 8) is not in this build"
    return 1
  fi
  ((${bench_all_probe:-1})) || return 0  # --dry-run: no benchmark, not even the probe
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  FI_PROVIDER_PATH=$1 FI_IWARPX_LLP=sctp timeout 30 fi_pingpong -p iwarpx -e msg -I 10 -S 8 \
    -B "$port" >/dev/null 2>&1 &
  srv=$!
  started_pids+=("$srv")
  for ((i = 0; i < 50; i++)); do
    ss -H -ltn "sport = :$port" | grep -q LISTEN && break
    sleep 0.1
  done
  out=$(FI_PROVIDER_PATH=$1 FI_IWARPX_LLP=sctp FI_LOG_LEVEL=info FI_LOG_PROV=iwarpx timeout 30 \
    fi_pingpong -p iwarpx -e msg -I 10 -S 8 -P "$port" 127.0.0.1 2>&1) || rc=$?
  kill "$srv" 2>/dev/null
  wait "$srv" 2>/dev/null
  if ((rc != 0)) || ! grep -Eq '^ *8 +10 +=' <<<"$out"; then
    echo "probe failed: fi_pingpong -e msg -I 10 -S 8 with FI_IWARPX_LLP=sctp exited $rc: $(grep -v '^ *$' <<<"$out" | tail -n 1)"
    return 2
  fi
  if ! grep -q 'connecting to .* over sctp' <<<"$out"; then
    echo "probe failed: with FI_IWARPX_LLP=sctp the client logged no 'connecting to ... over sctp' line (FI_LOG_LEVEL=info): the run would not be SCTP"
    return 2
  fi
}

section_cmd() {
  local b=(--build "$build" --no-build)
  case $1 in
    dgram)
      printf '%s\n' scripts/bench_dgram.sh "${b[@]}" --repeat
      if ((quick)); then printf '%s\n' 1 --sizes 8,1024,8192 --iters 2000; else echo 3; fi ;;
    rdm)
      printf '%s\n' scripts/bench_rdm.sh "${b[@]}" --anchors "$bench_all_rdm_anchors" --repeat
      if ((quick)); then
        printf '%s\n' 1 --sizes 8,1024,65536 --iters 1000 --bw-sizes 8,64k,1m --bw-min-time 0.05
      else
        echo 3
      fi ;;
    msg)  # bench_msg.sh builds nothing when given --bin-dir
      printf '%s\n' scripts/bench_msg.sh --build "$build" --bin-dir "$build/fabtests_ext/bench" --strict
      ((quick)) && printf '%s\n' --sizes 8,1k,64k,1m --bw-sizes 8,64k,1m --min-time 0.05
      ;;
    btl)
      printf '%s\n' scripts/bench_btl.sh "${b[@]}" --strict --timeout 600 --repeat
      if ((quick)); then
        printf '%s\n' 1 --sizes 8,1k,64k,1m --iters 200 --budget 64m
      else
        printf '%s\n' 3 --sizes 8,1k,16k,64k,1m,4m
      fi ;;
    osc)  # writes OUT/osc_bench.md, OUT/osc_latency.png and OUT/osc_bandwidth.png itself
      printf '%s\n' scripts/bench_osc.sh "${b[@]}" --strict --out "$out"
      if ((quick)); then
        printf '%s\n' --quick --timeout 300
      else
        printf '%s\n' --repeat 3 --sizes 1,8,64,512,4k,32k,256k,1m,4m --budget 64m
      fi ;;
    sctp)  # the subject is SCTP, the anchor TCP: ratios are sctp / tcp
      printf '%s\n' scripts/bench_pingpong.sh "${b[@]}" --ep msg --subject iwarpx+sctp \
        --anchors iwarpx+tcp --repeat
      if ((quick)); then
        printf '%s\n' 1 --sizes 8,1024,65536 --iters 1000
      else
        printf '%s\n' 3 --sizes 8,64,1024,8192,65536,1048576 --iters 10000 --budget 1g
      fi ;;
    scale)  # failed runs read n/a (not --strict): the report counts them
      printf '%s\n' scripts/bench_scale.sh "${b[@]}" --modes ud,hybrid,rc,tcp-rxm,udp-rxd
      if ((quick)); then
        printf '%s\n' --peers 16,64 --repeat 1 --iters 500 --timeout 30
      else
        printf '%s\n' --peers 64,256,1024 --repeat 3 --iters 50000 --skip tcp-rxm:1024
      fi ;;
    floor)
      printf '%s\n' scripts/bench_floor.sh "${b[@]}" --strict --repeat 5
      if ((quick)); then printf '%s\n' --repeat 1 --min-time 0.05; else printf '%s\n' --anchors; fi ;;
  esac
}
