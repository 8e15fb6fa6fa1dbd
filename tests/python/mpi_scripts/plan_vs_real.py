"""A real collective write next to its simulated plan; rank 0 prints one JSON line.

Run as ``mpiexec -n N python plan_vs_real.py '{"out": DIR, "grid": [...], "side": S, "fields": F,
"bits_per_block": B, "blocks_per_file": K, "aggregator_bytes": A, "placement": P, "order": O,
"partitions": R, "shift": S, "index_space": I}'``. Every rank
writes its box of ``hzio.grid_boxes`` for every field; rank 0 also runs ``hzio.plan`` on the same
decomposition (no MPI) and prints both the write report and the simulated summary.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def _shifted(boxes, shape, shift):
    """The boxes with every inner plane along the last axis moved by ``shift`` samples."""
    out = []
    for lo, hi in boxes:
        lo, hi = list(lo), list(hi)
        lo[-1] = lo[-1] + shift if lo[-1] > 0 else 0
        hi[-1] = hi[-1] + shift if hi[-1] < shape[-1] else shape[-1]
        out.append((tuple(lo), tuple(hi)))
    return out


def run(comm, a):
    import hzio

    grid = tuple(a["grid"])
    shape = tuple(g * a["side"] for g in grid)
    boxes = hzio.grid_boxes(shape, grid, a["order"])
    if a.get("shift"):  # move the planes between ranks off the partition planes: boxes straddle them
        boxes = _shifted(boxes, shape, int(a["shift"]))
    lo, hi = boxes[comm.rank]
    fields = {f"f{i}": "float64" for i in range(a["fields"])}
    options = dict(bits_per_block=a["bits_per_block"], blocks_per_file=a["blocks_per_file"])
    partitions = int(a.get("partitions", 1))
    space = a.get("index_space", "global")
    with hzio.create(os.path.join(a["out"], "real.idx"), shape=shape, fields=fields, comm=comm, overwrite=True,
                     placement=a["placement"], aggregator_bytes=a["aggregator_bytes"], partitions=partitions,
                     index_space=space, **options) as ds:
        for name in fields:
            ds.write(np.full(tuple(h - l for l, h in zip(lo, hi)), comm.rank, np.float64), offset=lo, field=name)
        report = ds.flush()
    if comm.rank == 0:
        simulated = hzio.plan(shape, rank_boxes=boxes, dtype="float64", fields=a["fields"],
                              placement=a["placement"], aggregator_bytes=a["aggregator_bytes"],
                              partitions=partitions, index_space=space, **options)
        print(json.dumps({"report": json.loads(json.dumps(dict(report), default=dict)), "simulated": simulated}))


if __name__ == "__main__":
    from mpi4py import MPI

    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
