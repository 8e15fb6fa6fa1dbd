"""Arrays handed over in place while several timesteps are in flight; rank 0 of the compute ranks prints one
JSON line.

Run as ``HZIO_RANKS_PER_NODE=N mpiexec -n N python io_ranks_in_place.py '{"out": DIR, "steps": S}'``: one
I/O rank, ``in_flight=2``. Each compute rank computes step k's output into the first or second of two arrays
of the node's buffer (``io.shared_array``), writes it with ``copy=False`` and flushes; as soon as that flush
returns it overwrites the array of step k - 1 with -1, as a simulation computing its next step into it
may. The zip codec keeps the I/O rank behind the compute ranks, so the I/O rank still needs step k - 1's
array when flush k is called: the files hold the right samples only if flush k waited until it was durable.
With ``"refuse": true`` the room for copies is smaller than a plane, and a second dataset checks the same of a
flush that is refused before it hands anything over.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402
from io_ranks_write import slab  # noqa: E402

SHAPE = (96, 256, 256)


def step_array(step):
    return np.random.default_rng([7, step]).standard_normal(SHAPE).astype(np.float32)


def run(world, a):
    import hzio

    # Each compute rank's region holds its two arrays and, with "refuse", less room for copies than a plane
    room = (64 << 10) if a.get("refuse") else (8 << 20)
    per_rank = 2 * (SHAPE[0] // (world.size - 1)) * SHAPE[1] * SHAPE[2] * 4 + room
    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=(world.size - 1) * per_rank, in_flight=2)
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    z0, z1 = slab(comm.rank, comm.size, SHAPE[0])
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
    refused = refuse_after_in_place(hzio, io, comm, a, outs, steps, z0) if a.get("refuse") else None
    io.close()
    every = comm.gather(reports, root=0)
    if comm.rank == 0:
        print(json.dumps({"reports": every, "refused": refused}))


def refuse_after_in_place(hzio, io, comm, a, outs, steps, z0):
    """Dataset ``refused.idx``: step 0 handed over in place, then a flush the I/O side never sees (a copy whose
    plane exceeds the room the shared arrays leave), then step 0's array overwritten at once; returns the
    refusal's message."""
    ds = hzio.create(os.path.join(a["out"], "refused.idx"), shape=SHAPE, fields={"t": "float32"}, times=range(2),
                     codec="zip", comm=comm, io=io, overwrite=True)
    outs[0][...] = steps[0]
    ds.write(outs[0], offset=(z0, 0, 0), field="t", time=0, copy=False)
    ds.flush()
    ds.write(steps[1], offset=(z0, 0, 0), field="t", time=1)  # copied at flush: its plane does not fit
    message = None
    try:
        ds.flush()
    except hzio.InvalidArgumentError as e:
        message = str(e)
    outs[0][...] = -1  # free once that flush returned, refused or not
    try:
        ds.close()  # the copy is still staged: refused again, after step 0 is durable
    except hzio.InvalidArgumentError:
        pass
    return message


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
