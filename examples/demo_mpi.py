"""Demo on 4 MPI ranks: a Gray-Scott run where every rank simulates and writes its own z-slab through hzio.

Run from the repository root (``scripts/bootstrap.sh demo`` does this)::

    mpiexec -n 4 .venv/bin/python examples/demo_mpi.py [--out DIR] [--size N] [--steps K]

Each rank advances its slab with halo exchange, and every timestep is written collectively
(restructure, HZ encoding, aggregation, one commit). Then every rank reads its slab back collectively,
and rank 0 reads a coarse level and a zoomed box (PNG slices), reads progressively coarse to fine
printing each level's time and bytes, and finds the reaction front with a value query that reads
only the blocks whose statistics can contain it. Every read is checked against the simulation.
"""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hzio  # noqa: E402
from demo import PARAMS, check_views, parse_args, read_views, save_pictures, seed_state  # noqa: E402


def slab_of(size, rank, ranks):
    """The [z0, z1) planes a rank owns (uneven when size does not divide)."""
    return size * rank // ranks, size * (rank + 1) // ranks


def laplacian_with_halo(a, below, above):
    """7-point Laplacian of a z-slab, given the neighbours' boundary planes (periodic domain)."""
    padded = np.concatenate([below[None], a, above[None]])
    out = -6 * a + padded[:-2] + padded[2:]
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


def step(comm, u, v, p=PARAMS):
    """One explicit Euler step of the slab, the same arithmetic as the one-process demo."""
    lu, lv = laplacian_with_halo(u, *exchange(comm, u)), laplacian_with_halo(v, *exchange(comm, v))
    uvv = u * v * v
    u += p["du"] * lu - uvv + p["feed"] * (1 - u)
    v += p["dv"] * lv + uvv - (p["feed"] + p["kill"]) * v


def simulate_and_write(comm, path, size, steps, iterations):
    """Advance the slabs and write every timestep collectively; return the slabs and the reports."""
    z0, z1 = slab_of(size, comm.rank, comm.size)
    u_all, v_all = seed_state(size)
    u, v = u_all[z0:z1].copy(), v_all[z0:z1].copy()
    reports, sim_seconds = [], 0.0
    # 2^12-sample blocks: a 64^3 field gets 64 blocks, so coarse reads and queries can skip most of them.
    with hzio.create(path, shape=(size,) * 3, comm=comm, overwrite=True, times=range(steps), bits_per_block=12,
                     fields=[("u", "float32", {"codec": "zip"}), ("v", "float32")]) as ds:
        for t in range(steps):
            t0 = time.perf_counter()
            for _ in range(iterations if t else 0):
                step(comm, u, v)
            sim_seconds += time.perf_counter() - t0
            ds.write(u, offset=(z0, 0, 0), field="u", time=t)
            ds.write(v, offset=(z0, 0, 0), field="v", time=t)
            reports.append(ds.flush())  # Collective: one commit per timestep
    return (z0, z1), u, v, reports, sim_seconds


def print_write_reports(reports, size, steps):
    r = reports[-1]
    mib = r["bytes"] / 2**20
    total = sum(x["max"]["total"] for x in reports)
    print(f"wrote {steps} timesteps of u (zip) and v (raw), {size}^3 float32, from {r['ranks']} ranks: "
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


def find_front(path, truth, share=0.005):
    """Find the most active part of the reaction front (the top ``share`` of v) with a query that reads
    only blocks whose statistics can hold such values; check it against a full scan."""
    lo, hi = float(np.quantile(truth, 1 - share)), float(truth.max())
    with hzio.open(path) as ds:
        coords, values = ds.query("v", lo, hi, time=ds.times[-1])
        r = ds.last_read_report
        ds.read(field="v", time=ds.times[-1])
        full = ds.last_read_report["bytes_read"]
    mask = (truth >= lo) & (truth <= hi)
    if not (np.array_equal(coords, np.argwhere(mask)) and np.array_equal(values, truth[mask])):
        raise AssertionError("the front query differs from a full scan of the simulation")
    span = (coords.min(0).tolist(), (coords.max(0) + 1).tolist()) if len(coords) else None
    print(f"front query v in [{lo:.4f}, {hi:.4f}]: {len(values)} samples ({100 * mask.mean():.2f}% of the domain) "
          f"in box {span}; {r['blocks_read']} blocks read, {r['blocks_skipped']} skipped by their statistics, "
          f"{r['bytes_read']} bytes vs {full} for a full read; equals a full scan")


def main(argv=None):
    comm = MPI.COMM_WORLD
    args = parse_args(argv)
    path = os.path.join(args.out, "gray_scott_mpi.idx")
    if comm.rank == 0:
        os.makedirs(args.out, exist_ok=True)
    comm.Barrier()
    slab, u, v, reports, sim = simulate_and_write(comm, path, args.size, args.steps, args.iterations)
    method = collective_read_back(comm, path, slab, u)
    u_all = comm.gather(u, root=0)
    v_all = comm.gather(v, root=0)
    if comm.rank == 0:
        print_write_reports(reports, args.size, args.steps)
        print(f"every rank read its slab back collectively ({method} reads) and found what it wrote; "
              f"simulation {sim:.1f} s")
        n = args.size
        box = ((n // 4,) * 3, (n - n // 4,) * 3)
        for field, truth in (("u", np.concatenate(u_all)), ("v", np.concatenate(v_all))):
            views = read_views(path, field, args.steps - 1, coarse_drop=6, box=box)
            check_views(views, truth, box)
            for png, shape, _scale in save_pictures(args.out, views, field, (float(truth.min()), float(truth.max()))):
                print(f"  saved {png} (mid-z slice {shape})")
        progressive(path, np.concatenate(u_all))
        find_front(path, np.concatenate(v_all))
        print(f"to look at every timestep in a browser: .venv/bin/hzio serve {path}  (docs/guide/viewer.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
