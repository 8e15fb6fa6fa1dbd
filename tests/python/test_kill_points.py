"""Kill points: writers killed (SIGKILL) at random moments lose nothing they committed.

Each case starts ``mpi_scripts/kill_writer.py``, which creates a 32^3 dataset of two fields (float32,
int16; 4 data files per timestep) and commits forever: it appends timesteps, rewrites boxes of committed
ones in place (partial boxes go through the rebuild of docs/design/commit.md), or both, and logs each
commit after it returns. The test waits for a random number of commits, then kills the writer a random
fraction of the last commit's duration later, which lands anywhere in the write and commit cycle. One
process here (``test_one_process_writer_killed_...``); in the MPI cases a random one of 4 ranks of a
collective writer is killed and mpiexec must abort the others.

Then, against NumPy arrays recomputed from the seed (:func:`kill_writer.expected_after`):

* ``ds.times`` lists the committed timesteps, plus the one being added by the commit in flight if its
  ``.idx`` was renamed; each listed timestep reads back bit for bit as committed. A timestep the commit
  in flight was rewriting may hold, sample by sample, its old or its new values (data files are
  replaced one by one); once the in-flight commit's ``.idx`` is published, only the new ones.
* ``hzio verify`` exits 0 (the killed writer's files are listed as debris, not corruption), and
  ``hzio verify --repair`` leaves no ``*.log.<pid>`` or ``*.tmp.<pid>`` file.
* A new one-process writer (``mode="r+"``) adds a timestep with a partial box (nothing of the dead
  writer's files may show in it), and every check above still holds.

Each kill point is one pytest case, ``p<N>-<codec>-<durable|nosync>``; it draws its moment from
``HZIO_TEST_SEED`` (printed) and N, so ``HZIO_TEST_SEED=<seed> pytest -k p003-zip`` replays it (the
moment depends on scheduling too, so a replay hits a nearby point, not the same instruction).

By default 10 one-process and 10 MPI kill points; the long run takes more::

    HZIO_KILL_POINTS=100 HZIO_KILL_POINTS_MPI=20 python -m pytest -q tests/python/test_kill_points.py

The MPI cases skip when mpiexec, mpi4py or hzio's MPI build is missing (``mpi_launch``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import hzio
import mpi_launch
import numpy as np
import pytest

SCRIPT = mpi_launch.SCRIPTS / "kill_writer.py"
_spec = importlib.util.spec_from_file_location("hzio_mpi_script_kill_writer", SCRIPT)
_spec.loader.exec_module(kill_writer := importlib.util.module_from_spec(_spec))

POINTS = int(os.environ.get("HZIO_KILL_POINTS", "10"))
POINTS_MPI = int(os.environ.get("HZIO_KILL_POINTS_MPI", "10"))
RANKS = 4
START_TIMEOUT_S = 60  # for the writer to reach its first commits (mpiexec start-up on busy cores)
EXIT_TIMEOUT_S = 60  # for mpiexec to abort the job once a rank is dead
DEBRIS = re.compile(r"(\.(log|tmp|old)\.\d+|\.idx\.commit)$")  # docs/design/commit.md "What a crash leaves"
NEW_COMMIT = 10**6  # the commit number whose values the writer after the kill writes


def kill_points(count):
    """``count`` cases: raw and zip alternate, durable and not every two."""
    out = []
    for i in range(count):
        codec, durable = ("raw", "zip")[i % 2], (i // 2) % 2 == 0
        out.append(pytest.param(i, codec, durable, id=f"p{i:03d}-{codec}-{'durable' if durable else 'nosync'}"))
    return out


# ---------------------------------------------------------------------------------------------- the kill
class _Lines:
    """JSON lines of a pipe, read with a deadline (the writer may hang: that must fail, not block)."""

    def __init__(self, pipe):
        self.fd, self.buf = pipe.fileno(), b""

    def next(self, deadline):
        """The next JSON record, or None at the end of the stream; raises TimeoutError at the deadline."""
        while True:
            while b"\n" not in self.buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                if select.select([self.fd], [], [], remaining)[0]:
                    chunk = os.read(self.fd, 1 << 16)
                    if not chunk:
                        return None
                    self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            if line.startswith(b"{"):
                return json.loads(line)


def kill_at_random_moment(proc, rng, victim_pid):
    """Waits for 1 to 20 commits of ``proc``'s writer, then SIGKILLs ``victim_pid()`` between 0 and 1.5
    times the last commit's duration after that commit returned. Returns what it did, for messages."""
    lines, stamps = _Lines(proc.stdout), []
    wanted = int(rng.integers(1, 21))
    deadline = time.monotonic() + START_TIMEOUT_S
    while len(stamps) < wanted + 1:  # the "created" line, then the commits
        try:
            record = lines.next(deadline)
        except TimeoutError:
            pytest.fail(f"the writer made {len(stamps) - 1} commits in {START_TIMEOUT_S} s, wanted {wanted}")
        if record is None:
            pytest.fail(f"the writer ended on its own after {len(stamps) - 1} commits")
        stamps.append(record["at"])
    cycle = stamps[-1] - stamps[-2]
    fraction = float(rng.uniform(0, 1.5))
    time.sleep(max(0.0, stamps[-1] + fraction * cycle - time.monotonic()))
    os.kill(victim_pid(), signal.SIGKILL)
    return f"aimed {fraction:.2f} x {cycle * 1e3:.1f} ms after commit {wanted - 1}", time.monotonic()


def committed(folder: Path):
    """The number of commits the writer logged (each after its commit returned), and when the last
    returned (monotonic seconds)."""
    records = [json.loads(ln) for ln in (folder / "commits.log").read_text().splitlines()]
    return sum("commit" in r for r in records), records[-1]["at"]


# ---------------------------------------------------------------------------------------------- the checks
def check_contents(path, seed, committed, context):
    """The dataset holds commits ``0 .. committed-1``, maybe with the commit in flight (see the module
    docstring). Returns ``{time: {field: array}}`` as read."""
    before = kill_writer.expected_after(seed, committed)
    after = kill_writer.expected_after(seed, committed + 1)
    read = {}
    with hzio.open(path) as ds:
        times = ds.times
        assert times in (sorted(before), sorted(after)), f"times {times}, committed {sorted(before)}; {context}"
        published = times == sorted(after) != sorted(before)  # the in-flight commit's .idx is in place
        for t in times:
            read[t] = {}
            for f, _ in kill_writer.FIELDS:
                got = read[t][f] = ds.read(field=f, time=t)
                new = after[t][f]
                if t not in before or published or np.array_equal(before[t][f], new):
                    np.testing.assert_array_equal(got, new, err_msg=f"field {f} time {t}; {context}")
                else:  # rewritten by the commit in flight: each data file old or new
                    mixed = (got == before[t][f]) | (got == new)
                    assert mixed.all(), (f"field {f} time {t}: {np.count_nonzero(~mixed)} samples are neither "
                                         f"the committed nor the new values; {context}")
                    print(f"field {f} time {t} being rewritten: {np.count_nonzero(got != before[t][f])} of "
                          f"{np.count_nonzero(new != before[t][f])} changed samples new")
        if set(after) != set(before):
            print(f"the timestep the commit in flight adds {'is' if published else 'is not'} listed")
    return read


def hzio_cli(*args):
    return subprocess.run([sys.executable, "-m", "hzio", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def debris_on_disk(folder: Path):
    return sorted(str(p) for p in folder.rglob("*") if DEBRIS.search(p.name))


def check_verify_and_repair(folder: Path, path, context):
    """``hzio verify`` passes and lists the dead writer's files; ``--repair`` removes what it listed.
    Returns the debris still on disk afterwards (see :func:`check_everything`)."""
    listed = hzio_cli("verify", "--json", path)
    assert listed.returncode == 0, f"{context}\n{listed.stdout[-3000:]}{listed.stderr[-3000:]}"
    debris = json.loads(listed.stdout)["debris"]
    assert not any(d["running"] for d in debris), f"{debris}; {context}"
    repaired = hzio_cli("verify", "--repair", path)
    assert repaired.returncode == 0, f"{context}\n{repaired.stdout[-3000:]}{repaired.stderr[-3000:]}"
    left = debris_on_disk(folder)
    print(f"verify listed {len(debris)} files of the killed writer, {len(left)} others stay")
    assert not set(left) & {d["path"] for d in debris}, f"--repair kept files it listed: {left}; {context}"
    return left


def check_next_writer(folder: Path, path, seed, read, context):
    """A new writer adds a timestep holding one partial box; the rest reads as before; verify passes.
    Returns the debris ``hzio verify`` lists afterwards."""
    rng = np.random.default_rng([*seed, 31])
    lo = tuple(int(rng.integers(0, n // 2)) for n in kill_writer.SHAPE)
    hi = tuple(int(rng.integers(n // 2 + 1, n + 1)) for n in kill_writer.SHAPE)
    new_time = max(read) + 1
    with hzio.open(path, mode="r+") as ds:
        for f, _ in kill_writer.FIELDS:
            ds.write(kill_writer.values(seed, NEW_COMMIT, 0, f, lo, hi), offset=lo, field=f, time=new_time)
    sl = tuple(slice(l, h) for l, h in zip(lo, hi))
    with hzio.open(path) as ds:
        assert ds.times == sorted(read) + [new_time], context
        for f, dtype in kill_writer.FIELDS:
            want = np.zeros(kill_writer.SHAPE, dtype)
            want[sl] = kill_writer.values(seed, NEW_COMMIT, 0, f, lo, hi)
            np.testing.assert_array_equal(ds.read(field=f, time=new_time), want,
                                          err_msg=f"new timestep {new_time} field {f}; {context}")
            for t in read:
                np.testing.assert_array_equal(ds.read(field=f, time=t), read[t][f],
                                              err_msg=f"field {f} time {t} after the next writer; {context}")
    proc = hzio_cli("verify", "--json", path)
    assert proc.returncode == 0, f"{context}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)["debris"]


def check_everything(folder: Path, seed, context, killed_at):
    """Every check of the module docstring. The one about debris comes last, so that a file
    ``--repair`` missed does not hide a failure of the others."""
    path = folder / "kill.idx"
    count, last_at = committed(folder)
    context = f"{context}, killed {(killed_at - last_at) * 1e3:.1f} ms after commit {count - 1} returned"
    print(context)
    read = check_contents(path, seed, count, context)
    missed = check_verify_and_repair(folder, path, context)
    listed_later = check_next_writer(folder, path, seed, read, context)
    assert missed == [], (f"hzio verify --repair left {len(missed)} files of the killed writer (listed later: "
                          f"{len(listed_later)}): {missed}; {context}")
    assert listed_later == [] and debris_on_disk(folder) == [], context


def _payload(folder, seed, codec, durable, mpi):
    return json.dumps({"out": str(folder), "seed": seed, "codec": codec, "durable": durable, "mpi": mpi})


def _stderr_tail(folder: Path):
    return (folder / "stderr.txt").read_text()[-3000:]


# ---------------------------------------------------------------------------------------------- one process
@pytest.mark.parametrize("point,codec,durable", kill_points(POINTS))
def test_one_process_writer_killed_at_a_random_moment_keeps_every_commit(tmp_path, seed, point, codec, durable):
    point_seed = [seed, point]
    rng = np.random.default_rng([*point_seed, 1])
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, str(SCRIPT), _payload(tmp_path, point_seed, codec, durable, False)],
                                stdout=subprocess.PIPE, stderr=err, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        how, killed_at = kill_at_random_moment(proc, rng, lambda: proc.pid)
        proc.wait(timeout=EXIT_TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, f"the writer failed before the kill\n{_stderr_tail(tmp_path)}"
    check_everything(tmp_path, point_seed, f"HZIO_TEST_SEED={seed} point {point}: {how}", killed_at)


# ---------------------------------------------------------------------------------------------- MPI
def _wait_gone(pids, seconds):
    """Pids of ``pids`` still running after ``seconds`` (those are then killed)."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [p for p in pids if _alive(p)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for p in alive:
        os.kill(p, signal.SIGKILL)
    return alive


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("point,codec,durable", kill_points(POINTS_MPI))
def test_collective_writer_with_a_rank_killed_at_a_random_moment_keeps_every_commit(tmp_path, seed, point, codec,
                                                                                    durable):
    mpi_launch.skip_module_without_mpi()
    point_seed = [seed, 1000 + point]
    rng = np.random.default_rng([*point_seed, 1])
    victim = int(rng.integers(0, RANKS))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    cmd = [mpi_launch.MPIEXEC, "-n", str(RANKS), *mpi_launch.launcher_flags(), sys.executable, str(SCRIPT),
           _payload(tmp_path, point_seed, codec, durable, True)]
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True)
    hung = False
    try:
        how, killed_at = kill_at_random_moment(proc, rng, lambda: int((tmp_path / f"pid.{victim}").read_text()))
        try:
            proc.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            hung = True
    finally:
        pids = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
        left = _wait_gone(pids, 10)
    context = f"HZIO_TEST_SEED={seed} point {point}: rank {victim} of {RANKS} {how}"
    assert not hung, f"mpiexec did not end within {EXIT_TIMEOUT_S} s of the kill; {context}\n{_stderr_tail(tmp_path)}"
    assert not left, f"ranks {left} outlived mpiexec (killed now); {context}"
    assert proc.returncode != 0, f"the job survived the loss of rank {victim}; {context}"
    check_everything(tmp_path, point_seed, context, killed_at)
