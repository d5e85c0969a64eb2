#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS (default 60) on a
# temporary copy of its seed corpus, so the committed corpus in fuzz/corpus never grows.
#
#   scripts/fuzz.sh [SECONDS]
#
# Prints the executions per target. Crash, hang (over 10 s per input) and out-of-memory inputs go
# to build-fuzz/crashes/<target>-*, each run's log to build-fuzz/fuzz-logs/<target>.log; the script
# exits non-zero if any target failed. Set OXINFER_FUZZ_BUILD to use another build folder.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${OXINFER_FUZZ_BUILD:-$root/build-fuzz}
targets=(safetensors gguf torch_zip)

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
  -DOXINFER_FUZZ=ON -DOXINFER_BUILD_APP=OFF -DOXINFER_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/crashes" "$build/fuzz-logs"

status=0
summary=()
for target in "${targets[@]}"; do
  corpus="$work/$target"
  mkdir "$corpus"
  cp "$root/fuzz/corpus/$target/"* "$corpus/"
  log="$build/fuzz-logs/$target.log"
  echo "fuzz_$target: ${seconds} s ..."
  result=ok
  if ! "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$target-" "$corpus" >"$log" 2>&1; then
    result=FAILED
    status=1
    tail -n 60 "$log"
  fi
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  summary+=("$(printf '%-12s %12s executions %8s exec/s  %s' "$target" "${executions:-?}" "${rate:-?}" "$result")")
done

printf '%s\n' "${summary[@]}"
if [[ $status -ne 0 ]]; then
  echo "fuzzing found problems: inputs in $build/crashes, logs in $build/fuzz-logs" >&2
fi
exit $status
