#!/usr/bin/env bash
# Tests the installed native package: installs BUILD_DIR (an hzio build, e.g. the build/cp3* that pip's
# build leaves) into a prefix, builds programs outside hzio against it, with find_package(hzio) (a CMake
# project, tests/install/CMakeLists.txt) and with pkg-config, and runs them: a C++ program, the C API
# tests, the Fortran tests, and the MPI ones on 2 ranks. With WHEEL, also checks that the wheel holds the
# Python package only, and that it installs into a fresh venv and writes and reads a dataset there.
#   tests/install/run.sh BUILD_DIR [WHEEL]
# HZIO_COMPONENTS (default "MPI;Fortran") names the components the build must have installed.
# Called by scripts/bootstrap.sh test. Work files go to build/install_test.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:?usage: tests/install/run.sh BUILD_DIR [WHEEL]}"
wheel="${2:-}"
components="${HZIO_COMPONENTS-MPI;Fortran}"
work="$PWD/build/install_test"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
has() { [[ ";$components;" == *";$1;"* ]]; }

# Both components by name: a pip build's install of everything holds the Python package only.
for component in Runtime Development; do
  cmake --install "$build" --prefix "$prefix" --component "$component" >/dev/null
done
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

echo "== find_package(hzio COMPONENTS $components)"
cmake -S tests/install -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DHZIO_COMPONENTS="$components" \
  >/dev/null
cmake --build "$work/cmake" -j2 >/dev/null
run_all() {  # run_all DIR: every program DIR has
  local dir="$1"
  "$dir/consumer" "$work/cpp"
  "$dir/c_api_test" "$work/c" | sed 's/^/C API: /'
  if has MPI; then mpiexec -n 2 "$dir/c_api_mpi_test" "$work/c_mpi" | sed 's/^/C API, MPI: /'; fi
  if has Fortran; then
    "$dir/fortran_serial_test" "$work/f_serial" | sed 's/^/Fortran: /'
    "$dir/fortran_errors_test" "$work/f_errors" | sed 's/^/Fortran errors: /'
  fi
  if has MPI && has Fortran; then
    mpiexec -n 2 "$dir/fortran_mpi_test" "$work/f_mpi" | sed 's/^/Fortran, MPI: /'
  fi
}
run_all "$work/cmake"

echo "== pkg-config"
export PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name hzio.pc)")"
pc() { pkg-config --cflags --libs "$1"; echo "-Wl,-rpath,$(pkg-config --variable=libdir "$1")"; }
bin="$work/pkg-config"
mkdir -p "$bin"
c++ -std=c++20 -O1 tests/install/consumer.cpp $(pc hzio) -o "$bin/consumer"
cc tests/c_api/c_api_test.c $(pc hzio) -o "$bin/c_api_test"
if has MPI; then mpicc tests/c_api/c_api_mpi_test.c $(pc hzio_mpi) -o "$bin/c_api_mpi_test"; fi
if has Fortran; then
  for t in fortran_serial_test fortran_errors_test; do
    gfortran -J "$bin" "tests/fortran/$t.f90" $(pc hzio_fortran) -o "$bin/$t"
  done
fi
if has MPI && has Fortran; then
  mpifort -J "$bin" tests/fortran/fortran_mpi_test.f90 $(pc hzio_mpi_fortran) -o "$bin/fortran_mpi_test"
fi
run_all "$bin"

if [ -n "$wheel" ]; then
  echo "== the wheel $(basename "$wheel")"
  python3 -m zipfile -l "$wheel" | awk 'NR > 1 {print $1}' | cut -d/ -f1 | sort -u >"$work/wheel_top"
  if grep -v -e '^hzio$' -e '^hzio-.*\.dist-info$' "$work/wheel_top" ||
     python3 -m zipfile -l "$wheel" | grep -E '\.(h|hpp|mod|pc|cmake)\b|libhzio'; then
    echo "the wheel holds more than the Python package hzio (above)" >&2
    exit 1
  fi
  python3 -m venv "$work/venv"
  "$work/venv/bin/python" -m pip install -q "$wheel"
  (cd "$work" && "$work/venv/bin/python" - <<'PY'
import numpy as np
import hzio

a = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
with hzio.create("wheel.idx", shape=a.shape, fields={"v": "float32"}, overwrite=True) as ds:
    ds.write(a, field="v")
with hzio.open("wheel.idx") as ds:
    assert np.array_equal(ds.read(), a)
print("wheel: installs into a fresh venv, writes and reads back")
PY
  )
fi
echo "install tests passed"
