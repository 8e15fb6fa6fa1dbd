"""Building and running the C, C++ and Fortran examples of the docs against hzio, for test_docs.py.

A ``Toolchain`` holds the compiler flags of a program that uses hzio, for serial and for MPI programs.
``find_toolchain()`` takes the first of these that exists (the seam to change when the native install
changes):

1. ``HZIO_DOCS_CFLAGS`` and ``HZIO_DOCS_LIBS`` (``HZIO_DOCS_MPI_LIBS`` for MPI programs,
   ``HZIO_DOCS_FFLAGS`` and ``HZIO_DOCS_MPI_FFLAGS`` for Fortran), as a build against an installed
   package would pass them;
2. pkg-config's ``hzio`` (``hzio_mpi`` for MPI programs, ``hzio_fortran`` and ``hzio_mpi_fortran`` for
   Fortran), when installed;
3. this checkout: ``include/`` and ``libhzio`` (``libhzio_mpi``, and the Fortran modules with
   ``libhzio_fortran`` and ``libhzio_mpi_fortran``, when built) of the newest build tree under ``build/``
   that has no sanitizers.

Fortran examples need hzio's Fortran modules: without them they are reported as not run.

An example with a ``main`` (C, C++) or a ``program`` (Fortran) is built as it is; any other is a fragment,
built inside ``int main() { ... }`` (or ``program example ... end program``) after its ``#include`` lines.
A program that includes ``<mpi.h>``, ``hzio_mpi.h`` or ``hzio/parallel.hpp`` (or uses the ``mpi`` module)
is built with the MPI compiler wrapper and runs under mpiexec.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUFFIX = {"c": ".c", "cpp": ".cpp", "c++": ".cpp", "cxx": ".cpp", "cc": ".cpp", "fortran": ".f90", "f90": ".f90"}
COMPILERS = {".c": ("cc", "mpicc", []), ".cpp": ("c++", "mpicxx", ["-std=c++20"]),
             ".f90": ("gfortran", "mpifort", [])}
MPI_SOURCE = re.compile(r"<mpi\.h>|hzio_mpi\.h|hzio/parallel\.hpp|^\s*use\s+mpi", re.M | re.I)


@dataclass
class Toolchain:
    """Flags for building a program against hzio, and where they came from (for messages)."""

    cflags: list[str]
    libs: list[str]
    mpi_libs: list[str]
    origin: str
    fflags: list[str] = field(default_factory=list)       # Fortran: the modules' folder and library
    mpi_fflags: list[str] = field(default_factory=list)   # the same for MPI programs (`use hzio_mpi`)


def _pkg_config(package: str) -> tuple[list[str], list[str]] | None:
    if shutil.which("pkg-config") is None:
        return None
    got = [subprocess.run(["pkg-config", flag, package], capture_output=True, text=True)
           for flag in ("--cflags", "--libs")]
    if any(g.returncode != 0 for g in got):
        return None
    return shlex.split(got[0].stdout), shlex.split(got[1].stdout)


def plain_build_trees() -> list[Path]:
    """This checkout's CMake build trees without sanitizers or fuzzing (their libraries need those flags)."""
    trees = []
    for cache in REPO.glob("build/*/CMakeCache.txt"):
        text = cache.read_text(encoding="utf-8", errors="replace")
        if re.search(r"^HZIO_SANITIZE:STRING=\S", text, re.M) or re.search(r"^HZIO_FUZZ:BOOL=ON", text, re.M):
            continue
        trees.append(cache.parent)
    return trees


def _library(tree: Path, name: str) -> Path | None:
    found = [p for p in tree.rglob(f"lib{name}.so") if "CMakeFiles" not in p.parts]
    return found[0] if found else None


def _fortran_flags(tree: Path, names: list[str]) -> list[str]:
    """Flags for the tree's hzio Fortran modules (``hzio*.mod``) and the libraries ``names``; none unless
    the modules and every library are built."""
    mods = sorted({p.parent for p in tree.rglob("hzio*.mod") if "CMakeFiles" not in p.parts})
    libs = [_library(tree, name) for name in names]
    if not mods or not all(libs):
        return []
    dirs = sorted({lib.parent for lib in libs})
    return ([f"-I{d}" for d in mods] + [flag for d in dirs for flag in (f"-L{d}", f"-Wl,-rpath,{d}")]
            + [f"-l{name}" for name in names])


def _build_tree() -> Toolchain | None:
    found = [(tree, _library(tree, "hzio")) for tree in plain_build_trees()]
    found = [(tree, lib) for tree, lib in found if lib]
    if not found or not (REPO / "include" / "hzio" / "hzio.h").exists():
        return None
    tree, lib = max(found, key=lambda f: f[1].stat().st_mtime)
    mpi_lib = _library(tree, "hzio_mpi")
    dirs = sorted({lib.parent} | ({mpi_lib.parent} if mpi_lib else set()))
    link = [flag for d in dirs for flag in (f"-L{d}", f"-Wl,-rpath,{d}")]
    mpi = ["-lhzio_mpi", "-lhzio"] if mpi_lib else ["-lhzio"]
    return Toolchain([f"-I{REPO / 'include'}"], link + ["-lhzio"], link + mpi, f"the build tree {tree}",
                     _fortran_flags(tree, ["hzio_fortran"]), _fortran_flags(tree, ["hzio_mpi_fortran", "hzio_fortran"]))


def find_toolchain() -> Toolchain | None:
    """The first way of building against hzio that exists here, or None."""
    env = os.environ.get
    if env("HZIO_DOCS_LIBS"):
        libs = shlex.split(env("HZIO_DOCS_LIBS"))
        return Toolchain(shlex.split(env("HZIO_DOCS_CFLAGS", "")), libs,
                         shlex.split(env("HZIO_DOCS_MPI_LIBS", "")) or libs, "HZIO_DOCS_* variables",
                         shlex.split(env("HZIO_DOCS_FFLAGS", "")), shlex.split(env("HZIO_DOCS_MPI_FFLAGS", "")))
    serial = _pkg_config("hzio")
    if serial:
        mpi = _pkg_config("hzio_mpi") or serial
        fortran = _pkg_config("hzio_fortran") or ([], [])
        mpi_fortran = _pkg_config("hzio_mpi_fortran") or ([], [])
        return Toolchain(serial[0] + mpi[0], serial[1], mpi[1], "pkg-config", fortran[0] + fortran[1],
                         mpi_fortran[0] + mpi_fortran[1])
    return _build_tree()


def is_mpi(source: str) -> bool:
    return bool(MPI_SOURCE.search(source))


def fortran_flags(toolchain: Toolchain, source: str) -> list[str]:
    """The Fortran flags a program needs ([] when the toolchain has none: hzio's modules are not built)."""
    return toolchain.mpi_fflags if is_mpi(source) else toolchain.fflags


def program_text(lang: str, source: str) -> str:
    """The source as a whole program: fragments wrapped in a main program."""
    if SUFFIX[lang] == ".f90":
        if re.search(r"^\s*program\s", source, re.M | re.I):
            return source
        return f"program example\n{source}end program example\n"
    if re.search(r"\bmain\s*\(", source):
        return source
    head = [ln for ln in source.splitlines() if ln.lstrip().startswith("#")]
    body = [ln for ln in source.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(head) + "\nint main(void) {\n" + "\n".join(body) + "\nreturn 0;\n}\n"


def build(toolchain: Toolchain, lang: str, source: str, workdir: Path, name: str) -> tuple[Path | None, str]:
    """Compile one example in ``workdir``; return the program (None on failure) and the compiler's text."""
    if lang not in SUFFIX:
        return None, f"the harness does not build {lang!r} blocks yet (tests/python/docs_native.py)"
    suffix = SUFFIX[lang]
    serial_cc, mpi_cc, std = COMPILERS[suffix]
    mpi = is_mpi(source)
    compiler = mpi_cc if mpi else serial_cc
    if shutil.which(compiler) is None:
        return None, f"compiler {compiler} not found"
    src = workdir / f"{name}{suffix}"
    src.write_text(program_text(lang, source), encoding="utf-8")
    exe = workdir / name
    cmd = [compiler, *std, "-o", str(exe), str(src), *toolchain.cflags,
           *(fortran_flags(toolchain, source) if suffix == ".f90" else []),
           *(toolchain.mpi_libs if mpi else toolchain.libs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=workdir)
    text = f"$ {shlex.join(cmd)}\n{proc.stdout}{proc.stderr}"
    return (exe if proc.returncode == 0 else None), text
