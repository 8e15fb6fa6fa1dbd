"""A real collective write next to its simulated plan; rank 0 prints one JSON line.

Run as ``mpiexec -n N python plan_vs_real.py '{"out": DIR, "grid": [...], "side": S, "fields": F,
"bits_per_block": B, "blocks_per_file": K, "aggregator_bytes": A, "placement": P, "order": O}'``. Every rank
writes its box of ``hzio.grid_boxes`` for every field; rank 0 also runs ``hzio.plan`` on the same
decomposition (no MPI) and prints both the write report and the simulated summary.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def run(comm, a):
    import hzio

    grid = tuple(a["grid"])
    shape = tuple(g * a["side"] for g in grid)
    boxes = hzio.grid_boxes(shape, grid, a["order"])
    lo, hi = boxes[comm.rank]
    fields = {f"f{i}": "float64" for i in range(a["fields"])}
    options = dict(bits_per_block=a["bits_per_block"], blocks_per_file=a["blocks_per_file"])
    with hzio.create(os.path.join(a["out"], "real.idx"), shape=shape, fields=fields, comm=comm, overwrite=True,
                     placement=a["placement"], aggregator_bytes=a["aggregator_bytes"], **options) as ds:
        for name in fields:
            ds.write(np.full(tuple(h - l for l, h in zip(lo, hi)), comm.rank, np.float64), offset=lo, field=name)
        report = ds.flush()
    if comm.rank == 0:
        simulated = hzio.plan(shape, grid=grid, order=a["order"], dtype="float64", fields=a["fields"],
                              placement=a["placement"], aggregator_bytes=a["aggregator_bytes"], **options)
        print(json.dumps({"report": json.loads(json.dumps(dict(report), default=dict)), "simulated": simulated}))


if __name__ == "__main__":
    from mpi4py import MPI

    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
