"""A run through dedicated I/O ranks next to the synchronous collective write of the same boxes; rank 0
of the compute ranks prints one JSON line.

Run as ``HZIO_RANKS_PER_NODE=K mpiexec -n N python io_ranks_write.py '{"out": DIR, "per_node": P,
"buffer_bytes": B, "steps": S, "codec": C, "seed": R}'``. The compute ranks split the z axis; every step
writes a float32 and a float64[3] field through the I/O ranks (datasets ``io/run.idx``), then the same
boxes collectively without them (``sync/run.idx``); then each dataset is opened again (through the I/O
ranks and without them) and gains timestep ``steps``. Reports every flush's wait and reason.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from abort_on_failure import aborting_every_rank  # noqa: E402


def arrays(shape, step, seed):
    rng = np.random.default_rng([seed, step])
    return {"t": rng.standard_normal(shape).astype(np.float32), "w": rng.standard_normal(shape + (3,))}


def slab(rank, ranks, nz):
    z0 = nz * rank // ranks
    return z0, nz * (rank + 1) // ranks


def write(ds, comm, shape, a, step, shared=None):
    """This rank's slab of every field; with ``shared`` (two arrays per field in the node's buffer, used in
    turn), computed into them and handed over in place (``copy=False``)."""
    z0, z1 = slab(comm.rank, comm.size, shape[0])
    for name, data in arrays(shape, step, a["seed"]).items():
        if shared is None:
            ds.write(data[z0:z1], offset=(z0, 0, 0), field=name, time=step)
        else:
            out = shared[name][step % 2]
            out[...] = data[z0:z1]
            ds.write(out, offset=(z0, 0, 0), field=name, time=step, copy=False)


def run(world, a):
    import hzio

    io = hzio.start_io_ranks(world, per_node=a["per_node"], buffer_bytes=a["buffer_bytes"])
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    if a.get("bad_path"):  # the I/O side's error must reach every compute rank
        try:
            hzio.create(a["bad_path"], shape=(8, 8), fields={"t": "float32"}, comm=comm, io=io)
            error = None
        except hzio.IoError as e:
            error = str(e)
        io.close()
        errors = comm.gather(error, root=0)
        if comm.rank == 0:
            print(json.dumps({"errors": errors}))
        return
    shape = (4 * comm.size + 3, 20, 24)
    fields = {"t": "float32", "w": "float64[3]"}
    opts = dict(times=range(a["steps"]), codec=a["codec"], bits_per_block=10, blocks_per_file=8, overwrite=True)
    reports = []
    shared = None
    if a.get("in_place"):
        z0, z1 = slab(comm.rank, comm.size, shape[0])
        shared = {name: [io.shared_array(data[z0:z1].shape, data.dtype) for _ in range(2)]
                  for name, data in arrays(shape, 0, a["seed"]).items()}
    with hzio.create(os.path.join(a["out"], "io", "run.idx"), shape=shape, fields=fields, comm=comm, io=io,
                     **opts) as ds:
        for step in range(a["steps"]):
            write(ds, comm, shape, a, step, shared)
            r = ds.flush()
            reports.append({"waited": r.waited, "reason": r.reason, "copied": r.copied, "pieces": r.pieces,
                            "in_place": r.in_place})
    with hzio.open(os.path.join(a["out"], "io", "run.idx"), mode="r+", comm=comm, io=io) as ds:
        write(ds, comm, shape, a, a["steps"])
    io.close()
    with hzio.create(os.path.join(a["out"], "sync", "run.idx"), shape=shape, fields=fields, comm=comm,
                     **opts) as ds:
        for step in range(a["steps"]):
            write(ds, comm, shape, a, step)
            ds.flush()
    with hzio.open(os.path.join(a["out"], "sync", "run.idx"), mode="r+", comm=comm) as ds:
        write(ds, comm, shape, a, a["steps"])
    every = comm.gather(reports, root=0)
    if comm.rank == 0:
        print(json.dumps({"compute_ranks": comm.size, "shape": shape, "reports": every}))


if __name__ == "__main__":
    from mpi4py import MPI

    os.makedirs(json.loads(sys.argv[1])["out"], exist_ok=True)
    with aborting_every_rank(MPI.COMM_WORLD):
        run(MPI.COMM_WORLD, json.loads(sys.argv[1]))
