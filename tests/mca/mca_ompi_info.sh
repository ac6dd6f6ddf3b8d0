#!/bin/sh
# Usage: mca_ompi_info.sh <ompi_info> <Open MPI component dir> <build mca dir>
# ompi_info must discover both iwarpx components from the build tree and list their
# parameters with help text. The component path has to come from the environment:
# `ompi_info --mca mca_base_component_path ...` is ignored for discovery.
set -eu

ompi_info=$1
ompi_dir=$2
mca_dir=$3
# shellcheck source=tests/mca/mca_common.sh
. "$(dirname "$0")/mca_common.sh"
warn_installed_copy "$ompi_dir"

for f in "$mca_dir/mca_btl_iwarpx.so" "$mca_dir/mca_osc_iwarpx.so"; do
  [ -f "$f" ] || { echo "FAIL: $f not built" >&2; exit 1; }
done

fail=0
# expect <framework> <line pattern (grep -E)> <what>
check() {
  if printf '%s\n' "$out" | grep -Eq -- "$2"; then
    echo "ok: $1: $3"
  else
    echo "FAIL: $1: $3 (no line matching /$2/)" >&2
    fail=1
  fi
}

for fw in btl osc; do
  out=$(OMPI_MCA_mca_base_component_path="$ompi_dir:$mca_dir" \
        timeout -k 5 60 "$ompi_info" --param "$fw" iwarpx --level 9 --parsable 2>&1) || {
    echo "FAIL: $ompi_info --param $fw iwarpx exited with $?:" >&2
    printf '%s\n' "$out" >&2
    exit 1
  }
  check $fw "^mca:$fw:iwarpx:version:\"component:[0-9]+\.[0-9]+\.[0-9]+\"" "component listed"
  case $fw in
    btl)
      check btl '^mca:btl:iwarpx:version:"api:3\.1\.0"' "BTL API 3.1.0"
      params="btl_iwarpx_verbose btl_iwarpx_enable btl_iwarpx_num_recvs btl_iwarpx_p2p btl_iwarpx_send_rules btl_iwarpx_mr_cache btl_iwarpx_mr_cache_max btl_iwarpx_local_registration_threshold btl_iwarpx_if_include btl_iwarpx_sctp_streams btl_iwarpx_sctp_stream_threshold btl_iwarpx_exclusivity btl_iwarpx_eager_limit btl_iwarpx_rndv_eager_limit btl_iwarpx_max_send_size btl_iwarpx_put_limit btl_iwarpx_get_limit"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_p2p:enumerator:value:0:datagram$' "p2p offers datagram"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_p2p:enumerator:value:1:sctp$' "p2p offers sctp"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_p2p:value:datagram$' "p2p defaults to datagram"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_send_rules:help:.*FI_IWARPX_SEND_RULES.*issue 5' \
        "send_rules help names the variable and issue 5"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_mr_cache:value:true$' "mr_cache defaults to true"
      check btl '^mca:btl:iwarpx:param:btl_iwarpx_sctp_streams:value:4$' "sctp_streams defaults to 4" ;;
    osc)
      check osc '^mca:osc:iwarpx:version:"api:3\.0\.0"' "OSC API 3.0.0"
      params="osc_iwarpx_verbose osc_iwarpx_priority" ;;
  esac
  for p in $params; do
    check $fw "^mca:$fw:iwarpx:param:$p:value:" "parameter $p registered"
    check $fw "^mca:$fw:iwarpx:param:$p:help:.{20,}" "parameter $p has help text"
  done
  if [ $fail -ne 0 ]; then
    echo "--- ompi_info output ($fw) ---" >&2
    printf '%s\n' "$out" | grep ":iwarpx:" >&2 || echo "(no iwarpx lines)" >&2
  fi
done

# The human-readable form the README shows, for the log.
OMPI_MCA_mca_base_component_path="$ompi_dir:$mca_dir" \
  timeout -k 5 60 "$ompi_info" --param btl iwarpx --level 9 | grep -E 'MCA btl: iwarpx' || true
OMPI_MCA_mca_base_component_path="$ompi_dir:$mca_dir" \
  timeout -k 5 60 "$ompi_info" --param osc iwarpx --level 9 | grep -E 'MCA osc: iwarpx' || true
exit $fail
