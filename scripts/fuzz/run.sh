#!/usr/bin/env bash
# Builds every fuzz target (fuzz/*_fuzz.cpp) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer (build/fuzz), and runs each for SECONDS (default 60) from its corpus in
# fuzz/corpus/<target>, as many targets at once as there are cores. Any crash, sanitizer report, leak or
# timeout fails the run; the input that caused it is left in build/fuzz/findings/ (add it to
# fuzz/corpus/<target> once fixed, so that ctest replays it). Prints the executions per target. Called
# by scripts/bootstrap.sh test; `scripts/fuzz/run.sh 3600` runs an hour per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
targets=(idx_text block_header codec sidecar template dataset dataset_read http_answer)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHZIO_FUZZ=ON \
  -DHZIO_SANITIZE=address,undefined -DHZIO_BUILD_TESTS=OFF -DHZIO_WITH_MPI=OFF >/dev/null
cmake --build build/fuzz -j2 --target "${targets[@]/%/_fuzz}"
mkdir -p build/fuzz/findings
# One target per core at a time: each libFuzzer process runs on one thread.
at_once=$(nproc)

fuzz_one() {  # fuzz_one TARGET: runs it, leaves its log in build/fuzz/TARGET.log; fails on any finding
  local t="$1" work="build/fuzz/corpus/$1"  # new inputs libFuzzer finds go to $work, not into the repository
  mkdir -p "$work"
  "build/fuzz/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/findings/$t-" "$work" "fuzz/corpus/$t" >"build/fuzz/$t.log" 2>&1
}

declare -A pid_of
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= at_once)); do wait -n || true; done
  fuzz_one "$t" &
  pid_of[$t]=$!
done
failed=0
for t in "${targets[@]}"; do
  log="build/fuzz/$t.log"
  if ! wait "${pid_of[$t]}"; then
    tail -n 60 "$log"
    echo "fuzz target $t failed: see $log and build/fuzz/findings/" >&2
    failed=1
    continue
  fi
  echo "fuzz target $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') executions in ${seconds} s, no finding"
done
exit "$failed"
