#!/usr/bin/env bash
# scripts/lint.sh [BUILD_DIR] - clang-format, clang-tidy and the layer check.
#   clang-format: every C/C++ file of the project must already be formatted.
#   clang-tidy:   the provider's core sources (not tests/fuzzers), with the
#                 compile commands of BUILD_DIR (default build).
#   layers:       includes between layers point down only (scripts/check_layers.py).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rc=0

mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  '*.cc' '*.h' '*.c' | grep -v '^build')
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/iwarpx-format.$$; then
  grep -E "^[^ ].*(warning|error):" /tmp/iwarpx-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/clang-format: not formatted: /'
  rc=1
else
  echo "clang-format: ${#files[@]} files clean"
fi
rm -f /tmp/iwarpx-format.$$

mapfile -t core < <(printf '%s\n' "${files[@]}" | grep -E '^prov/iwarpx/src/.*\.cc$' |
  grep -vE '_(test|fuzzer)\.cc$|/testing/')
if [[ ! -f $build/compile_commands.json ]]; then
  echo "clang-tidy: $build/compile_commands.json missing (run ./autogen.sh first)"
  rc=1
elif ((${#core[@]})); then
  tidy_out=$(printf '%s\n' "${core[@]}" |
    xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet 2>/dev/null)
  if grep -E "(warning|error):" <<<"$tidy_out"; then
    echo "clang-tidy: findings above"
    rc=1
  else
    echo "clang-tidy: ${#core[@]} files clean"
  fi
fi

python3 scripts/check_layers.py || rc=1
exit $rc
