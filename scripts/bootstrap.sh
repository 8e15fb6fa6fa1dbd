#!/usr/bin/env bash
# Sets up everything hzio needs on a fresh Debian 12 machine, then runs the demo or every test.
#   scripts/bootstrap.sh demo   system packages, .venv/ with hzio (CLI at .venv/bin/hzio), then the demo
#   scripts/bootstrap.sh test   the same setup, then the C++ (ctest), C, Fortran, Python and MPI test suites,
#                               programs built against the installed package and the wheel in a fresh venv
#                               (tests/install/), the C++, C and MPI suites again under ASan + UBSan
#                               (scripts/sanitizers/), and every fuzz target under libFuzzer for 45 s (scripts/fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-test}"

apt_packages=(build-essential cmake ninja-build pkg-config zlib1g-dev liblz4-dev libxxhash-dev libzfp-dev libgtest-dev libcurl4-openssl-dev
              libopenmpi-dev openmpi-bin python3-venv python3-dev clang-format gfortran
              clang libclang-rt-14-dev libomp-14-dev)  # clang: the libFuzzer build of scripts/fuzz/run.sh
[ "$what" = test ] && apt_packages+=(chromium)  # the viewer's browser tests (tests/python/test_viewer_browser.py)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing system packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# OpenVisusNoGui ships wheels for CPython 3.11: keep the environment on it.
python=""
for cand in python3.11 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    python="$cand"; break
  fi
done
[ -n "$python" ] || { echo "bootstrap: Python 3.11 is required (Debian 12's python3 is 3.11)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# aiohttp: the web server of `hzio serve`; matplotlib: the demo's figures and the benchmarks' plots
.venv/bin/python -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" numpy pytest pillow mpi4py aiohttp matplotlib
if [ "$what" = test ]; then
  # xxhash: the checksum tests' oracle; zarr (v3, needs Python >= 3.11) and h5py: bench/small_read_bench.py's
  # baselines; playwright: drives Debian's chromium in the viewer's tests (it never downloads a browser here);
  # xarray, dask and distributed: the xarray backend and the dask arrays (tests/python/test_xarray_dask.py);
  # h5py, netCDF4, zarr and tqdm: hzio convert and export and their progress bars (tests/python/test_convert.py);
  # lz4: bench/codec_bench.py's baseline for LZ4 alone
  .venv/bin/python -m pip install -q OpenVisusNoGui ruff mypy xxhash zarr h5py netCDF4 tqdm playwright xarray \
    "dask[array]" distributed lz4
fi

echo "== building hzio (C++ core, C API, Fortran modules, tests, Python extension) as a wheel, and installing it"
rm -rf build/wheel
.venv/bin/python -m pip wheel -q --no-build-isolation --no-deps -w build/wheel \
  -Ccmake.define.HZIO_BUILD_TESTS=ON -Ccmake.define.HZIO_WITH_MPI=ON .
wheel=$(ls build/wheel/hzio-*.whl)
.venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
build_dir=$(ls -d build/cp3*/ 2>/dev/null | head -n 1)

case "$what" in
  demo)
    # The simulation runs on 4 MPI ranks (oversubscribed on small machines) writing through hzio.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpiexec -n 4 --oversubscribe .venv/bin/python examples/demo_mpi.py
    ;;
  test)
    echo "== style: clang-format (.clang-format) and ruff (pyproject.toml); types: mypy on the installed package"
    find src include python/bindings fortran tests fuzz bench examples \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' \) \
      -print0 | xargs -0 clang-format --dry-run --Werror
    .venv/bin/ruff check python tests bench examples
    .venv/bin/python -m mypy --cache-dir build/mypy_cache -p hzio
    echo "== C++, C and Fortran tests (ctest)"
    ctest --test-dir "$build_dir" -j2 --output-on-failure --timeout 300
    echo "== the installed package: C, C++, Fortran and MPI programs built with find_package and pkg-config; the wheel"
    bash tests/install/run.sh "$build_dir" "$wheel"
    echo "== Python tests (pytest)"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
    echo "== C++, C and MPI tests under AddressSanitizer and UndefinedBehaviorSanitizer"
    bash scripts/sanitizers/run.sh
    echo "== fuzzing: every fuzz target under libFuzzer, ASan and UBSan, 45 s each"
    bash scripts/fuzz/run.sh 45
    ;;
  *)
    echo "usage: scripts/bootstrap.sh demo|test" >&2; exit 2
    ;;
esac
