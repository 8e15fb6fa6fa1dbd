"""Flushes through an I/O rank after the I/O side has failed; rank 0 of the compute ranks prints one JSON line.

Run as ``HZIO_RANKS_PER_NODE=N mpiexec -n N python io_ranks_failed.py '{"out": DIR, "flushes": K}'``: one I/O
rank with a buffer smaller than a step, so that the I/O rank copies each step out of it. Step 0 is committed;
then the dataset's data folder becomes a file, so the next flush fails on the I/O side, and every later flush
answers with that error. Reports the errors and the I/O rank's resident memory (``VmRSS``) after the first
failure and after the last flush: the I/O side must not keep the steps it will never write.
"""

import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402
from io_ranks_write import slab  # noqa: E402

SHAPE = (64, 256, 256)  # 16 MiB of float32


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def run(world, a):
    import hzio

    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=4 << 20)
    io_pid = world.bcast(os.getpid() if io.is_io_rank else None, root=world.size - 1)
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    z0, z1 = slab(comm.rank, comm.size, SHAPE[0])
    data = np.random.default_rng(comm.rank).random((z1 - z0,) + SHAPE[1:], dtype=np.float32)
    path = os.path.join(a["out"], "run.idx")
    errors, rss = [], []
    with hzio.create(path, shape=SHAPE, fields={"t": "float32"}, times=range(a["flushes"] + 1), comm=comm, io=io,
                     overwrite=True) as ds:
        ds.write(data, offset=(z0, 0, 0), field="t", time=0)
        ds.flush()
        io.wait()
        comm.Barrier()
        if comm.rank == 0:
            folder = os.path.join(a["out"], "run")  # the data files' folder
            shutil.rmtree(folder)
            with open(folder, "w") as f:
                f.write("not a folder")
        comm.Barrier()
        for step in range(1, a["flushes"] + 1):
            ds.write(data, offset=(z0, 0, 0), field="t", time=step)
            try:
                ds.flush()
                io.wait()
                errors.append(None)
            except hzio.IoError as e:
                errors.append(str(e))
            if step == 2 and comm.rank == 0:
                rss.append(rss_kib(io_pid))
        comm.Barrier()
        if comm.rank == 0:
            rss.append(rss_kib(io_pid))
        try:
            ds.close()
        except hzio.IoError:
            pass
    io.close()
    every = comm.gather(errors, root=0)
    if comm.rank == 0:
        print(json.dumps({"errors": every, "rss_kib": rss}))


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
