"""Commit timestep 0 collectively, then kill one rank while timestep 1 is being written.

Run under mpiexec (``tests/python/test_parallel_write.py`` does)::

    mpiexec -n 3 python write_then_die.py '{"out": "/tmp/d", "seed": 7, "mode": "in_flush", "victim": 1,
                                            "fraction": 0.5}'

The JSON argument (or ``$HZIO_MPI_ARGS``) holds ``out`` (a directory), ``seed``, ``victim`` (the rank
that dies), ``mode`` and ``fraction``:

``"before_flush"``
    Every rank stages its timestep-1 boxes; after a barrier the victim calls ``os._exit(1)`` while the
    others enter ``flush``.
``"in_flush"``
    As above, but the victim arms a timer that sends it SIGKILL ``fraction`` times the duration of
    the timestep-0 flush after the barrier, and enters ``flush`` with the others (the binding releases
    the GIL, so the timer fires inside the collective). If the victim's flush returns first it kills
    itself at once.

Optional keys ``partitions`` and ``index_space`` go to ``hzio.create`` (with ``"local"`` the dataset is
a ``killed.midx`` mosaic of one dataset per partition, which ``hzio.open(killed.idx)`` finds).

Timestep 0 is written by ``hzio.create(..., comm=)`` and closed; timestep 1 by ``hzio.open(path, mode="r+",
comm=)``, so that it is a new timestep added to the ``.idx``. mpiexec is expected to abort the job.
Markers in ``out``: ``t0.json`` (rank 0, before timestep 1: the timestep-0 flush seconds, the maximum
over ranks) and ``flush_returned`` (the victim, if its flush returned before it died).

The module is importable without MPI: the test uses :func:`build_arrays` to know the data.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hz_expect as he  # noqa: E402
from abort_on_failure import aborting_every_rank  # noqa: E402

SHAPE = (56, 48, 40)
FIELDS = [("t", "float32", {"codec": "zip"}), ("q", "int16", {"codec": "lz4"})]
TIMES = (0, 1)
BITS_PER_BLOCK = 10
BLOCKS_PER_FILE = 8


def build_arrays(seed: int) -> dict:
    """``{(field, time): ndarray}`` for both timesteps."""
    rng = np.random.default_rng([seed, 11])
    return {(f, t): he.random_array(rng, SHAPE, dtype) for t in TIMES for f, dtype, _ in FIELDS}


def slabs(seed: int, time: int, size: int) -> list:
    """One uneven slab per rank, ``[(lo, hi)]``, cut along z at timestep 0 and along y at timestep 1."""
    axis = 0 if time == 0 else 1
    n = SHAPE[axis]
    rng = np.random.default_rng([seed, 12, time, size])
    cuts = [0] + sorted(int(c) for c in rng.choice(np.arange(1, n), size=min(size - 1, n - 1), replace=False)) + [n]
    cuts += [n] * (size + 1 - len(cuts))
    out = []
    for r in range(size):
        lo, hi = [0] * len(SHAPE), list(SHAPE)
        lo[axis], hi[axis] = cuts[r], cuts[r + 1]
        out.append((tuple(lo), tuple(hi)))
    return out


def _stage(ds, arrays, time, box):
    lo, hi = box
    if any(h <= l for l, h in zip(lo, hi)):
        return
    sl = tuple(slice(l, h) for l, h in zip(lo, hi))
    for f, _, _ in FIELDS:
        ds.write(np.ascontiguousarray(arrays[(f, time)][sl]), offset=lo, field=f, time=time)


def _die_later(seconds: float) -> None:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGKILL))
    timer.daemon = True
    timer.start()


def run(comm, args) -> None:
    import hzio  # noqa: PLC0415
    from mpi4py import MPI  # noqa: PLC0415

    rank, size = comm.rank, comm.size
    out, seed, victim = args["out"], int(args["seed"]), int(args["victim"])
    path = os.path.join(out, "killed.idx")
    arrays = build_arrays(seed)
    ds = hzio.create(path, shape=SHAPE, fields=FIELDS, bits_per_block=BITS_PER_BLOCK, blocks_per_file=BLOCKS_PER_FILE,
                     times=[0], overwrite=True, comm=comm, threads=1, partitions=int(args.get("partitions", 1)),
                     index_space=args.get("index_space", "global"))
    _stage(ds, arrays, 0, slabs(seed, 0, size)[rank])
    start = time.perf_counter()
    ds.flush()
    t0 = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
    ds.close()
    if rank == 0:
        with open(os.path.join(out, "t0.json"), "w") as f:
            json.dump({"flush_seconds": t0}, f)

    ds = hzio.open(path, mode="r+", comm=comm, threads=1, partitions=int(args.get("partitions", 1)))
    _stage(ds, arrays, 1, slabs(seed, 1, size)[rank])
    comm.Barrier()
    if rank == victim:
        if args["mode"] == "before_flush":
            os._exit(1)
        _die_later(float(args["fraction"]) * t0)
    ds.flush()
    if rank == victim:
        open(os.path.join(out, "flush_returned"), "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    ds.close()
    time.sleep(30)  # mpiexec ends the job when the victim dies; never report success on our own


def main(argv) -> None:
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        run(comm, json.loads(argv[1] if len(argv) > 1 else os.environ["HZIO_MPI_ARGS"]))


if __name__ == "__main__":
    main(sys.argv)
