"""Atomic rewrites (docs/design/commit.md "Atomic rewrites"): readers polling a timestep while a writer
rewrites it, commit after commit, never see a mix of two commits.

``mpi_scripts/rewrite_writer.py`` rewrites timestep 0 of a 32^3 dataset of 4 data files per timestep,
whole (every file replaced) or a box cutting several files (merged with the stored blocks), one commit
after the other; one process, or 2 MPI ranks writing collectively. Meanwhile this process reads it in
three ways: a dataset opened once and read again and again (its open files must be dropped when a
commit publishes), a fresh open per read, and a value-range query. Oracle: the NumPy states the writer
passes through (:func:`rewrite_writer.states`); every read must equal one of them exactly.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time

import hzio
import mpi_launch
import numpy as np
import pytest
from hzio._cli_debris import _marker_holder

SCRIPT = mpi_launch.SCRIPTS / "rewrite_writer.py"
_spec = importlib.util.spec_from_file_location("hzio_mpi_script_rewrite_writer", SCRIPT)
_spec.loader.exec_module(rewrite_writer := importlib.util.module_from_spec(_spec))

COMMITS = 120
START_TIMEOUT_S = 60


def _digest(a: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).digest()


def _poll_while_writing(proc, path, states):
    """Reads until the writer ends; returns (reads, mixed reads, distinct states seen)."""
    known = {f: {_digest(s[f]): k for k, s in enumerate(states)} for f, _ in rewrite_writer.FIELDS}
    query_known = {}
    for k, s in enumerate(states):
        hit = s["t"] >= 1.5  # the query range is inclusive: a state may hold exactly 1.5 (seed 3292426162)
        query_known[_digest(np.argwhere(hit)) + _digest(s["t"][hit])] = k
    reads = mixed = 0
    seen = set()
    with hzio.open(path) as held:
        while proc.poll() is None or reads < 3:
            for how in ("held", "fresh", "query"):
                if how == "held":
                    got, table = held.read(field="t"), known["t"]
                    key = _digest(got)
                elif how == "fresh":
                    with hzio.open(path) as ds:
                        got, table = ds.read(field="q"), known["q"]
                    key = _digest(got)
                else:
                    coords, vals = held.query("t", 1.5, np.inf)
                    table, key = query_known, _digest(coords) + _digest(vals)
                reads += 1
                if key in table:
                    seen.add(table[key])
                else:
                    mixed += 1
    return reads, mixed, seen


@pytest.mark.parametrize("codec", ["raw", "zip"])
@pytest.mark.parametrize("mpi", [False, True], ids=["one-process", "2-ranks"])
def test_readers_polling_during_rewrites_never_see_a_mix(tmp_path, seed, codec, mpi):
    if mpi:
        mpi_launch.skip_module_without_mpi()
    args = {"out": str(tmp_path), "seed": seed % 2**31, "codec": codec, "commits": COMMITS, "mpi": mpi}
    cmd = [sys.executable, str(SCRIPT), json.dumps(args)]
    if mpi:
        cmd = [mpi_launch.MPIEXEC, "-n", "2", *mpi_launch.launcher_flags(), *cmd]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    states = rewrite_writer.states(args["seed"], COMMITS)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        first = proc.stdout.readline()  # the dataset exists once commit 0 is in
        assert '"created"' in first, first + proc.stderr.read()[-3000:]
        reads, mixed, seen = _poll_while_writing(proc, tmp_path / "rw.idx", states)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert f'"done": {COMMITS}' in out
    print(f"{reads} reads during {COMMITS} commits, {len(seen)} distinct states seen, {mixed} mixed")
    assert mixed == 0, f"{mixed} of {reads} reads mixed two commits"
    assert len(seen) >= 5, f"the reads saw only {len(seen)} states: they did not overlap the commits"
    with hzio.open(tmp_path / "rw.idx") as ds:  # and the end state is the last commit's
        for f, _ in rewrite_writer.FIELDS:
            np.testing.assert_array_equal(ds.read(field=f), states[-1][f])
        assert not os.path.exists(str(tmp_path / "rw.idx") + ".commit")


def _small(path):
    a = np.arange(8 * 8 * 8, dtype=np.float32).reshape(8, 8, 8)
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}) as ds:
        ds.write(a)
    return a


def _verify_json(*args):
    run = subprocess.run([sys.executable, "-m", "hzio", "verify", "--json", *map(str, args)], capture_output=True,
                         text=True, timeout=120)
    return run.returncode, json.loads(run.stdout)


def test_the_marker_of_a_dead_writer_is_ignored_listed_and_repaired(tmp_path):
    path = tmp_path / "m.idx"
    a = _small(path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    marker = tmp_path / "m.idx.commit"
    marker.write_text(f"{int(dead.stdout)} {socket.gethostname()}\n")
    with hzio.open(path) as ds:  # no wait: that process is gone
        np.testing.assert_array_equal(ds.read(), a)
    status, report = _verify_json(path)
    assert status == 0 and [d["path"] for d in report["debris"]] == [str(marker)], report
    assert report["debris"][0]["running"] is False
    subprocess.run([sys.executable, "-m", "hzio", "verify", "--repair", str(path)], check=True, capture_output=True)
    assert not marker.exists()


def test_a_live_writers_marker_holds_reads_back_until_it_goes(tmp_path):
    path = tmp_path / "m.idx"
    a = _small(path)
    marker = tmp_path / "m.idx.commit"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        marker.write_text(f"{live.pid} {socket.gethostname()}\n")
        removed = []

        def remove_later():
            time.sleep(0.5)
            removed.append(time.monotonic())
            marker.unlink()

        thread = threading.Thread(target=remove_later)
        thread.start()
        with hzio.open(path) as ds:
            got = ds.read()
            done = time.monotonic()
        thread.join()
        np.testing.assert_array_equal(got, a)
        assert removed and done >= removed[0], "the read returned while the marker was held"
        # Another host's marker is never judged dead (readers wait for it, and --repair would keep it).
        marker.write_text(f"{live.pid} another-host-{socket.gethostname()}\n")
        assert _marker_holder(str(marker)) == (live.pid, True)
        marker.write_text(f"{live.pid} {socket.gethostname()}\n")
        assert _marker_holder(str(marker)) == (live.pid, True)
        marker.unlink()
    finally:
        live.kill()
        live.wait()
