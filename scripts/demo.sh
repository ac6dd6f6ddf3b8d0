#!/usr/bin/env bash
# scripts/demo.sh - the main job's demo (run ./autogen.sh first; the README's
# first command does).
#
# 1. Debian's fi_pingpong (libfabric-bin) runs over the iwarpx provider's
#    FI_EP_MSG endpoint on loopback, every payload checked (-c), all sizes.
# 2. The same traffic under a tshark capture: tshark's own iWARP dissectors
#    decode the provider's MPA Request/Reply, the RTR and every Send FPDU with
#    a good CRC32.
# 3. A complete connected iWARP exchange produced by the project's codecs
#    (MPA v2 request/reply with CRC, RTR, Send, RDMA Write, Read
#    Request/Response, atomics, Terminate), decoded by tshark frame by frame.
# 4. Debian's fi_pingpong over the FI_EP_DGRAM endpoint (datagram iWARP's UD
#    service over UDP), every payload checked, every size up to one datagram.
# 5. Datagram iWARP over UDP, decoded by the project's Lua dissector.
# 6. Debian's fi_pingpong over the FI_EP_RDM endpoint (reliable datagrams),
#    every payload checked, eager and rendezvous sizes up to 8 MiB.
# 7. An MPI job (the project's mpi_smoke, 4 ranks) over Open MPI's own mtl ofi
#    on the iwarpx RDM endpoint.
# 8. The window benchmark table: MPI one-sided Put/Get/atomics through the
#    project's osc iwarpx against Open MPI's osc pt2pt over btl tcp
#    (scripts/bench_osc.sh --quick, lock/flush synchronisation, data checked;
#    ~10 s, each mpirun bounded to 60 s).
# Needs root for the captures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IWARPX_BUILD_DIR:-build}
exchange=$build/tests/wire_check/wire_exchange
[[ -x $exchange ]] || { echo "demo: $exchange not built; run ./autogen.sh" >&2; exit 1; }
provider_dir=$build/prov/iwarpx/src/ofi
echo "== iwarpx demo: Debian's fi_pingpong over FI_PROVIDER=iwarpx, FI_EP_MSG, data checked =="
fabtests_ext/functional/fi_pingpong_check.sh "$(command -v fi_pingpong)" "$provider_dir" -S all \
  -I 100
echo
echo "== iwarpx demo: the provider's traffic decoded by tshark's iWARP dissectors =="
python3 tests/wire_check/tshark_pingpong_check.py --provider-dir "$provider_dir" --demo
echo
echo "== iwarpx demo: connected iWARP from our codecs, decoded by tshark =="
python3 tests/wire_check/tshark_wire_check.py --exchange "$exchange" --demo
echo
echo "== iwarpx demo: Debian's fi_pingpong over FI_PROVIDER=iwarpx, FI_EP_DGRAM (UDP), data checked =="
IWARPX_PP_EP=dgram fabtests_ext/functional/fi_pingpong_check.sh "$(command -v fi_pingpong)" \
  "$provider_dir" -S all -I 100
echo
echo "== iwarpx demo: datagram iWARP (docs/wire.md) decoded by tools/wireshark/iwarpx_dgram.lua =="
python3 tests/wire_check/tshark_dgram_check.py --sender "$build/tests/wire_check/dgram_sender" --demo
echo
echo "== iwarpx demo: Debian's fi_pingpong over FI_PROVIDER=iwarpx, FI_EP_RDM (reliable datagrams), data checked =="
IWARPX_PP_EP=rdm fabtests_ext/functional/fi_pingpong_check.sh "$(command -v fi_pingpong)" \
  "$provider_dir" -S all -I 20
if [[ -x $build/tests/mpi/mpi_smoke ]] && command -v mpirun >/dev/null; then
  echo
  echo "== iwarpx demo: MPI over Open MPI's mtl ofi on the iwarpx RDM endpoint, 4 ranks =="
  tests/mpi/mpi_ofi_smoke.sh "$(command -v mpirun)" "$provider_dir" "$build/tests/mpi/mpi_smoke" mtl 4
fi
if [[ -x $build/bench/mpi/osc_bench && -f $build/mca/mca_osc_iwarpx.so ]] &&
  command -v mpirun >/dev/null; then
  echo
  echo "== iwarpx demo: MPI one-sided windows, osc iwarpx vs osc pt2pt over btl tcp (quick; docs/PERFORMANCE.md has the full run) =="
  scripts/bench_osc.sh --build "$build" --no-build --quick --timeout 60 --strict
fi
