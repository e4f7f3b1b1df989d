#!/usr/bin/env bash
# Runs every fuzz harness of build-fuzz for FUZZ_SECONDS each (default 20;
# FUZZ_SEED fixes libFuzzer's seed: make test uses 1, so CI repeats its runs),
# from its seed corpus (build-fuzz/corpus/<h>, regenerated) plus what earlier
# runs found (build-fuzz/found/<h>). Crashes and slow inputs are written to
# build-fuzz/artifacts/. Exit 1 if any harness failed. usage: run.sh BUILD_DIR
set -uo pipefail
build=${1:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
harnesses=${FUZZ_HARNESSES:-"json_parse json_canonical url manifest arguments frames"}
mkdir -p "$build/artifacts"
failed=()
start=$(date +%s)
for h in $harnesses; do
  mkdir -p "$build/found/$h"
  log="$build/artifacts/$h.log"
  "$build/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    ${FUZZ_SEED:+-seed=$FUZZ_SEED} -print_final_stats=1 -artifact_prefix="$build/artifacts/$h-" \
    "$build/found/$h" "$build/corpus/$h" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  if [ $rc -eq 0 ]; then
    echo "fuzz $h: ok, $runs runs in ${seconds}s, coverage $cov edges"
  else
    echo "fuzz $h: FAILED (exit $rc), see $log:"
    grep -E 'ERROR|SUMMARY|Test unit written|ALARM|deadly|abort' "$log" | head -5 | sed 's/^/  /'
    failed+=("$h")
  fi
done
echo "fuzz: $(( $(date +%s) - start )) s for $(wc -w <<<"$harnesses") harnesses"
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}"
  exit 1
fi
