"""A collective write whose report says whether the bitmask is rank-conforming; rank 0 prints one JSON line.

Run as ``mpiexec -n N python template_write.py '{"out": DIR, "grid": [gz, gy, gx], "side": S, "order": ...}'``.
Every rank writes its box of a grid of ranks (``hzio.grid_boxes``) twice: into a dataset created with
``hzio.rank_conforming_bitmask`` and into one with the default bitmask. It records both reports' flag,
both bitmasks, and whether each dataset reads back as the array written.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def run(comm, args):
    import hzio

    grid, side = tuple(args["grid"]), args["side"]
    shape = tuple(g * side for g in grid)
    boxes = hzio.grid_boxes(shape, grid, order=args["order"])
    assert len(boxes) == comm.size
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    lo, hi = boxes[comm.rank]
    mine = tuple(slice(a, b) for a, b in zip(lo, hi))
    seen = {}
    for name, bitmask in (("conforming", hzio.rank_conforming_bitmask(shape, boxes)), ("default", None)):
        path = os.path.join(args["out"], f"{name}.idx")
        with hzio.create(path, shape=shape, fields={"t": "float32"}, bitmask=bitmask, comm=comm, overwrite=True,
                         bits_per_block=4) as ds:
            ds.write(data[mine], offset=lo)
            report = ds.flush()
            seen[name] = {"bitmask": ds.bitmask, "flag": bool(report.rank_conforming)}
        with hzio.open(path) as ds:
            seen[name]["equal"] = bool(np.array_equal(ds[...], data))
    flags = comm.gather(seen, root=0)
    if comm.rank == 0:
        print(json.dumps({"ranks": comm.size, "seen": seen, "same_on_every_rank": all(f == seen for f in flags)}))


if __name__ == "__main__":
    from mpi4py import MPI

    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
