"""A writer that commits forever, to be killed at a random moment by ``tests/python/test_kill_points.py``.

Run alone (one process) or under mpiexec (collective, every rank writes its z-slab of each box)::

    python kill_writer.py '{"out": "/tmp/d", "seed": [7, 3], "codec": "zip", "durable": true, "mpi": false}'
    mpiexec -n 4 python kill_writer.py '{"out": "/tmp/d", "seed": [7, 3], "codec": "raw", "durable": true,
                                         "mpi": true}'

The JSON argument holds ``out`` (a directory), ``seed`` (an int or a list of ints for NumPy), ``codec``,
``durable`` and ``mpi``. The writer creates ``<out>/kill.idx`` and then makes commit 0, 1, 2, ... of
:func:`commit_writes` forever: each commit appends a timestep, rewrites part or all of a committed one
in place, or both. After each commit returns (rank 0 with MPI), it appends a line to ``<out>/commits.log``,
flushes and fsyncs it, then prints the same line: ``{"commit": k, "at": <monotonic seconds>}``. A line
``{"created": ...}`` comes first. Every rank writes its pid to ``<out>/pid.<rank>`` before the create.

The module is importable without MPI or hzio: the test uses :func:`expected_after` to know what the
dataset holds after any number of commits.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402

SHAPE = (32, 32, 32)
FIELDS = (("t", "float32"), ("q", "int16"))
BITS_PER_BLOCK = 10  # 32 blocks per field and timestep
BLOCKS_PER_FILE = 8  # so 4 data files per timestep
MAX_COMMITS = 2000  # a writer nobody kills stops here, so the test sees it finished on its own


def commit_writes(seed, count: int) -> list:
    """The writes of commits ``0 .. count-1``: a list per commit of ``(time, lo, hi)`` boxes.

    Commit 0 writes timestep 0 whole. Each later commit appends the next timestep whole (60 %), rewrites
    a box of a committed timestep (25 %; the whole timestep one time in three), or does both (15 %).
    """
    seed = list(np.atleast_1d(seed))
    plan, next_time = [], 0
    for k in range(count):
        rng = np.random.default_rng([*seed, 21, k])
        u = rng.random() if k else 0.0
        writes = []
        if u >= 0.6:
            t = int(rng.integers(0, next_time))
            if rng.random() < 1 / 3:
                lo, hi = (0, 0, 0), SHAPE
            else:
                lo = tuple(int(rng.integers(0, n)) for n in SHAPE)
                hi = tuple(int(rng.integers(l + 1, n + 1)) for l, n in zip(lo, SHAPE))
            writes.append((t, tuple(lo), tuple(hi)))
        if u < 0.6 or u >= 0.85:
            writes.append((next_time, (0, 0, 0), SHAPE))
            next_time += 1
        plan.append(writes)
    return plan


def values(seed, commit: int, index: int, field: str, lo, hi) -> np.ndarray:
    """The array written by write ``index`` of commit ``commit`` into ``field`` over the box ``[lo, hi)``."""
    shape = tuple(h - l for l, h in zip(lo, hi))
    rng = np.random.default_rng([*np.atleast_1d(seed), 22, commit, index, [f for f, _ in FIELDS].index(field)])
    if field == "t":
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.integers(-30000, 30000, size=shape, dtype=np.int16)


def expected_after(seed, count: int) -> dict:
    """``{time: {field: array}}`` the dataset holds after commits ``0 .. count-1`` (unwritten samples are 0)."""
    state = {}
    for k, writes in enumerate(commit_writes(seed, count)):
        for j, (t, lo, hi) in enumerate(writes):
            arrays = state.setdefault(t, {f: np.zeros(SHAPE, dtype) for f, dtype in FIELDS})
            sl = tuple(slice(l, h) for l, h in zip(lo, hi))
            for f, _ in FIELDS:
                arrays[f][sl] = values(seed, k, j, f, lo, hi)
    return state


def _slab(rank: int, size: int):
    """This rank's z-slab ``(z0, z1)``: equal cuts of SHAPE[0]."""
    return rank * SHAPE[0] // size, (rank + 1) * SHAPE[0] // size


def _write(ds, seed, k, writes, rank, size) -> None:
    z0, z1 = _slab(rank, size)
    for j, (t, lo, hi) in enumerate(writes):
        mine_lo, mine_hi = (max(lo[0], z0),) + lo[1:], (min(hi[0], z1),) + hi[1:]
        if mine_hi[0] <= mine_lo[0]:
            continue
        for f, _ in FIELDS:
            data = values(seed, k, j, f, lo, hi)[mine_lo[0] - lo[0]:mine_hi[0] - lo[0]]
            ds.write(np.ascontiguousarray(data), offset=mine_lo, field=f, time=t)


def _log(log, record: dict) -> None:
    line = json.dumps(record)
    log.write(line + "\n")
    log.flush()
    os.fsync(log.fileno())
    print(line, flush=True)


def run(args, comm=None) -> None:
    import hzio  # noqa: PLC0415

    rank, size = (comm.rank, comm.size) if comm is not None else (0, 1)
    out, seed = args["out"], args["seed"]
    with open(os.path.join(out, f"pid.{rank}"), "w") as f:
        f.write(str(os.getpid()))
    if comm is not None:
        comm.Barrier()
    ds = hzio.create(os.path.join(out, "kill.idx"), shape=SHAPE, fields=dict(FIELDS), codec=args["codec"],
                     bits_per_block=BITS_PER_BLOCK, blocks_per_file=BLOCKS_PER_FILE, times=[0], overwrite=True,
                     durable=bool(args["durable"]), threads=1, comm=comm)
    log = open(os.path.join(out, "commits.log"), "a") if rank == 0 else None
    if log:
        _log(log, {"created": True, "at": time.monotonic()})
    plan = commit_writes(seed, MAX_COMMITS)
    for k, writes in enumerate(plan):
        _write(ds, seed, k, writes, rank, size)
        ds.flush()
        if log:
            _log(log, {"commit": k, "at": time.monotonic()})
    ds.close()


def main(argv) -> None:
    args = json.loads(argv[1])
    if not args.get("mpi"):
        run(args)
        return
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        run(args, comm)


if __name__ == "__main__":
    main(sys.argv)
