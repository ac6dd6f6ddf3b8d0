#!/bin/sh
# run_fuzzer.sh BINARY SECONDS WORK_CORPUS_DIR SEED_DIR
# Runs one libFuzzer target for a bounded time: new inputs go to WORK_CORPUS_DIR,
# the committed seeds in SEED_DIR are read but never modified. Exits non-zero on
# any crash, sanitizer report, leak or timeout that libFuzzer finds.
set -eu
bin=$1 secs=$2 work=$3 seeds=$4
[ -d "$seeds" ] || { echo "run_fuzzer: seed corpus $seeds is missing" >&2; exit 1; }
mkdir -p "$work"
exec "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work" "$seeds"
