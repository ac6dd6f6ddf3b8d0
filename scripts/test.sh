#!/usr/bin/env bash
# scripts/test.sh - every test of the project, in stages, each bounded in time:
#   1. main build (build/): unit, functional, wire-check (tshark) and MCA tests (ctest)
#   2. ASan+UBSan build (build-asan/): the unit tests again under the sanitizers
#   3. libFuzzer build with clang (build-fuzz/): each fuzzer for IWARPX_FUZZ_SECONDS (default 20)
#   4. lint: clang-format and clang-tidy clean, layer dependencies point down only
# Prints one "N passed, N failed" line at the end; exits non-zero if anything failed.
# Run ./autogen.sh first (the README's test command does).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
jobs=$(nproc)
fuzz_seconds=${IWARPX_FUZZ_SECONDS:-20}
total_pass=0
total_fail=0
total_skip=0
failed_stages=()
failed_tests=() # "stage: test name", repeated at the end (CI logs keep only the tail)
excerpts=$(mktemp) # the head and tail of each failed test's output, also repeated at the end
trap 'rm -f "$excerpts"' EXIT
stage_times=()  # "stage Ns": the whole command must stay under 30 minutes on 2 cores

# timed STAGE START: records how long STAGE took since START (a $SECONDS value).
timed() {
  stage_times+=("$1 $((SECONDS - $2))s")
}

# run_ctest STAGE BUILD_DIR [ctest args...]: runs ctest, adds its counts to the totals.
run_ctest() {
  local stage=$1 dir=$2 start=$SECONDS
  shift 2
  local log
  log=$(mktemp)
  echo "=== [$stage] ctest $*"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log"
  local line pass fail total
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1)
  if [[ -z $line ]]; then
    echo "=== [$stage] ctest ran no test or did not finish" >&2
    total_fail=$((total_fail + 1))
    failed_stages+=("$stage")
  else
    fail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
    skip=$(grep -cE "\*\*\*(Skipped|Not Run)" "$log" || true)
    pass=$((total - fail - skip))
    total_skip=$((total_skip + skip))
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    ((fail)) && failed_stages+=("$stage")
    local t
    while IFS= read -r t; do
      [[ -n $t ]] && failed_tests+=("$stage: $t")
    done < <(sed -n '/The following tests FAILED:/,/^$/p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ' |
      sed -E 's/^[[:space:]]+//')
    ((total == 0)) && { failed_stages+=("$stage (no tests)"); total_fail=$((total_fail + 1)); }
    ((fail)) && failure_excerpts "$stage" "$log" >>"$excerpts"
  fi
  rm -f "$log"
  timed "$stage" "$start"
}

# failure_excerpts STAGE LOG: for at most 3 failed tests of a ctest log (--output-on-failure), the
# first 30 and last 10 lines of the output ctest printed under the test's result line.
failure_excerpts() {
  awk -v stage="$1" '
    function flush() {
      if (name == "" || shown >= 3) { name = ""; return }
      shown++
      printf "--- %s: %s (%d lines of output; first 30, last 10)\n", stage, name, n
      for (i = 1; i <= n; i++) if (i <= 30 || i > n - 10) print "    " buf[i]; else if (i == 31) print "    ..."
      name = ""
    }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / || /^ *Start +[0-9]+: / || /tests passed, / {
      flush()
      if ($0 ~ /Test +#/ && $0 !~ /Passed|Skipped|Not Run/) { name = $0; sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", name); sub(/ +[.]+.*/, "", name); n = 0 }
      next
    }
    name != "" { buf[++n] = $0 }
    END { flush() }' "$2"
}

# stage STAGE CMD...: a non-ctest step that counts as one test.
stage() {
  local name=$1 start=$SECONDS
  shift
  echo "=== [$name] $*"
  if "$@"; then
    total_pass=$((total_pass + 1))
  else
    total_fail=$((total_fail + 1))
    failed_stages+=("$name")
  fi
  timed "$name" "$start"
}

configure_and_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null || return 1
  cmake --build "$dir" -j "$jobs"
}

# 1. Main build.
stage build configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
run_ctest main build --timeout 600

# 2. Sanitizers over the unit tests (only they are built there).
stage build-asan configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DIWARPX_SANITIZE=ON \
  -DIWARPX_BUILD_MCA=OFF -DIWARPX_BUILD_FUNCTIONAL=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest asan build-asan -L unit --timeout 600

# 3. Bounded fuzz runs.
stage build-fuzz configure_and_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DIWARPX_FUZZ=ON \
  -DIWARPX_FUZZ_SECONDS="$fuzz_seconds"
run_ctest fuzz build-fuzz -L fuzz

# 4. Lint.
stage lint scripts/lint.sh build

echo
echo "stage times: ${stage_times[*]/%/,} total $((SECONDS / 60))m$((SECONDS % 60))s"
if ((${#failed_stages[@]})); then
  echo "failed stages: ${failed_stages[*]}"
fi
if ((${#failed_tests[@]})); then
  echo "failed tests (their output is above, under the stage's ctest run):"
  printf '  %s\n' "${failed_tests[@]}"
  cat "$excerpts"
fi
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
((total_fail == 0))
