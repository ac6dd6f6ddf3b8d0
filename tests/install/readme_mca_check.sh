#!/bin/bash
# Usage: readme_mca_check.sh <README.md> <Open MPI component dir> <build mca dir>
# The README's "MCA parameters" table (between <!-- mca-params:begin/end -->) against
# ompi_info: the same parameter names for btl iwarpx and osc iwarpx, in any order, and for
# each the default ompi_info prints (`--parsable` ":value:" lines; "(empty)" in the README
# stands for an empty value). Fails on a missing, extra or re-defaulted parameter.
set -euo pipefail
readme=$1
export OMPI_MCA_mca_base_component_path="$2:$3"
for f in "$3/mca_btl_iwarpx.so" "$3/mca_osc_iwarpx.so"; do
  [ -f "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
ompi=$(for c in btl osc; do
  ompi_info --param "$c" iwarpx --level 9 --parsable
done | sed -n 's/^mca:[a-z]*:iwarpx:param:\([a-z0-9_]*\):value:\(.*\)$/\1 \2/p' | sed 's/ $//' | sort)
[ -n "$ompi" ] || { echo "FAIL: ompi_info lists no btl/osc iwarpx parameter"; exit 1; }
# shellcheck disable=SC2016 # the backquotes are markdown, not shell
table=$(sed -n '/<!-- mca-params:begin -->/,/<!-- mca-params:end -->/p' "$readme" |
  sed -n 's/^| `\([a-z0-9_]*\)` | \(`\([^`]*\)`\|(empty)\) |.*/\1 \3/p' | sed 's/ $//' | sort)
[ -n "$table" ] || { echo "FAIL: no parameter table between the mca-params markers in $readme"; exit 1; }
if [ "$table" = "$ompi" ]; then
  echo "PASS: the README lists all $(wc -l <<<"$ompi") btl/osc iwarpx parameters with ompi_info's defaults"
  exit 0
fi
echo "FAIL: README table (<) and ompi_info (>) differ:"
diff <(echo "$table") <(echo "$ompi") || true
exit 1
