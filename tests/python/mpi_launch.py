"""Launching the MPI scripts of ``mpi_scripts/`` from tests: skip when MPI is not available, run under
mpiexec in a session of their own with a time limit, and read the JSON line rank 0 prints.

``HZIO_MPIEXEC`` names the launcher (default ``mpiexec``); Open MPI gets ``--oversubscribe`` and the
variables that let it run as root.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import hzio
import pytest

SCRIPTS = Path(__file__).resolve().parent / "mpi_scripts"
LAUNCHER = os.environ.get("HZIO_MPIEXEC") or "mpiexec"
MPIEXEC = shutil.which(LAUNCHER)


def skip_module_without_mpi():
    """Skip the calling test module when mpiexec, mpi4py or hzio's MPI build is missing."""
    if MPIEXEC is None:
        pytest.skip(f"{LAUNCHER} not found (install Open MPI or MPICH, or set HZIO_MPIEXEC)", allow_module_level=True)
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed in this Python (pip install mpi4py)", allow_module_level=True)
    if not getattr(hzio._core, "with_mpi", False):
        pytest.skip("this hzio was built without MPI (hzio._core.with_mpi is False)", allow_module_level=True)


def launcher_flags():
    """Flags the launcher needs to run more ranks than cores (Open MPI's ``--oversubscribe``)."""
    try:
        version = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--oversubscribe"] if ("Open MPI" in version or "OpenRTE" in version) else []


def run_json(nprocs, script, payload, timeout):
    """Run ``mpi_scripts/<script>.py '<payload JSON>'`` on ``nprocs`` ranks.

    Returns
    -------
    (dict or None, str)
        The last JSON line of stdout when the run exited with 0 in time (None otherwise), and a
        description of the run for failure messages. Nothing of the session outlives the call.
    """
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    cmd = [MPIEXEC, "-n", str(nprocs), *launcher_flags(), sys.executable, str(SCRIPTS / f"{script}.py"),
           json.dumps(payload)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    describe = (f"command: {' '.join(cmd[:-1])} '<payload>'\n"
                f"{'TIMED OUT after' if timed_out else f'exit code {proc.returncode} after'} "
                f"{time.monotonic() - start:.1f} s\nstdout (end):\n{out[-3000:]}\nstderr (end):\n{err[-3000:]}")
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    ok = not timed_out and proc.returncode == 0 and lines
    return (json.loads(lines[-1]) if ok else None), describe
