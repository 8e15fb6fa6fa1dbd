"""A run through I/O ranks that writes timestep after timestep until killed (``tests/python/test_io_ranks.py``).

Run as ``mpiexec -n 4 python io_ranks_kill.py '{"out": DIR}'``: rank 3 is the I/O rank, ranks 0-2 split
the z axis of a 24^3 float32 field and write :func:`values` of step 0, 1, 2, ... (at most 200 steps),
one flush per step. Every rank writes its pid to ``<out>/pid.<rank>`` first.
"""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402

SHAPE = (24, 24, 24)
STEPS = 200


def values(step):
    """The field of timestep ``step`` (the test's oracle)."""
    z = np.arange(SHAPE[0], dtype=np.float32)[:, None, None]
    return np.broadcast_to(z * 1000 + step, SHAPE).astype(np.float32)


def run(world, out):
    import hzio

    with open(os.path.join(out, f"pid.{world.rank}"), "w") as f:
        f.write(str(os.getpid()))
    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=1 << 16)
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    z0, z1 = SHAPE[0] * comm.rank // comm.size, SHAPE[0] * (comm.rank + 1) // comm.size
    with hzio.create(os.path.join(out, "run.idx"), shape=SHAPE, fields={"t": "float32"}, times=[0], comm=comm,
                     io=io, overwrite=True) as ds:
        for step in range(STEPS):
            ds.write(values(step)[z0:z1], offset=(z0, 0, 0), time=step)
            ds.flush()
            time.sleep(0.02)
    io.close()


if __name__ == "__main__":
    from mpi4py import MPI

    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1])["out"])
