"""Two datasets written through the same I/O ranks at once, their writes and flushes interleaved, with a
shared array taken in the middle; rank 0 of the compute ranks prints one JSON line with the shape.

Run as ``HZIO_RANKS_PER_NODE=K mpiexec -n N python io_ranks_two.py '{"out": DIR, "buffer_bytes": B,
"steps": S, "shared": true}'``. Every step writes dataset ``a`` and then ``b`` (``write`` copies into the node's buffer
ahead of the flush when the next flush's slot has room), then flushes them in an order that alternates,
so that a flush meets the other dataset's copies in the slot. With ``shared``, at step 1, after ``a`` is
written, a shared array is taken (the slots move) and ``b`` writes its step from it, in place. The values
of dataset ``x``, step ``s`` are :func:`values` (for the test's oracle).
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def values(shape, name, step):
    return np.random.default_rng([ord(name), step]).standard_normal(shape).astype(np.float32)


def run(world, a):
    import hzio

    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=a["buffer_bytes"])
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    shape = (4 * comm.size, 16, 16)
    z0, z1 = shape[0] * comm.rank // comm.size, shape[0] * (comm.rank + 1) // comm.size
    opts = dict(fields={"t": "float32"}, times=range(a["steps"]), bits_per_block=8, blocks_per_file=4,
                overwrite=True, comm=comm, io=io)
    ds = {name: hzio.create(os.path.join(a["out"], f"{name}.idx"), shape=shape, **opts) for name in "ab"}
    for step in range(a["steps"]):
        ds["a"].write(values(shape, "a", step)[z0:z1], offset=(z0, 0, 0), field="t", time=step)
        mine = values(shape, "b", step)[z0:z1]
        if step == 1 and a["shared"]:
            shared = io.shared_array(mine.shape, mine.dtype)
            shared[...] = mine
            ds["b"].write(shared, offset=(z0, 0, 0), field="t", time=step, copy=False)
        else:
            ds["b"].write(mine, offset=(z0, 0, 0), field="t", time=step)
        mine[...] = 0  # copies were taken: the caller's array may change
        for name in ("ba" if step % 2 == 0 else "ab"):
            ds[name].flush()
    for d in ds.values():
        d.close()
    io.close()
    if comm.rank == 0:
        print(json.dumps({"shape": shape}))


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
