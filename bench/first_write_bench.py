"""The first collective write of fresh processes, with a disk timeline: where a one-shot write's time goes.

Each repetition starts ``mpiexec -n N`` anew, so its first timed write is the first of its processes; with
``--writes K`` the same processes then write K - 1 more times (each a new dataset), timed alike. Each rank
owns one box of a global float32 cube and, between two barriers, either writes its box to a file of its own
(``os.write`` per MiB, ``fsync``: file per process) or takes part in one hzio collective write
(``hzio.create(..., comm=...)``, ``write``, ``close`` with ``durable=True``), with the default staging copy
(``hzio``) or ``copy=False`` (``hzio-nocopy``), or from arrays in node memory (``hzio-node``:
``hzio.shared_array``, read where they lie by the aggregators), through one I/O rank from a copy
(``hzio-io``) or from arrays in the node's buffer (``hzio-io-shared``); ``one`` is one process writing the
whole cube alone (the serial writer on every core), the rate a collective write should at least reach. Rank 0
samples the disk's ``/sys/block/<dev>/stat`` every ``--sample-ms`` on a helper thread while the ranks write, and
every rank notes when each call returned. ``--idle S`` waits S seconds before each fresh run: memory the machine has
not touched for a while can cost more on its first touch (see bench/README.md), which a first write pays.

    .venv/bin/python bench/first_write_bench.py [--ranks 4] [--size 512] [--reps 5] [--writes 2] [--idle 0,40]
        [--cases fpp,hzio,hzio-nocopy,hzio-node,hzio-io,hzio-io-shared,one]
"""

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

from bench_figures import add_plot_option, plot_after_run
from bench_util import machine_facts, uptime_line

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
SECTOR = 512  # /sys/block/<dev>/stat counts 512-byte sectors whatever the device's block size
VMSTAT_KEYS = ("pgfault", "thp_fault_alloc", "compact_stall", "pgmajfault")
# hzio: write(copy=True), the default (write returns at once, the flush reads a copy); hzio-nocopy:
# write(copy=False) (the flush reads the caller's array, which must not change until then); hzio-node: the
# same from arrays in node memory (hzio.shared_array, filled before the clock starts), which the aggregators
# read where they lie
# hzio-io: through one I/O rank started for the run (an extra process: --ranks compute ranks and one more),
# close() returning once the I/O rank has made the timestep durable
# hzio-io-shared: the same, each rank's array lying in the node's buffer (io.shared_array, as a simulation
# computes its output there) and written with copy=False: handed over without a copy
# one: one process alone writes the whole cube (hzio.create without comm, its threads on every core), the
# one-process writer a collective write should at least match
CASES = ("fpp", "hzio", "hzio-nocopy", "hzio-node", "hzio-io", "hzio-io-shared", "one")


# ------------------------------------------------------------------------------------------ child (under MPI)
def block_device(path):
    """The ``/sys/block`` name of the disk holding ``path`` (a partition's parent disk), or None."""
    dev = os.stat(path).st_dev
    link = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    if not os.path.exists(link):
        return None
    real = os.path.realpath(link)
    name = os.path.basename(real)
    if os.path.exists(os.path.join(real, "partition")):
        name = os.path.basename(os.path.dirname(real))
    return name if os.path.exists(f"/sys/block/{name}/stat") else None


class DiskSampler:
    """Samples ``/sys/block/<dev>/stat`` (sectors written, requests in flight) every ``period`` seconds."""

    def __init__(self, device, period):
        self.path, self.period, self.samples = f"/sys/block/{device}/stat", period, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self):
        with open(self.path) as f:
            v = f.read().split()
        return time.perf_counter(), int(v[6]) * SECTOR, int(v[8])  # sectors written, in flight

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self._read())
            self._stop.wait(self.period)
        self.samples.append(self._read())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def vmstat():
    out = {}
    with open("/proc/vmstat") as f:
        for line in f:
            key, value = line.split()
            if key in VMSTAT_KEYS:
                out[key] = int(value)
    return out


def child(args):
    """One fresh run under mpiexec: the timed write, then rank 0 prints one JSON line."""
    import hzio
    import numpy as np
    from mpi4py import MPI

    comm, io = MPI.COMM_WORLD, None
    if args.case == "one" and comm.size != 1:
        raise SystemExit("first_write_bench: the one-process case runs in one process")
    if args.case.startswith("hzio-io"):  # the last rank is the machine's I/O rank; its buffer holds one timestep
        io = hzio.start_io_ranks(comm, per_node=1, buffer_bytes=args.size ** 3 * 4 + 64 * MIB, in_flight=1)
        if io.is_io_rank:
            io.serve()
            return
        comm = io.compute_comm
    rank, size = comm.rank, comm.size
    n = args.size
    parts = [1, 1, 1]  # near-cubic decomposition of the ranks, slower axes last to split
    left, axis = size, 2
    while left > 1:
        parts[axis] *= 2
        left //= 2
        axis = (axis - 1) % 3
    if parts[0] * parts[1] * parts[2] != size:
        raise SystemExit("first_write_bench: --ranks must be a power of two")
    coord = np.unravel_index(rank, parts)
    shape = tuple(n // p for p in parts)
    offset = tuple(int(c) * s for c, s in zip(coord, shape))
    a = np.random.default_rng(rank).random(shape, dtype=np.float32)  # touched before the clock starts
    if args.case in ("hzio-io-shared", "hzio-node"):
        a_shared = io.shared_array(shape, np.float32) if io else hzio.shared_array(comm, shape, np.float32)
        a_shared[...] = a
        a = a_shared
    for index in range(args.writes):
        one_write(args, comm, io, np, hzio, a, offset, index)
    if io is not None:
        io.close()


def one_write(args, comm, io, np, hzio, a, offset, index):
    """One timed write (the `index`-th of these processes): rank 0 prints its JSON line."""
    rank, n = comm.rank, args.size
    folder = os.path.join(args.dir, "run")
    if rank == 0:  # the previous write's files go first, outside the timing
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        os.sync()
    comm.Barrier()
    before = vmstat() if rank == 0 else None
    device = block_device(folder) if rank == 0 else None
    sampler = DiskSampler(device, args.sample_ms / 1000) if device else None
    marks = {}
    if sampler:
        sampler.__enter__()
    comm.Barrier()
    t0 = time.perf_counter()
    report = None
    if args.case == "fpp":
        fd = os.open(os.path.join(folder, f"rank{rank}.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        view = memoryview(a.reshape(-1).view(np.uint8))
        for i in range(0, len(view), MIB):
            os.write(fd, view[i:i + MIB])
        marks["written"] = time.perf_counter() - t0
        os.fsync(fd)
        os.close(fd)
        marks["durable"] = time.perf_counter() - t0
    else:
        through = {"io": io} if io is not None else {}
        if args.case != "one":
            through["comm"] = comm
        ds = hzio.create(os.path.join(folder, "ds.idx"), shape=(n, n, n), fields={"f": "float32"}, codec="raw",
                         overwrite=True, durable=True, blocks_per_file=args.blocks_per_file or None, **through)
        marks["create"] = time.perf_counter() - t0
        if args.case == "one":  # the serial writer has no staging copy: write() writes
            ds.write(a, offset=offset, field="f")
        else:
            ds.write(a, offset=offset, field="f", copy=args.case not in ("hzio-nocopy", "hzio-node", "hzio-io-shared"))
        marks["write"] = time.perf_counter() - t0
        ds.close()
        marks["close"] = time.perf_counter() - t0
        report = dataclasses.asdict(ds.last_write_report) if io is None and args.case != "one" else None
    comm.Barrier()
    wall = time.perf_counter() - t0
    if sampler:
        sampler.__exit__()
    all_marks = comm.gather(marks, root=0)
    if rank != 0:
        return
    after = vmstat()
    timeline = [(round(t - t0, 5), b, q) for t, b, q in sampler.samples] if sampler else []
    print(json.dumps({"case": args.case, "write": index, "wall": wall, "marks": all_marks, "report": report,
                      "timeline": timeline, "vmstat": {k: after.get(k, 0) - before.get(k, 0) for k in VMSTAT_KEYS},
                      "bytes": n ** 3 * 4}), flush=True)


# ------------------------------------------------------------------------------------------ parent
def disk_summary(timeline, wall):
    """From (seconds, bytes written, in flight) samples: when the first and last bytes went to the disk,
    the bytes, and the rate while it wrote."""
    if len(timeline) < 2:
        return {}
    base = timeline[0][1]
    moved = [(t, b - base) for t, b, _ in timeline]
    total = moved[-1][1]
    first = next((t for t, b in moved if b > 0), None)
    last = next((t for t, b in moved if b >= total), None)
    busy = [t for (t, _, q) in timeline if q > 0]
    writing = last - first if first is not None and last else 0
    return {"disk_mib": round(total / MIB, 1), "first_byte_s": first, "last_byte_s": last,
            "busy_s": round(len(busy) * (timeline[1][0] - timeline[0][0]), 4) if busy else 0.0,
            "mib_per_s_while_writing": round(total / MIB / writing, 1) if writing > 0 else None,
            "tail_after_last_byte_s": round(wall - last, 4) if last else None}


def run_once(args, case, idle):
    if idle:
        time.sleep(idle)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    ranks = 1 if case == "one" else args.ranks + (1 if case.startswith("hzio-io") else 0)
    # mpiexec binds each of 1 or 2 ranks to a core: the one process's writer threads need every core
    binding = ["--bind-to", "none"] if case == "one" else []
    cmd = ["mpiexec", "-n", str(ranks), *binding, sys.executable, os.path.abspath(__file__), "--child", case,
           "--size", str(args.size), "--writes", str(args.writes), "--dir", args.dir,
           "--sample-ms", str(args.sample_ms), "--blocks-per-file", str(args.blocks_per_file)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited with {out.returncode}:\n{out.stderr[-2000:]}")
    runs = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    for r in runs:
        r["idle_s"] = idle
        r["disk"] = disk_summary(r["timeline"], r["wall"])
    return runs


def print_header():
    print(f"  {'case':<11} {'write':>5} {'idle s':>6} {'wall s':>7} {'MiB/s':>6}  "
          f"{'create':>6} {'write':>6} {'close':>6}  "
          f"{'stage':>6} {'hz':>6} {'aggr':>6} {'write':>6} {'other':>6} {'total':>6}  "
          f"{'disk on':>7} {'disk off':>8} {'disk MiB/s':>10}  "
          f"{'THP faults':>10} {'faults':>7}")


def print_runs(runs):
    for r in runs:
        m = r["marks"]
        calls = {k: max(x.get(k, 0) for x in m) for k in ("create", "write", "close")}
        if r["case"] == "fpp":
            calls = {"create": 0, "write": max(x["written"] for x in m), "close": max(x["durable"] for x in m)}
        p = r["report"]["max"] if r["report"] else {}
        d = r["disk"]
        print(f"  {r['case']:<11} {r['write'] + 1:>5} {r['idle_s']:>6.0f} {r['wall']:>7.3f} "
              f"{r['bytes'] / MIB / r['wall']:>6.0f}  "
              f"{calls['create']:>6.3f} {calls['write']:>6.3f} {calls['close']:>6.3f}  "
              + "".join(f"{p.get(k, 0):>6.3f} " for k in ("stage", "hz", "aggregate", "write", "other", "total"))
              + f" {d.get('first_byte_s') or 0:>7.3f} {d.get('last_byte_s') or 0:>8.3f} "
              f"{d.get('mib_per_s_while_writing') or 0:>10.0f}  {r['vmstat']['thp_fault_alloc']:>10} "
              f"{r['vmstat']['pgfault']:>7}", flush=True)


def parent(args):
    idles = [float(x) for x in args.idle.split(",")]
    os.makedirs(args.dir, exist_ok=True)
    machine, uptime_before = machine_facts(args.dir), uptime_line()
    runs = []
    print(f"first_write_bench: {args.ranks} fresh ranks, {args.size}^3 float32 "
          f"({args.size ** 3 * 4 / MIB:.0f} MiB), {args.reps} reps per case and idle time, {args.writes} writes "
          "per run\n"
          "  (call columns: seconds from the start to each call's return, slowest rank; phases: the write report's\n"
          "  max over ranks; disk on/off: first and last byte written; faults: the machine's during the run)")
    print_header()
    for rep in range(args.reps):
        for idle in idles:
            for case in (args.cases if rep % 2 == 0 else args.cases[::-1]):
                fresh = run_once(args, case, idle)
                runs += fresh
                print_runs(fresh)
    summary = {}
    for idle in idles:
        for which, chosen in (("first", lambda r: r["write"] == 0), ("later", lambda r: r["write"] > 0)):
            for case in args.cases:
                walls = [r["wall"] for r in runs if r["case"] == case and r["idle_s"] == idle and chosen(r)]
                if walls:
                    summary[f"{case}@{idle:g}/{which}"] = {"median_s": round(statistics.median(walls), 4),
                                                           "min_s": round(min(walls), 4),
                                                           "max_s": round(max(walls), 4)}
            f = summary.get(f"fpp@{idle:g}/{which}")
            for case in (c for c in args.cases if c != "fpp"):
                h = summary.get(f"{case}@{idle:g}/{which}")
                if h and f:
                    print(f"\n  idle {idle:g} s, {which} write{'s' if which == 'later' else ''}: {case} median "
                          f"{h['median_s']:.3f} s (min {h['min_s']:.3f}, max {h['max_s']:.3f}), file per process "
                          f"{f['median_s']:.3f} s: {case} at {f['median_s'] / h['median_s']:.2f} x file per "
                          "process")
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv),
              "machine": machine, "uptime_before": uptime_before, "uptime_after": uptime_line(),
              "ranks": args.ranks, "size": args.size, "reps": args.reps, "idles": idles, "summary": summary,
              "runs": runs}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
        plot_after_run(args, "first_write_bench")
    shutil.rmtree(os.path.join(args.dir, "run"), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4, help="MPI ranks, a power of two (default 4)")
    ap.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    ap.add_argument("--reps", type=int, default=5, help="fresh runs per case and idle time (default 5)")
    ap.add_argument("--idle", default="0,40", help="seconds to wait before each run, comma-separated (default 0,40)")
    ap.add_argument("--writes", type=int, default=2,
                    help="writes per fresh run: the first, then later ones in the same processes (default 2)")
    ap.add_argument("--blocks-per-file", type=int, default=0,
                    help="the dataset's blocks per data file (default 0: hzio's default, files of 128 MiB)")
    ap.add_argument("--sample-ms", type=float, default=2.0, help="disk sampling period (default 2 ms)")
    ap.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp", "first_write"))
    ap.add_argument("--json", default=os.path.join(HERE, "results", "first_write.json"))
    add_plot_option(ap)
    ap.add_argument("--cases", default="fpp,hzio,hzio-nocopy,hzio-node,hzio-io,hzio-io-shared,one",
                    help="comma-separated, in the order of the first repetition (default: all six)")
    ap.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.cases = args.cases.split(",")
    if not args.cases or any(c not in CASES for c in args.cases):
        ap.error(f"--cases: choose among {', '.join(CASES)}")
    if args.child:
        args.case = args.child
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
