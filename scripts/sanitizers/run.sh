#!/usr/bin/env bash
# Builds hzio with AddressSanitizer and UndefinedBehaviorSanitizer (build/sanitize) and runs the C++, C
# and MPI test suites under them (ctest). Any report fails the run: UBSan halts on its first error, ASan
# on any error, LeakSanitizer on any leak outside Open MPI's libraries (lsan.supp says which and why).
# Called by scripts/bootstrap.sh test; runs alone after a bootstrap.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/sanitizers
mkdir -p build/sanitize
# keep_modules.so keeps Open MPI's plugins mapped until exit, so that LeakSanitizer names them in the
# stacks of the allocations they keep (keep_modules.c says why). Preloading a library before the ASan
# runtime needs verify_asan_link_order=0.
cc -shared -fPIC -O2 -o build/sanitize/keep_modules.so "$here/keep_modules.c"
# Set before the build too: listing a test binary's tests (gtest_discover_tests) runs it sanitized.
export LD_PRELOAD="$PWD/build/sanitize/keep_modules.so"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:verify_asan_link_order=0"
export LSAN_OPTIONS="suppressions=$PWD/$here/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHZIO_SANITIZE=address,undefined \
  -DHZIO_WITH_MPI=ON -DHZIO_BUILD_TESTS=ON -DHZIO_TEST_PYTHON="$PWD/.venv/bin/python" >/dev/null
cmake --build build/sanitize -j2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir build/sanitize -j2 --output-on-failure --timeout 900
