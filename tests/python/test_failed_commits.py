"""A commit that fails at any step (data file, sidecar, .idx; full disk, I/O error, no permission, read-only
file system) leaves the .idx exactly as it was: no timestep is published without its data, ``ds.times``
says so, the error names the file and the reason, nothing is left behind that trips the next write or
open, and the committed data (and its statistics) read as before.

The matrix: every step a commit takes (``STEPS``) for every errno of ``ERRNOS``, in four kinds of
commit (``SCENARIOS``: a new timestep, a rewrite of a committed one, a rewrite of part of it that is
merged with its stored blocks, and both a rewrite and a new timestep), durable (every errno) and not
(one errno per step, in turn). One process here; the collective writer runs the same cases in
``mpi_scripts/collective_safety.py`` under mpiexec (``test_collective_safety.py``). The failures are
injected with ``hzio._core.inject_fault`` (``include/hzio/testing.hpp``) into the dataset under test,
on its files whose path matches a pattern. The seam has no read operation and does not cover the
folders a commit makes, so failed reads and mkdirs are not injected here. Oracles: the .idx bytes saved
before the write, NumPy arrays written earlier, block statistics computed here from HZ addresses
(``hz_expect.hz_address``), ``hzio verify``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import subprocess
import sys
import types
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import hz_expect as he
import hzio
import hzio.cli
import numpy as np
import pytest
from commit_scenarios import PART, SHAPE, scenario_result

ERRNOS = (errno.ENOSPC, errno.EIO, errno.EACCES, errno.EROFS)


class Step(NamedTuple):
    """One step of a commit: the operation that fails, the pattern of the paths it fails on, and the file
    the error must name (``{data}``: the final path of the hit data file, ``{folder}``: its folder,
    ``{idx}``: the .idx, ``{pid}``: the writer's process id), and for writes the bytes let through first."""

    op: str
    pattern: str
    names: str
    after_bytes: int = 0


# Logs and rebuilt (temporary) data files are "<name>.bin.log.<pid>" and "<name>.bin.tmp.<pid>", sidecars
# "<name>.bin.hzstats.tmp.<pid>" renamed to "<name>.bin.hzstats", the new .idx "<name>.idx.tmp.<pid>".
STEPS = {
    "log create": Step("create", r"\.bin\.log\.", "{data}.log.{pid}"),
    "log write": Step("write", r"\.bin\.log\.", "{data}.log.{pid}"),
    "log write midway": Step("write", r"\.bin\.log\.", "{data}.log.{pid}", 2500),  # the disk fills up inside
    "log fsync": Step("sync", r"\.bin\.log\.", "{data}.log.{pid}"),
    "rebuild create": Step("create", r"\.bin\.tmp\.", "{data}.tmp.{pid}"),
    "rebuild write": Step("write", r"\.bin\.tmp\.", "{data}.tmp.{pid}"),
    "rebuild write midway": Step("write", r"\.bin\.tmp\.", "{data}.tmp.{pid}", 2500),
    "rebuild fsync": Step("sync", r"\.bin\.tmp\.", "{data}.tmp.{pid}"),
    "sidecar create": Step("create", r"\.hzstats\.tmp\.", "{data}.hzstats.tmp.{pid}"),
    "sidecar write": Step("write", r"\.hzstats\.tmp\.", "{data}.hzstats.tmp.{pid}"),
    "sidecar fsync": Step("sync", r"\.hzstats\.tmp\.", "{data}.hzstats.tmp.{pid}"),
    "sidecar rename": Step("rename", r"\.hzstats$", "{data}.hzstats"),
    "data file rename": Step("rename", r"\.bin$", "{data}"),
    "data folder fsync": Step("sync", r"/time_\d+$", "{folder}"),  # after the data file's rename
    "idx create": Step("create", r"\.idx\.tmp\.", "{idx}.tmp.{pid}"),
    "idx write": Step("write", r"\.idx\.tmp\.", "{idx}.tmp.{pid}"),
    "idx fsync": Step("sync", r"\.idx\.tmp\.", "{idx}.tmp.{pid}"),
    "idx rename": Step("rename", r"\.idx$", "{idx}"),
}
SYNC_STEPS = {name for name, s in STEPS.items() if s.op == "sync"}  # none is issued without durable
REBUILD = {"rebuild create", "rebuild write", "rebuild write midway", "rebuild fsync"}
IDX = {"idx create", "idx write", "idx fsync", "idx rename"}
# After these the data file of the commit is in place (the rename is done): a rewrite stays published,
# though the error is reported; a new timestep is still not listed, the .idx comes last.
PUBLISHED = {"data folder fsync", "idx rename"}


# scenario -> (timesteps written, in commit order; steps the commit does not take). A whole rewrite
# and a new timestep write every block of their file, so their logs become the files; a part needs a
# rebuild, whose log is not synced (its copy is). Every commit renames a new .idx: new timesteps to list
# them, rewrites so that readers notice them (docs/design/commit.md "Atomic rewrites").
SCENARIOS = {
    "new timestep": ((1,), REBUILD),
    "rewrite": ((0,), REBUILD),
    "partial rewrite": ((0,), {"log fsync"}),
    "rewrite and new timestep": ((0, 1), REBUILD),
}


def scenario_write(ds, scenario, b, c):
    """The writes of ``scenario``: ``b`` (or its part ``PART``) over timestep 0, ``c`` as timestep 1."""
    if scenario in ("rewrite", "rewrite and new timestep"):
        ds.write(b, time=0)
    if scenario == "partial rewrite":
        ds.write(b[PART], offset=tuple(s.start for s in PART), time=0)
    if scenario in ("new timestep", "rewrite and new timestep"):
        ds.write(c, time=1)


def matrix(durable):
    """(scenario, step, errno) cases: every errno with ``durable``, else one errno per step in turn."""
    cases = []
    for scenario, (_, skipped) in SCENARIOS.items():
        taken = [s for s in STEPS if s not in skipped and (durable or s not in SYNC_STEPS)]
        for i, step in enumerate(taken):
            for err in ERRNOS if durable else ERRNOS[i % len(ERRNOS):][:1]:
                cases.append((scenario, step, err))
    return cases


def names_reason(message, err):
    """Whether ``message`` says what errno ``err`` means (ENOSPC is spelled "disk full (ENOSPC)")."""
    return os.strerror(err) in message or (err == errno.ENOSPC and "disk full (ENOSPC)" in message)


@contextlib.contextmanager
def failing(ds, step, err, expected=hzio.IoError):
    """Arms ``step`` on ``ds`` for the block and expects ``expected`` from it; yields the pytest.raises info."""
    hzio._core.inject_fault(ds._core, step.op, step.pattern, err, step.after_bytes)
    try:
        with pytest.raises(expected) as info:
            yield info
    finally:
        hzio._core.clear_fault(ds._core)


def arrays(rng, n=3):
    """``n`` random volumes of disjoint value ranges ([0, 1), [1, 2), ...): every rewritten block changes
    its minimum and maximum, so statistics left from another version of a file cannot match."""
    return [k + rng.random(SHAPE, dtype=np.float32) for k in range(n)]


def committed(path: Path, array, durable=True):
    """Creates ``path`` with timestep 0 = ``array`` committed; returns it reopened for writing."""
    with hzio.create(path, shape=SHAPE, fields={"v": "float32"}, times=[0], bits_per_block=8, durable=durable) as ds:
        ds.write(array, time=0)
    return hzio.open(path, mode="r+", durable=durable)


def debris(folder: Path):
    return sorted(str(p) for p in folder.rglob("*") if ".log." in p.name or ".tmp." in p.name)


@lru_cache(maxsize=None)
def block_of_sample(bitmask, bits_per_block):
    """The block of every sample of ``SHAPE`` (flat, C order), from its HZ address."""
    return (he.hz_address(bitmask, np.indices(SHAPE)) >> bits_per_block).reshape(-1)


def wrong_statistics(ds, array, time):
    """Blocks of ``time`` whose known statistics (count, min, max) are not those of ``array``'s samples."""
    block = block_of_sample(ds.bitmask, ds.bits_per_block)
    flat = array.reshape(-1)
    rows = ds.blocks(time=time)
    wrong = []
    for row in rows[rows["present"] & rows["stats_known"]]:
        values = flat[block == row["block"]]
        if (row["count"], float(row["min"]), float(row["max"])) != (values.size, values.min(), values.max()):
            wrong.append(int(row["block"]))
    return wrong


def assert_holds(path: Path, expected):
    """A fresh open of ``path`` lists exactly the timesteps of ``expected`` ({time: array}) and reads them
    back, with statistics that describe them."""
    with hzio.open(path) as back:
        assert back.times == sorted(expected)
        for t, array in expected.items():
            np.testing.assert_array_equal(back.read(time=t), array)
            assert wrong_statistics(back, array, t) == [], t


def verify_ok(path: Path, capsys):
    """``hzio verify`` of ``path`` (the CLI's entry point, in this process) finds nothing wrong."""
    capsys.readouterr()
    status = hzio.cli.main(["verify", str(path)])
    out = capsys.readouterr().out
    assert status == 0 and "OK:" in out and "DEBRIS" not in out, out


def data_file(path: Path, time):
    """The data file of ``time`` (all blocks of these datasets lie in one)."""
    with hzio.open(path) as ds:
        return str(ds.blocks(time=time)["file"][0])


def params(durable):
    out = []
    for scenario, step, err in matrix(durable):
        out.append(pytest.param(scenario, step, err, durable,
                                id=f"{scenario}-{step}-{errno.errorcode[err]}-{'durable' if durable else 'cached'}"))
    return out


@pytest.mark.parametrize(("scenario", "step", "err", "durable"), params(True) + params(False))
def test_a_failed_commit_publishes_nothing_it_did_not_write(tmp_path, rng, capsys, scenario, step, err, durable):
    a, b, c, d = arrays(rng, 4)
    path = tmp_path / "f.idx"
    ds = committed(path, a, durable)
    idx_before = path.read_bytes()
    times, _ = SCENARIOS[scenario]
    result = scenario_result(scenario, a, b, c)
    with failing(ds, STEPS[step], err) as failure:  # whole blocks reach their logs at once: writes may fail too
        scenario_write(ds, scenario, b, c)
        ds.flush()
    message = str(failure.value)
    assert names_reason(message, err), message
    # Nothing the commit did not finish is published: the .idx keeps its bytes and no new timestep is
    # listed. A rewrite stays published only when it failed after its data file's rename.
    assert path.read_bytes() == idx_before
    assert ds.times == [0]
    t0 = result[0] if 0 in times and step in PUBLISHED else a
    np.testing.assert_array_equal(ds.read(time=0), t0)
    with pytest.raises(hzio.NotFoundError):
        ds.read(time=1)
    assert debris(tmp_path) == []
    assert_holds(path, {0: t0})
    verify_ok(path, capsys)
    # The same handle writes and commits again, then a fresh open writes more (a part merged with the
    # stored blocks, and a new timestep) over what that left.
    scenario_write(ds, scenario, b, c)
    ds.close()
    assert_holds(path, result)
    with hzio.open(path, mode="r+", durable=durable) as again:
        again.write(d[PART], offset=tuple(s.start for s in PART), time=0)
        again.write(d, time=2)
    result[0] = result[0].copy()
    result[0][PART] = d[PART]
    assert_holds(path, {**result, 2: d})
    verify_ok(path, capsys)
    assert debris(tmp_path) == []
    # The error names the file of the failing step (known now that the retry made it).
    step_info = STEPS[step]
    data = data_file(path, times[0])
    named = step_info.names.format(data=data, folder=os.path.dirname(data), idx=str(path), pid=os.getpid())
    assert named in message, (named, message)


NOT_TAKEN = [(scenario, step) for scenario, (_, skipped) in SCENARIOS.items() for step in sorted(skipped)]


@pytest.mark.parametrize(("scenario", "step"), NOT_TAKEN)
def test_a_commit_does_not_take_the_steps_it_does_not_need(tmp_path, rng, scenario, step):
    """The steps the matrix leaves out for a scenario are indeed not taken: armed, they fail nothing."""
    a, b, c = arrays(rng)
    path = tmp_path / "f.idx"
    ds = committed(path, a)
    s = STEPS[step]
    hzio._core.inject_fault(ds._core, s.op, s.pattern, errno.EIO, s.after_bytes)
    try:
        scenario_write(ds, scenario, b, c)
        ds.flush()
    finally:
        hzio._core.clear_fault(ds._core)
    ds.close()
    assert_holds(path, scenario_result(scenario, a, b, c))


# ------------------------------------------------------------------------------------ hzio.index sidecars
INDEX_STEPS = {  # hzio.index replaces each data file's sidecar: a temporary file, then a rename
    "sidecar create": STEPS["sidecar create"],
    "sidecar write": STEPS["sidecar write"],
    "sidecar fsync": STEPS["sidecar fsync"],
    "sidecar rename": STEPS["sidecar rename"],
    "sidecar folder fsync": STEPS["data folder fsync"],  # after the rename: that sidecar is replaced
}


def index_with_fault(monkeypatch, step, err):
    """Make ``hzio.index`` arm ``step`` on the dataset it opens (its only use of ``hzio._core``)."""
    module = sys.modules["hzio.indexing_stats"]
    real = module._core

    def armed_open(*args):
        core = real.Dataset.open(*args)
        real.inject_fault(core, step.op, step.pattern, err, step.after_bytes)
        return core

    monkeypatch.setattr(module, "_core", types.SimpleNamespace(Dataset=types.SimpleNamespace(open=armed_open)))


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("step", sorted(INDEX_STEPS))
def test_a_failed_index_keeps_the_sidecar_it_would_replace(tmp_path, rng, monkeypatch, capsys, step, err):
    a, _, c = arrays(rng)
    path = tmp_path / "i.idx"
    ds = committed(path, a)
    ds.write(c, time=1)
    ds.close()
    sidecars = sorted(tmp_path.rglob("*.hzstats"))
    before = {p: p.read_bytes() for p in sidecars}
    assert len(before) == 2
    with monkeypatch.context() as patch:
        index_with_fault(patch, INDEX_STEPS[step], err)
        with pytest.raises(hzio.IoError) as failure:
            hzio.index(path, sub_block_bits=2)  # other sidecar bytes than the writer's
    message = str(failure.value)
    assert names_reason(message, err), message
    data = data_file(path, 0)
    named = INDEX_STEPS[step].names.format(data=data, folder=os.path.dirname(data), pid=os.getpid())
    assert named in message, (named, message)
    # Both files are tried; each keeps its sidecar (or has the new one, when only the folder's fsync after
    # the rename failed), whose statistics describe it.
    replaced = step == "sidecar folder fsync"
    assert all((p.read_bytes() != before[p]) == replaced for p in sidecars)
    assert debris(tmp_path) == []
    assert_holds(path, {0: a, 1: c})
    report = hzio.index(path, sub_block_bits=2)
    assert report.files == 2 and report.blocks == 32
    assert all(p.read_bytes() != before[p] for p in sidecars)
    assert_holds(path, {0: a, 1: c})
    verify_ok(path, capsys)


def test_a_query_after_a_failed_rename_of_a_rewrite_finds_what_the_data_holds(tmp_path, rng):
    """The rewritten file's new sidecar does not stay next to the old data file (a rewrite of raw blocks
    keeps the file's size and header table, so it would validate): a query finds every match."""
    a, b, _ = arrays(rng)
    path = tmp_path / "q.idx"
    ds = committed(path, a)
    with failing(ds, STEPS["data file rename"], errno.EIO):
        ds.write(b, time=0)
        ds.flush()
    ds.close()
    with hzio.open(path) as back:
        np.testing.assert_array_equal(back.read(time=0), a)
        top = float(a.max())
        np.testing.assert_array_equal(back.query(None, top, top, time=0, mask=True), a == top)


# ------------------------------------------------------------------------------------------- other cases
@pytest.mark.parametrize("step", ["log write", "sidecar write", "idx rename"])
def test_a_failed_close_publishes_nothing_and_closes(tmp_path, rng, step):
    a, _, c = arrays(rng)
    path = tmp_path / "g.idx"
    ds = committed(path, a)
    idx_before = path.read_bytes()
    ds.write(c, time=1)
    with failing(ds, STEPS[step], errno.ENOSPC):
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
    with failing(ds, Step("sync", re.escape(str(tmp_path)) + "$", ""), errno.EIO) as failure:
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
    with failing(ds, STEPS["log write"], errno.ENOSPC):
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
    with failing(hit, Step("write", "", ""), errno.ENOSPC):  # every file of `hit`, whatever its path
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
    with failing(ds, STEPS["log write"], errno.ENOSPC):
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
