"""A synthetic simulation loop writing a timestep every step, with and without dedicated I/O ranks.

Run it with ``mpiexec -n N .venv/bin/python bench/io_ranks_bench.py ...`` (``-h`` lists the options). The
last rank of each node (``$HZIO_RANKS_PER_NODE`` ranks, or the machine) is the I/O rank in the ``io``
mode; the ``sync`` mode leaves those ranks idle, so both modes compute on the same compute ranks with the
same boxes. Each step computes for ``--compute-seconds`` (a NumPy stencil on the rank's box, or an idle
wait as a GPU kernel leaves the CPU), then writes the box (``hzio.create(..., comm=...)``, durable): in
``sync`` mode the flush writes and commits; in ``io`` mode it hands the box to the node's I/O rank.
Reported per mode, codec and compute kind: the write time the compute ranks see per step (slowest rank,
median over steps), the time to solution (the loop plus the final wait for durability) and the
throughput of the written bytes over the loop.
"""

import argparse
import os
import statistics
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import machine_facts, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
# Synchronous; through the I/O ranks copying the output into the node's buffer; and through them with the
# output computed into the buffer (io.shared_array), handed over without a copy.
MODES = ("sync", "io", "io-in-place")


def sweep(src, dst):
    """One Jacobi sweep of a 7-point stencil from ``src`` into ``dst`` (the boundary planes stay)."""
    dst[1:-1, 1:-1, 1:-1] = (src[:-2, 1:-1, 1:-1] + src[2:, 1:-1, 1:-1] + src[1:-1, :-2, 1:-1]
                             + src[1:-1, 2:, 1:-1] + src[1:-1, 1:-1, :-2] + src[1:-1, 1:-1, 2:]) / 6.0


def compute(kind, seconds, state, work, out):
    """Busy the rank for ``seconds`` and return the step's output. ``stencil``: Jacobi sweeps from ``state``
    through the two private arrays ``work`` while time remains, the last one into ``out`` (the array the
    step writes); ``idle``: a wait, as a GPU kernel leaves the CPU, and ``state`` is the output (its
    device-to-host copy is not modelled)."""
    if kind == "idle":
        time.sleep(seconds)
        return state
    end = time.perf_counter() + seconds
    src = state
    for i in range(1 << 30):
        if time.perf_counter() >= end:
            break
        sweep(src, work[i % 2])
        src = work[i % 2]
    sweep(src, out)
    return out


def run_case(comm, io, args, codec, kind, path, in_place=False):
    """One loop of ``args.steps`` steps on the compute ranks ``comm``, through ``io`` (I/O ranks) or
    synchronously (``io`` None); returns (per-step write seconds seen by the slowest rank, total seconds).
    Each step writes its output array with ``copy=False`` (it stays unchanged until the flush returns).
    ``in_place``: the output arrays lie in the node's shared buffer (``io.shared_array``), two of them
    used in turn, so that the flush hands them over without a copy and the one being copied out by the
    I/O rank is not written meanwhile."""
    n = args.size
    z0, z1 = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
    a = np.random.default_rng(comm.rank).standard_normal((z1 - z0, n, n)).astype(np.float32)
    work = [a.copy(), a.copy()]
    if in_place:
        outs = [io.shared_array(a.shape, a.dtype), io.shared_array(a.shape, a.dtype)]
        for o in outs:
            o[...] = a
        a = outs[1]  # the idle kind's output
    else:
        outs = [a.copy(), a.copy()]
    opts = dict(fields={"t": "float32"}, times=range(args.steps), codec=codec, overwrite=True, durable=True)
    extra = {"io": io} if io is not None else {}
    comm.Barrier()
    start = time.perf_counter()
    writes = []
    with hzio.create(path, shape=(n, n, n), comm=comm, **opts, **extra) as ds:
        for step in range(args.steps):
            a = compute(kind, args.compute_seconds, a, work, outs[step % 2])
            comm.Barrier()
            t0 = time.perf_counter()
            ds.write(a, offset=(z0, 0, 0), time=step, copy=False)
            ds.flush()
            writes.append(comm.allreduce(time.perf_counter() - t0, op=max_op()))
    if io is not None:
        io.wait()
    comm.Barrier()
    return writes, time.perf_counter() - start


def max_op():
    from mpi4py import MPI
    return MPI.MAX


def main():
    from mpi4py import MPI

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="the global cube's side (float32; default 256)")
    parser.add_argument("--steps", type=int, default=6, help="timesteps per loop (default 6)")
    parser.add_argument("--compute-seconds", type=float, default=0.5, help="compute phase per step (default 0.5)")
    parser.add_argument("--kinds", default="stencil,idle", help="compute kinds: stencil, idle (default both)")
    parser.add_argument("--codecs", default="raw,zip", help="codecs (default raw,zip)")
    parser.add_argument("--buffer-mib", type=int, default=256, help="each I/O rank's buffer in MiB (default 256)")
    parser.add_argument("--dir", default=os.path.join(HERE, "..", "build", "bench_tmp"), help="scratch folder")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "io_ranks_bench.json"), help="JSON output")
    add_plot_option(parser)
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    def split():
        return hzio.start_io_ranks(world, per_node=1, buffer_bytes=args.buffer_mib * MIB)

    io = split()
    compute_comm = io.compute_comm  # the same compute ranks in both modes
    os.makedirs(args.dir, exist_ok=True)
    load_before = uptime_line() if world.rank == 0 else None
    cases = {}
    for codec in args.codecs.split(","):
        for kind in args.kinds.split(","):
            for mode in MODES:
                key = f"{mode} {codec} {kind}"
                path = os.path.join(args.dir, f"io_ranks_{mode}.idx")
                through = mode != "sync"
                if through and io.is_io_rank:
                    io.serve()
                elif not io.is_io_rank:
                    writes, total = run_case(compute_comm, io if through else None, args, codec, kind, path,
                                             in_place=mode == "io-in-place")
                    if through:
                        io.close()
                    nbytes = args.size ** 3 * 4 * args.steps
                    cases[key] = {"write_seconds": writes, "write_median": statistics.median(writes),
                                  "total_seconds": total, "compute_seconds": args.compute_seconds * args.steps,
                                  "bytes": nbytes, "mib_per_s": nbytes / MIB / total}
                    if compute_comm.rank == 0:
                        print(f"{key:>22}: write seen per step {statistics.median(writes) * 1e3:8.1f} ms (median), "
                              f"time to solution {total:6.2f} s", flush=True)
                world.Barrier()
                if through:
                    io = split()  # serve() has ended: a fresh split for the next loop
                    compute_comm = io.compute_comm
    leader = compute_comm is not None and compute_comm.rank == 0
    if leader:
        for codec in args.codecs.split(","):
            for kind in args.kinds.split(","):
                s = cases[f"sync {codec} {kind}"]
                for mode in MODES[1:]:
                    i = cases[f"{mode} {codec} {kind}"]
                    i["visible_vs_sync"] = i["write_median"] / s["write_median"]
                    i["solution_vs_sync"] = i["total_seconds"] / s["total_seconds"]
        report = {"command": " ".join(["io_ranks_bench.py"] + sys.argv[1:]), "ranks": world.size,
                  "compute_ranks": compute_comm.size, "config": vars(args), "cases": cases,
                  "machine": machine_facts(args.dir), "uptime_before": load_before, "uptime_after": uptime_line(),
                  "target": {"visible_vs_sync": 0.05}}
        write_json(args.json, report)
        plot_after_run(args, "io_ranks_bench")
    if io.is_io_rank:
        io.serve()  # the last split: nothing to write, the compute ranks close it at once
    else:
        io.close()


if __name__ == "__main__":
    main()
