#!/usr/bin/env bash
# Builds hzio with AddressSanitizer and UndefinedBehaviorSanitizer (build/sanitize) and runs the C++, C
# and MPI test suites under them (ctest). Any report fails the run: UBSan halts on its first error, ASan
# on any error, LeakSanitizer on any leak outside Open MPI's libraries (lsan.supp says which and why).
# Called by scripts/bootstrap.sh test; runs alone after a bootstrap.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/sanitizers
# Set before the build too: listing a test binary's tests (gtest_discover_tests) runs it sanitized.
# fast_unwind_on_malloc=0: Open MPI's libraries have no frame pointers, so only the slow unwinder gives
# their allocations stacks that lsan.supp can recognise.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$PWD/$here/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHZIO_SANITIZE=address,undefined \
  -DHZIO_WITH_MPI=ON -DHZIO_BUILD_TESTS=ON -DHZIO_TEST_PYTHON="$PWD/.venv/bin/python" >/dev/null
cmake --build build/sanitize -j2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir build/sanitize -j2 --output-on-failure --timeout 900
