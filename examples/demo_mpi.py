"""Demo on 4 MPI ranks: a Gray-Scott run with a hot spot where every rank simulates and writes its own
z-slab through hzio.

Run from the repository root (``scripts/bootstrap.sh demo`` does this)::

    mpiexec -n 4 .venv/bin/python examples/demo_mpi.py [--out DIR] [--size N] [--steps K]

Each rank advances its slab of the fields ``u``, ``v`` and ``temperature`` (as in demo.py) with halo
exchange, and every timestep is written collectively (restructure, HZ encoding, aggregation, one
commit). Then every rank reads its slab back collectively, and rank 0 reads a coarse level and a zoomed
box (``u_views.png``, ``v_views.png``), reads progressively coarse to fine printing each level's time and
bytes, and finds the hot spot with a value query that reads only the blocks whose statistics can contain
it (``temperature_query.png``). Every read is checked against the simulation.
"""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402
import hzio  # noqa: E402


def slab_of(size, rank, ranks):
    """The [z0, z1) planes a rank owns (uneven when size does not divide)."""
    return size * rank // ranks, size * (rank + 1) // ranks


def laplacian_with_halo(a, below, above):
    """7-point Laplacian of a z-slab, given the neighbours' boundary planes (periodic domain). The sums run
    in demo.laplacian's order, so the slabs stay bit-identical to a one-process run."""
    padded = np.concatenate([below[None], a, above[None]])
    out = -6 * a
    out += padded[:-2] + padded[2:]
    for axis in (1, 2):
        out += np.roll(a, 1, axis) + np.roll(a, -1, axis)
    return out


def exchange(comm, a):
    """The planes just below and above this rank's slab, from its neighbours (periodic in z)."""
    up, down = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    below, above = np.empty_like(a[0]), np.empty_like(a[0])
    comm.Sendrecv(np.ascontiguousarray(a[-1]), dest=up, recvbuf=below, source=down)
    comm.Sendrecv(np.ascontiguousarray(a[0]), dest=down, recvbuf=above, source=up)
    return below, above


def simulate_and_write(comm, path, size, steps, iterations, io=None):
    """Advance the slabs and write every timestep collectively (through the I/O ranks ``io`` when given);
    return the slab, its fields and the flush reports."""
    z0, z1 = slab_of(size, comm.rank, comm.size)
    state, source = demo.initial_state(size)
    state = {name: a[z0:z1].copy() for name, a in state.items()}
    source = source[z0:z1].copy()
    lap = lambda a: laplacian_with_halo(a, *exchange(comm, a))  # noqa: E731
    shape = (size,) * 3
    reports, sim_seconds = [], 0.0
    # times=[0]: each commit adds its timestep to the .idx, so readers see it only once it is whole
    with hzio.create(path, shape=shape, comm=comm, overwrite=True, times=[0], fields=demo.FIELDS,
                     bits_per_block=demo.bits_per_block_for(shape), io=io) as ds:
        for t in range(steps):
            sim_seconds += demo.advance(state, source, iterations if t else 0, lap=lap)
            for name, a in state.items():
                ds.write(a, offset=(z0, 0, 0), field=name, time=t)
            reports.append(ds.flush())  # Collective: one commit per timestep
    return (z0, z1), state, reports, sim_seconds


def print_write_reports(reports, size, steps):
    r = reports[-1]
    mib = r["bytes"] / 2**20
    total = sum(x["max"]["total"] for x in reports)
    print(f"wrote {steps} timesteps of u (zip), v and temperature (raw), {size}^3 float32, from {r['ranks']} ranks: "
          f"{mib:.1f} MiB per timestep, {total:.2f} s of hzio in all")
    phases = ", ".join(f"{k} {v:.3f}" for k, v in r["max"].items())
    print(f"  last timestep: {r['aggregators']} aggregators ({r['placement']}), {r['files']} files, "
          f"phases (max over ranks, s): {phases}")


def collective_read_back(comm, path, slab, u):
    """Every rank reads its own slab of the last timestep collectively and checks it."""
    with hzio.open(path, comm=comm) as ds:
        got = ds.read(box=((slab[0], 0, 0), (slab[1],) + ds.shape[1:]), field="u", time=ds.times[-1])
        method = ds.last_read_report["method"]
    ok = comm.allreduce(bool(np.array_equal(got, u)), op=MPI.LAND)
    if not ok:
        raise AssertionError("a rank read back a slab that differs from its simulation")
    return method


def progressive(path, truth):
    """Coarse to fine: print each level's time and bytes; the last step must equal the simulation."""
    print("progressive read of u, last timestep (coarse to fine; each step reads only new blocks):")
    with hzio.open(path) as ds:
        t0 = time.perf_counter()
        for level, arr in ds.progressive(field="u", time=ds.times[-1]):
            r = ds.last_read_report
            print(f"  level {level:2d}: shape {arr.shape}, {r['blocks_read']} blocks, {r['bytes_read']} bytes, "
                  f"{(time.perf_counter() - t0) * 1e3:.1f} ms since start")
        if not np.array_equal(arr, truth):
            raise AssertionError("the finest progressive step differs from the simulation")


READER = """
import sys, time, hzio
path, steps = sys.argv[1], int(sys.argv[2])
while True:
    try:
        ds = hzio.open(path)
        break
    except hzio.Error:
        time.sleep(0.05)
with ds:
    for t in range(steps):
        ds.wait_for_time(t, timeout=120)
        mean = float(ds.read(field="temperature", time=t).mean())
        print(f"  live reader: timestep {t} committed, mean temperature {mean:.2f}", flush=True)
"""


def with_io_ranks(world, args, sync_path):
    """The same run again with one rank as a dedicated I/O rank: the 3 others compute and hand each
    timestep to it through shared memory, while a reader in another process prints each timestep as
    soon as it is committed. The files must equal the synchronous run's, byte for byte."""
    import subprocess

    io = hzio.start_io_ranks(world, per_node=1, buffer_bytes=64 << 20)
    path = os.path.join(args.out, "io_ranks", os.path.basename(sync_path))
    if io.is_io_rank:
        io.serve()
        return
    comm = io.compute_comm
    reader = None
    if comm.rank == 0:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        print(f"the same run on {comm.size} compute ranks and 1 I/O rank, a reader following it live:", flush=True)
        reader = subprocess.Popen([sys.executable, "-c", READER, path, str(args.steps)])
    comm.Barrier()
    t0 = time.perf_counter()
    _, _, reports, _ = simulate_and_write(comm, path, args.size, args.steps, args.iterations, io=io)
    io.close()  # every timestep durable
    if comm.rank == 0:
        reader.wait(timeout=120)
        waited = sum(r.seconds for r in reports)
        same = same_dataset_files(sync_path, path)
        print(f"  the compute ranks spent {waited * 1e3:.0f} ms in flush over {args.steps} timesteps "
              f"({time.perf_counter() - t0:.1f} s in all); the files are "
              f"{'byte-identical to' if same else 'DIFFERENT from'} the synchronous run's")
        if not same:
            raise AssertionError("the run through I/O ranks wrote other bytes than the synchronous one")


def same_dataset_files(a, b):
    """Whether two datasets (their .idx and every file of their data folders) hold the same bytes."""
    import filecmp

    folders = [os.path.splitext(p)[0] for p in (a, b)]
    names = [sorted(os.path.relpath(os.path.join(r, n), f) for r, _, ns in os.walk(f) for n in ns) for f in folders]
    return (names[0] == names[1] and filecmp.cmp(a, b, shallow=False)
            and all(filecmp.cmp(os.path.join(folders[0], n), os.path.join(folders[1], n), shallow=False)
                    for n in names[0]))


def main(argv=None):
    comm = MPI.COMM_WORLD
    args = demo.parse_args(argv)
    path = os.path.join(args.out, "gray_scott_mpi.idx")
    if comm.rank == 0:
        os.makedirs(args.out, exist_ok=True)
    comm.Barrier()
    slab, state, reports, sim = simulate_and_write(comm, path, args.size, args.steps, args.iterations)
    method = collective_read_back(comm, path, slab, state["u"])
    slabs = {name: comm.gather(a, root=0) for name, a in state.items()}
    if comm.rank == 0:
        truth = {name: np.concatenate(parts) for name, parts in slabs.items()}
        print_write_reports(reports, args.size, args.steps)
        print(f"every rank read its slab back collectively ({method} reads) and found what it wrote; "
              f"simulation {sim:.1f} s")
        last = args.steps - 1
        demo.show_views(path, args.out, truth, last)
        progressive(path, truth["u"])
        demo.query_hot_spot(path, args.out, truth["temperature"], last)
        print(f"to look at every timestep in a browser: .venv/bin/hzio serve {path}  (docs/guide/viewer.md)")
    if comm.size > 1:
        with_io_ranks(comm, args, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
