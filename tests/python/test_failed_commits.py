"""A commit that fails at any step (data file, sidecar, .idx; full disk, I/O error, no permission) leaves
the .idx exactly as it was: no timestep is published without its data, ``ds.times`` says so, nothing is
left behind that trips the next write, and the committed data reads as before.

One process (durable and not) here; the collective writer runs the same steps in
``mpi_scripts/collective_safety.py`` under mpiexec (``test_collective_safety.py``). The failures are
injected with ``hzio._core.inject_fault`` (``include/hzio/testing.hpp``) into the dataset under test,
on its files whose path matches a pattern. Oracles: the .idx bytes saved
before the write, NumPy arrays written earlier, ``hzio verify``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import hzio
import numpy as np
import pytest

# step -> (operation, pattern of the hit files, errno). Logs and temporary files of data files are
# "<name>.bin.log.<pid>" and "<name>.bin.tmp.<pid>", sidecars "<name>.bin.hzstats[.tmp.<pid>]".
STEPS = {
    "data file create": ("create", r"\.bin\.(log|tmp)\.", errno.EACCES),
    "data file write": ("write", r"\.bin\.(log|tmp)\.", errno.ENOSPC),
    "data file fsync": ("sync", r"\.bin\.(log|tmp)\.", errno.EIO),
    "sidecar create": ("create", r"\.hzstats", errno.EACCES),
    "sidecar write": ("write", r"\.hzstats", errno.ENOSPC),
    "sidecar rename": ("rename", r"\.hzstats$", errno.EIO),
    "data file rename": ("rename", r"\.bin$", errno.EIO),
    "idx write": ("write", r"\.idx\.tmp\.", errno.ENOSPC),
    "idx fsync": ("sync", r"\.idx\.tmp\.", errno.EIO),
    "idx rename": ("rename", r"\.idx$", errno.EACCES),
}
SHAPE = (16, 16, 16)


@contextlib.contextmanager
def failing(ds, op, pattern, err, expected=hzio.IoError):
    """Arms a fault on ``ds`` for the block and expects ``expected`` from it; yields the pytest.raises info."""
    hzio._core.inject_fault(ds._core, op, pattern, err)
    try:
        with pytest.raises(expected) as info:
            yield info
    finally:
        hzio._core.clear_fault(ds._core)


def committed(path: Path, array, durable=True):
    """Creates ``path`` with timestep 0 = ``array`` committed; returns it reopened for writing."""
    with hzio.create(path, shape=SHAPE, fields={"v": "float32"}, times=[0], bits_per_block=8, durable=durable) as ds:
        ds.write(array, time=0)
    return hzio.open(path, mode="r+", durable=durable)


def debris(folder: Path):
    return sorted(str(p) for p in folder.rglob("*") if ".log." in p.name or ".tmp." in p.name)


def arrays(rng):
    return [rng.random(SHAPE, dtype=np.float32) for _ in range(3)]


@pytest.mark.parametrize("durable", [True, False])
@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_failed_flush_publishes_nothing_it_did_not_write(tmp_path, rng, durable, step):
    if step.endswith("fsync") and not durable:
        pytest.skip("without durable no fsync is issued")
    a, b, c = arrays(rng)
    path = tmp_path / "f.idx"
    ds = committed(path, a, durable)
    idx_before = path.read_bytes()
    op, pattern, err = STEPS[step]
    with failing(ds, op, pattern, err) as failure:  # whole blocks reach their logs at once: writes may fail too
        ds.write(b, time=0)  # a rewrite of a committed timestep
        ds.write(c, time=1)  # and a new one
        ds.flush()
    message = str(failure.value)
    assert os.strerror(err) in message or "disk full" in message, message
    assert path.read_bytes() == idx_before
    assert ds.times == [0]
    # One data file per timestep. The new .idx is written before any data file is renamed, so only a
    # failure of its own rename comes after the rewrite of timestep 0 is published.
    np.testing.assert_array_equal(ds.read(time=0), b if step == "idx rename" else a)
    with pytest.raises(hzio.NotFoundError):
        ds.read(time=1)
    assert debris(tmp_path) == []
    ds.write(c, time=1)  # the dataset goes on working after the failure
    ds.close()
    with hzio.open(path) as back:
        assert back.times == [0, 1]
        np.testing.assert_array_equal(back.read(time=1), c)
    proc = subprocess.run([sys.executable, "-m", "hzio", "verify", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("step", ["data file write", "sidecar write", "idx rename"])
def test_a_failed_close_publishes_nothing_and_closes(tmp_path, rng, step):
    a, _, c = arrays(rng)
    path = tmp_path / "g.idx"
    ds = committed(path, a)
    idx_before = path.read_bytes()
    ds.write(c, time=1)
    with failing(ds, *STEPS[step]):
        ds.close()
    assert path.read_bytes() == idx_before
    assert debris(tmp_path) == []
    with pytest.raises(hzio.InvalidArgumentError, match="closed"):
        ds.read(time=0)
    with hzio.open(path) as back:
        assert back.times == [0]
        np.testing.assert_array_equal(back.read(time=0), a)


def test_a_commit_whose_last_folder_fsync_fails_reports_it_and_counts_as_published(tmp_path, rng):
    a, b, c = arrays(rng)
    path = tmp_path / "s.idx"
    ds = committed(path, a)
    ds.write(c, time=1)
    # The .idx's folder, after its rename.
    with failing(ds, "sync", re.escape(str(tmp_path)) + "$", errno.EIO) as failure:
        ds.flush()
    assert "fsync directory" in str(failure.value)
    assert ds.times == [0, 1]  # what the .idx on disk says
    ds.close()
    with hzio.open(path) as back:
        assert back.times == [0, 1]
        np.testing.assert_array_equal(back.read(time=1), c)


def test_a_partial_block_held_in_memory_is_dropped_with_its_failed_commit(tmp_path, rng):
    a, b, _ = arrays(rng)
    path = tmp_path / "p.idx"
    ds = committed(path, a)
    ds.write(b[3:5, 2:9, 1:4], offset=(3, 2, 1), time=2)  # partial blocks: held until the commit
    with failing(ds, "write", r"\.bin\.log\.", errno.ENOSPC):
        ds.flush()
    assert ds.times == [0]
    ds.close()
    with hzio.open(path) as back:
        assert back.times == [0]


def test_a_fault_armed_on_one_dataset_leaves_the_others_alone(tmp_path, rng):
    """Faults go through each dataset's own seam: another dataset open in the process writes as usual."""
    a, b, _ = arrays(rng)
    hit, spared = committed(tmp_path / "hit.idx", a), committed(tmp_path / "spared.idx", a)
    hit.write(b, time=0)
    spared.write(b, time=0)
    with failing(hit, "write", "", errno.ENOSPC):  # every file of `hit`, whatever its path
        hit.flush()
    spared.flush()
    hit.close()
    spared.close()
    with hzio.open(tmp_path / "hit.idx") as back:
        np.testing.assert_array_equal(back.read(time=0), a)
    with hzio.open(tmp_path / "spared.idx") as back:
        np.testing.assert_array_equal(back.read(time=0), b)


def test_a_failed_write_drops_its_new_timestep_and_the_next_commit_does_not_add_it(tmp_path, rng):
    """The write's failure discards every uncommitted write, the new timestep with them
    (docs/design/write-path.md "Errors"); a later commit of other data does not declare it."""
    a, b, c = arrays(rng)
    path = tmp_path / "t.idx"
    ds = committed(path, a)
    with failing(ds, "write", r"\.bin\.log\.", errno.ENOSPC):
        ds.write(c, time=1)  # whole blocks go to a new log at once: the write itself fails
    assert ds.times == [0]
    ds.write(b, time=0)
    ds.flush()
    assert ds.times == [0]
    ds.close()
    with hzio.open(path) as back:
        assert back.times == [0]
        np.testing.assert_array_equal(back.read(time=0), b)


def test_verify_lists_what_a_killed_writer_left_and_repair_removes_it(tmp_path, rng):
    """A writer killed (SIGKILL) before its commit leaves its write logs: readers ignore them, ``hzio verify``
    lists them, ``--repair`` removes them but never those of a process still running, and the committed
    data and the next writer are untouched."""
    import json  # noqa: PLC0415
    import signal  # noqa: PLC0415

    a, b, _ = arrays(rng)
    path = tmp_path / "k.idx"
    committed(path, a).close()
    np.save(tmp_path / "b.npy", b)
    code = (f"import os, signal, numpy as np, hzio; ds = hzio.open({str(path)!r}, mode='r+'); "
            f"ds.write(np.load({str(tmp_path / 'b.npy')!r}), time=0); os.kill(os.getpid(), signal.SIGKILL)")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr
    left = debris(tmp_path)
    assert left and all(".log." in p for p in left), left
    live = sorted(str(p) for p in (tmp_path / "k").rglob("*.bin"))[0] + f".log.{os.getpid()}"  # a running "writer"
    Path(live).write_bytes(b"in use")

    def verify(*extra):
        return subprocess.run([sys.executable, "-m", "hzio", "verify", str(path), *extra], capture_output=True,
                              text=True, timeout=120)

    listed = verify("--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr  # debris is not corruption
    found = {d["path"]: d for d in json.loads(listed.stdout)["debris"]}
    assert sorted(found) == sorted(left + [live])
    assert all(not found[p]["running"] for p in left) and found[live]["running"]
    assert f"DEBRIS: {len(left) + 1} files" in verify().stdout
    repaired = verify("--repair")
    assert repaired.returncode == 0 and f"removed {len(left)} files" in repaired.stdout, repaired.stdout
    assert debris(tmp_path) == [live]
    with hzio.open(path) as back:
        np.testing.assert_array_equal(back.read(time=0), a)
    with hzio.open(path, mode="r+") as ds:
        ds.write(b, time=0)
    with hzio.open(path) as back:
        np.testing.assert_array_equal(back.read(time=0), b)
