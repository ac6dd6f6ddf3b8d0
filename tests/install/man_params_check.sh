#!/bin/bash
# Usage: man_params_check.sh <provider build dir> <docs/man/fi_iwarpx.7> [<project version>]
# fi_iwarpx(7) against the provider itself:
#   - every FI_IWARPX_* variable `fi_info -e` lists (the provider's fi_param_define calls) has
#     a ".B FI_IWARPX_..." entry under RUNTIME PARAMETERS, and that section documents no
#     variable the provider does not define (a renamed parameter cannot leave a stale entry);
#   - the page is warning-free roff: groff -man -ww -z prints nothing and
#     `MANWIDTH=80 man -l` writes nothing to stderr;
#   - the page's defaults match the "(default: ...)" the provider's own help prints;
#   - its .TH line names the project version (when given).
set -euo pipefail
export FI_PROVIDER_PATH=$1
page=$2
version=${3:-}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if [ -n "$version" ]; then
  grep -q "^\.TH fi_iwarpx 7 [0-9-]* \"iwarpx $version\"" "$page" ||
    bad "the .TH line of $page does not say iwarpx $version: $(grep '^\.TH' "$page")"
fi

[ -f "$FI_PROVIDER_PATH/libiwarpx-fi.so" ] || { echo "FAIL: $FI_PROVIDER_PATH/libiwarpx-fi.so not built"; exit 1; }
# Printable ASCII only: other providers' help can carry stray bytes that make grep say "binary".
env_out=$(fi_info -e 2>&1 | tr -cd '\11\12\40-\176') ||
  { echo "$env_out"; echo "FAIL: fi_info -e failed"; exit 1; }
defined=$(echo "$env_out" | grep -oE '^# FI_IWARPX_[A-Z0-9_]+' | sed 's/^# //' | sort -u)
[ -n "$defined" ] || { echo "$env_out" | head; echo "FAIL: fi_info -e lists no FI_IWARPX_ variable"; exit 1; }

# The RUNTIME PARAMETERS section: from its .SH to the next .SH.
section=$(sed -n '/^\.SH RUNTIME PARAMETERS/,/^\.SH /p' "$page")
documented=$(echo "$section" | sed -n 's/^\.B \(FI_IWARPX_[A-Z0-9_]*\)$/\1/p' | sort -u)

for v in $defined; do
  grep -qx "$v" <<<"$documented" || bad "$v (fi_info -e) is not documented in $page"
done
for v in $documented; do
  grep -qx "$v" <<<"$defined" || bad "$page documents $v, which the provider does not define"
done

# Defaults: the provider's help ends in "(default: X)"; the page's entry must say the same.
# (The awk programs read all their input: an early exit would SIGPIPE the writer, and
# pipefail would end the script without a word.)
for v in $defined; do
  want=$(awk -v v="# $v:" '
    index($0, v) == 1 { on = 1 } on && /^$/ { on = 0 } on { text = text " " $0 }
    END { if (match(text, /\(default: [^)]*\)/)) print substr(text, RSTART, RLENGTH) }' <<<"$env_out")
  [ -n "$want" ] || continue
  got=$(awk -v v=".B $v" '
    $0 == v { on = 1; next } on && /^\.(TP|PP|SH)/ { on = 0 } on { text = text " " $0 }
    END { if (match(text, /\(default: [^)]*\)/)) print substr(text, RSTART, RLENGTH) }' <<<"$section")
  [ "$got" = "$want" ] || bad "$v: the page says '${got:-no default}', the provider '$want'"
done

warn=$(groff -man -ww -z "$page" 2>&1) || true
[ -z "$warn" ] || bad "groff -man -ww -z: $warn"
warn=$(MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) || bad "man -l $page failed"
[ -z "$warn" ] || bad "man -l $page: $warn"

n=$(echo "$defined" | wc -w)
[ $fail -eq 0 ] && echo "PASS: all $n FI_IWARPX_* parameters documented with their defaults; the page renders cleanly"
exit $fail
