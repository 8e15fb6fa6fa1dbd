"""A rank whose boxes lie partly in node memory keeps its staging order; a bad request fails every rank.

Run as ``mpiexec -n 2 python node_memory_order.py '{"out": DIR}'``. Both ranks write one dataset of one
data file, whose aggregator is rank 1 (localized placement starts from the middle holder). Rank 0 first
stages junk over its slab from node memory, then the real values over the same slab from private memory:
its boxes must not be read where they lie, or rank 1 would make the junk's records after rank 0's real
ones arrived, and the junk would win. Rank 1 stages its slab from node memory (read where it lies). Then
rank 1 asks for node memory with a negative shape: both ranks must fail, not wait. Rank 0 prints one
JSON line: the flush's report, what each rank saw of the bad request, and the values written.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402

SHAPE = (16, 32, 32)


def values():
    return np.random.default_rng(11).standard_normal(SHAPE).astype(np.float32)


def run(comm, a):
    import hzio

    z0, z1 = SHAPE[0] * comm.rank // comm.size, SHAPE[0] * (comm.rank + 1) // comm.size
    mine = values()[z0:z1]
    shared = hzio.shared_array(comm, mine.shape, np.float32)
    ds = hzio.create(os.path.join(a["out"], "order.idx"), shape=SHAPE, fields={"v": "float32"}, comm=comm,
                     bits_per_block=10, blocks_per_file=-1, overwrite=True)
    if comm.rank == 0:
        shared[...] = -7.0  # junk, in node memory, staged first
        ds.write(shared, offset=(z0, 0, 0), copy=False)
        ds.write(mine, offset=(z0, 0, 0), copy=False)  # the real values, private, staged after it
    else:
        shared[...] = mine
        ds.write(shared, offset=(z0, 0, 0), copy=False)
    report = ds.flush()
    ds.close()
    seen = None
    try:
        hzio.shared_array(comm, (4, -1) if comm.rank == 1 else (4, 4), np.float32)
    except Exception as e:  # noqa: BLE001 - what each rank saw is the result
        seen = f"{type(e).__name__}: {e}"
    seen = comm.gather(seen, root=0)
    if comm.rank == 0:
        print(json.dumps({"messages": report.messages, "aggregators": report.aggregators, "errors": seen}))


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
