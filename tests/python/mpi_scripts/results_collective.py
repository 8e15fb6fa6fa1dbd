"""The result types of the collective calls, seen from every rank; rank 0 prints one JSON line.

Run as ``mpiexec -n N python results_collective.py '{"out": DIR}'``. Every rank writes a z slab of
``arange`` (2 per rank) of a float32 dataset with ``hzio.create(..., comm=)``, flushes, writes again,
closes, then opens it with ``comm`` and reads its own slab. For each call it records the type names of
what ``hzio._core.ParallelDataset`` returned and of the public report, and the report as a dict.
"""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def names(obj):
    return [type(obj).__module__, type(obj).__name__]


def run(comm, out):
    import hzio

    ranks, rank = comm.size, comm.rank
    shape = (2 * ranks, 8, 16)
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    slab = (slice(2 * rank, 2 * rank + 2),)
    path = os.path.join(out, "results.idx")
    seen = {}
    with hzio.create(path, shape=shape, fields={"t": "float32"}, comm=comm, overwrite=True, bits_per_block=6,
                     blocks_per_file=4) as ds:
        ds.write(data[slab], offset=(2 * rank, 0, 0))
        core_flush = ds._pcore.flush()  # the binding's own return, then the public one
        seen["core_flush"] = names(core_flush)
        seen["core_last_write_report"] = names(ds._pcore.last_write_report)
        ds.write(data[slab], offset=(2 * rank, 0, 0))
        rep = ds.flush()
        seen["flush"] = names(rep)
        seen["flush_is_last"] = rep is ds.last_write_report
        seen["flush_report"] = json.loads(json.dumps(dict(rep), default=dict))
        seen["flush_attr_equals_item"] = all(getattr(rep, k) == rep[k] for k in rep)
        ds.write(data[slab], offset=(2 * rank, 0, 0))
    seen["close_report"] = names(ds.last_write_report)
    seen["close_bytes"] = ds.last_write_report.bytes
    # Wall time accounting: the report's total lies within the write and flush calls on every rank.
    with hzio.create(path, shape=shape, fields={"t": "float32"}, comm=comm, overwrite=True, bits_per_block=6,
                     blocks_per_file=4) as ds:
        t0 = time.perf_counter()
        ds.write(data[slab], offset=(2 * rank, 0, 0))
        t1 = time.perf_counter()
        rep = ds.flush()
        t2 = time.perf_counter()
        report = json.loads(json.dumps(dict(rep), default=dict))
        seen["timed"] = {"write_s": t1 - t0, "flush_s": t2 - t1, "report": report}
        ds.write(data[slab], offset=(2 * rank, 0, 0), copy=False)
        seen["borrowed_stage"] = ds.flush().max.stage
    with hzio.open(path, comm=comm) as ds:
        got = ds.read(box=((2 * rank, 0, 0), (2 * rank + 2, 8, 16)))
        seen["read_equal"] = bool(np.array_equal(got, data[slab]))
        seen["read"] = names(ds.last_read_report)
        seen["read_report"] = dict(ds.last_read_report)
        lo, hi = (0, 0, 2 * rank), (16, 8, 2 * rank + 2)
        out_arr = np.empty((2, 8, 16), np.float32)
        seen["core_read_box"] = names(ds._pcore.read_box(lo, hi, -1, "t", 0, out_arr, "auto"))
        seen["core_read_equal"] = bool(np.array_equal(out_arr, data[slab]))
    return seen


def main(argv):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        args = json.loads(argv[1])
        seen = comm.gather(run(comm, args["out"]), root=0)
        if comm.rank == 0:
            print(json.dumps({"ranks": comm.size, "seen": seen}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
