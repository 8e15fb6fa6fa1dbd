"""Arrays handed over in place while several timesteps are in flight; rank 0 of the compute ranks prints one
JSON line.

Run as ``HZIO_RANKS_PER_NODE=N mpiexec -n N python io_ranks_in_place.py '{"out": DIR, "steps": S}'``: one
I/O rank, ``in_flight=2``. Each compute rank computes step k's output into the first or second of two arrays
of the node's buffer (``io.shared_array``), writes it with ``copy=False`` and flushes; as soon as that flush
returns it overwrites the array of step k - 1 with -1, as a simulation computing its next step into it
may. The zip codec keeps the I/O rank behind the compute ranks, so the I/O rank still needs step k - 1's
array when flush k is called: the files hold the right samples only if flush k waited until it was durable.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402

SHAPE = (96, 256, 256)


def step_array(step):
    return np.random.default_rng([7, step]).standard_normal(SHAPE).astype(np.float32)


def run(world, a):
    import hzio

    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=64 << 20, in_flight=2)
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    z0, z1 = SHAPE[0] * comm.rank // comm.size, SHAPE[0] * (comm.rank + 1) // comm.size
    outs = [io.shared_array((z1 - z0,) + SHAPE[1:], np.float32) for _ in range(2)]
    steps = [step_array(step)[z0:z1] for step in range(a["steps"])]  # computed ahead: the loop is only I/O
    reports = []
    with hzio.create(os.path.join(a["out"], "run.idx"), shape=SHAPE, fields={"t": "float32"},
                     times=range(a["steps"]), codec="zip", comm=comm, io=io, overwrite=True) as ds:
        for step in range(a["steps"]):
            out = outs[step % 2]
            out[...] = steps[step]
            ds.write(out, offset=(z0, 0, 0), field="t", time=step, copy=False)
            r = ds.flush()
            reports.append({"waited": r.waited, "reason": r.reason, "copied": r.copied, "in_place": r.in_place})
            outs[(step + 1) % 2][...] = -1  # step - 1's array: free once this flush returned
    io.close()
    every = comm.gather(reports, root=0)
    if comm.rank == 0:
        print(json.dumps({"reports": every}))


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
