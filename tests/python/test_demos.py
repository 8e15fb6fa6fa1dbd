"""The demos run and check themselves (each compares every read with its simulation and fails loudly)."""

import os
import shutil
import subprocess
import sys

import hzio
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_one_process_demo_runs(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", "demo.py"), "--out", str(tmp_path),
                          "--size", "24", "--steps", "2", "--iterations", "5"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "u_coarse.png").stat().st_size > 0


@pytest.mark.skipif(shutil.which("mpiexec") is None or not getattr(hzio._core, "with_mpi", False),
                    reason="needs mpiexec and hzio built with MPI")
def test_mpi_demo_runs_on_four_ranks(tmp_path):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(["mpiexec", "-n", "4", "--oversubscribe", sys.executable,
                          os.path.join(REPO, "examples", "demo_mpi.py"), "--out", str(tmp_path), "--size", "24",
                          "--steps", "2", "--iterations", "5"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "front query" in out.stdout and "progressive read" in out.stdout
    assert (tmp_path / "v_zoom.png").stat().st_size > 0
