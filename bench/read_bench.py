"""Benchmark: hzio reads against same-run raw baselines: full reads (one process and collective over MPI
ranks), each coarse level, and progressive reads.

Parts: (a) one process, ``hzio.open(path).read()`` vs ``readinto`` of a raw file; (b) with several ranks,
each rank reads its z slab collectively (methods auto, independent, two-phase) vs ``pread`` of its slab
from the raw file, from datasets written by 1 process and by 2 ranks, read by all ranks and by 3; (c)
``read(level=h)`` for every level; (d) ``progressive()`` step by step. Every read is checked against the
source samples and a mismatch fails the run. Medians over ``--reps``, cold and warm; see bench/README.md.

    .venv/bin/python bench/read_bench.py [--size 512] [--reps 5]
    mpiexec -n 4 --oversubscribe .venv/bin/python bench/read_bench.py      # adds part (b)
"""

import argparse
import datetime
import filecmp
import os
import shutil
import sys
import time
from statistics import median

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, machine_facts, summarize, uptime_line, write_json
from mpi4py import MPI

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
KINDS = ("cold", "warm")
METHODS = ("auto", "independent", "two-phase")
WRITERS = {"serial": "1 process", "parallel2": "2 ranks"}


# ------------------------------------------------------------------------------------------ data
def source_slab(size, z0, z1):
    """Planes ``z0..z1`` of the ``size``^3 float32 source: waves plus per-plane seeded noise (any rank can
    rebuild any slab, so no rank needs the whole cube to check its read)."""
    axis = np.arange(size, dtype=np.float32)
    z = np.arange(z0, z1, dtype=np.float32)[:, None, None]
    slab = np.sin(axis[None, None, :] / 7) * np.cos(axis[None, :, None] / 11) + z / size
    for k in range(z1 - z0):
        slab[k] += np.random.default_rng((7, z0 + k)).standard_normal((size, size), dtype=np.float32) * 1e-3
    return slab


def level_view(source, bitmask, level):
    """The level-``level`` grid as a strided view of the full-resolution cube (sizes are powers of 2)."""
    strides = [1, 1, 1]
    for axis in bitmask[1 + level:]:
        strides[2 - int(axis)] *= 2
    return source[::strides[0], ::strides[1], ::strides[2]]


def check(name, result, expected):
    """Exit with FAIL unless ``result`` equals ``expected`` exactly (shape, dtype, every sample)."""
    if result.shape != expected.shape or result.dtype != expected.dtype or not np.array_equal(result, expected):
        raise SystemExit(f"FAIL: {name} returned wrong data (shape {result.shape}, expected {expected.shape})")


def slabs(size, ranks):
    """Near-equal z ranges ``[(z0, z1), ...]``, one per rank."""
    cuts = np.linspace(0, size, ranks + 1).round().astype(int)
    return [(int(cuts[r]), int(cuts[r + 1])) for r in range(ranks)]


def polite_wait(request):
    """Wait for a non-blocking MPI request while sleeping, so idle ranks leave the cores to busy ones."""
    while not request.Test():
        time.sleep(0.002)


def polite_reduce(comm, values, op):
    """All-reduce a list of floats over ``comm`` with a sleeping wait."""
    send = np.asarray(values, dtype=np.float64)
    recv = np.empty_like(send)
    polite_wait(comm.Iallreduce(send, recv, op=op))
    return recv.tolist()


# ------------------------------------------------------------------------------------------ readers
_REUSED = {}  # shape -> the array that "reused" raw reads fill again and again


def read_raw(path, size, z0, z1, reuse=False):
    """``pread`` planes ``z0..z1`` of the row-major raw file (one contiguous range) into a new array, or
    with ``reuse`` into the same array every time (touched once, before the first timed read)."""
    shape = (z1 - z0, size, size)
    if reuse:
        out = _REUSED.get(shape)
        if out is None:
            out = _REUSED[shape] = np.ones(shape, np.float32)
    else:
        out = np.empty(shape, np.float32)
    view, pos, start = memoryview(out).cast("B"), 0, z0 * size * size * 4
    fd = os.open(path, os.O_RDONLY)
    try:
        while pos < len(view):
            got = os.preadv(fd, [view[pos:]], start + pos)
            if got <= 0:
                raise SystemExit(f"FAIL: short read of {path} at {start + pos}")
            pos += got
    finally:
        os.close(fd)
    return out, {"bytes_read": out.nbytes, "blocks_read": 0, "method": "pread"}


def read_hzio(path, level=None, comm=None, box=None, method=None, threads=0):
    """Open the dataset (collectively with ``comm``), read, close; return the array and ``last_read_report``."""
    with hzio.open(path, comm=comm, threads=threads) as ds:
        out = ds.read(level=level) if comm is None else ds.read(box=box, method=method)
        return out, ds.last_read_report


def write_hzio(path, comm, size, z0, z1):
    """Write planes ``z0..z1`` (the whole cube with one process) as field ``data``; raw codec, HZ order."""
    with hzio.create(path, shape=(size,) * 3, fields={"data": "float32"}, codec="raw", comm=comm,
                     overwrite=True) as ds:
        ds.write(source_slab(size, z0, z1), offset=(z0, 0, 0))


# ------------------------------------------------------------------------------------------ parts
def measure(fn, expected, kind, times, key, reports):
    """One timed ``fn()`` (page cache dropped first when ``kind`` is cold), checked; True if really cold."""
    cold_ok = drop_page_cache() if kind == "cold" else True
    t0 = time.perf_counter()
    result, report = fn()
    times.setdefault(key + (kind,), []).append(time.perf_counter() - t0)
    check(str(key), result, expected)
    reports[key] = report
    return cold_ok


def part_serial(args, paths, source, times, reports):
    """(a) full read with one process: hzio vs raw ``readinto``, the order swapped every repetition."""
    read_raw(paths["raw"], args.size, 0, args.size, reuse=True)  # untimed: touches the reused array
    cases = {"raw": lambda: read_raw(paths["raw"], args.size, 0, args.size),
             "raw-reused": lambda: read_raw(paths["raw"], args.size, 0, args.size, reuse=True),
             "hzio": lambda: read_hzio(paths["serial"])}
    return all([measure(cases[name], source, kind, times, ("a", name), reports)
                for rep in range(args.reps) for name in sorted(cases, reverse=rep % 2 == 1) for kind in KINDS])


def part_levels(args, paths, source, times, reports):
    """(c) ``read(level=h)`` for every level, opening the dataset each time (its header tables too)."""
    path = paths["serial"]
    with hzio.open(path) as ds:
        max_level, bitmask = ds.max_level, ds.bitmask
    return all([measure(lambda: read_hzio(path, h), level_view(source, bitmask, h), kind, times, ("c", h), reports)
                for h in range(max_level + 1) for _ in range(args.reps) for kind in KINDS])


def part_progressive(args, paths, source, times, reports):
    """(d) ``progressive()``: seconds since opening and per step, bytes and blocks per step."""
    cold_ok, path = True, paths["serial"]
    for _ in range(args.reps):
        for kind in KINDS:
            cold_ok &= drop_page_cache() if kind == "cold" else True
            steps, t0 = [], time.perf_counter()
            with hzio.open(path) as ds:
                for level, arr in ds.progressive():  # checked after the loop, so the clock sees only hzio
                    steps.append((level, time.perf_counter() - t0, dict(ds.last_read_report), arr))
                bitmask = ds.bitmask
            previous = 0.0
            for level, since_open, report, arr in steps:
                check(f"progressive step {level}", arr, level_view(source, bitmask, level))
                times.setdefault(("d", level, kind, "since_open"), []).append(since_open)
                times.setdefault(("d", level, kind, "step"), []).append(since_open - previous)
                reports[("d", level)], previous = report, since_open
    return cold_ok


def parallel_case(comm, member, fn, expected, key, kind, times, reports):
    """One collective case: seconds = max over the member ranks; bytes and blocks summed over them."""
    cold_ok = drop_page_cache() if kind == "cold" and comm.rank == 0 else True
    seconds, report, bad = 0.0, {}, 0
    if member is not None:
        member.Barrier()
        t0 = time.perf_counter()
        result, report = fn()
        seconds = time.perf_counter() - t0
        bad = not np.array_equal(result, expected)
    bytes_read, blocks_read, bad = polite_reduce(
        comm, [report.get("bytes_read", 0), report.get("blocks_read", 0), bad], MPI.SUM)
    times.setdefault(key + (kind,), []).append(polite_reduce(comm, [seconds], MPI.MAX)[0])
    if bad:
        raise SystemExit(f"FAIL: {key} {kind}: {int(bad)} ranks read wrong data")
    reports[key] = {"bytes_read": int(bytes_read), "blocks_read": int(blocks_read),
                    "method": comm.bcast(report.get("method"), root=0)}
    return cold_ok


def part_parallel(args, comm, paths, times, reports):
    """(b) every rank reads its z slab: hzio collective (each method) vs ``pread`` of the raw slab."""
    cold_ok = True
    for ranks in [comm.size] + ([3] if comm.size >= 4 else []):
        member = comm.Split(0 if comm.rank < ranks else MPI.UNDEFINED, comm.rank)
        member = None if member == MPI.COMM_NULL else member
        z0, z1 = slabs(args.size, ranks)[comm.rank] if member else (0, 0)
        expected = source_slab(args.size, z0, z1) if member else None
        box = ((z0, 0, 0), (z1, args.size, args.size))
        if member:
            read_raw(paths["raw"], args.size, z0, z1, reuse=True)  # untimed: touches the reused array
        cases = {("raw", "pread"): lambda: read_raw(paths["raw"], args.size, z0, z1),
                 ("raw", "pread-reused"): lambda: read_raw(paths["raw"], args.size, z0, z1, reuse=True)}
        for writer in WRITERS:
            for m in METHODS:
                cases[(writer, m)] = lambda p=paths[writer], m=m: read_hzio(p, None, member, box, m, args.mpi_threads)
        names = list(cases)
        for rep in range(args.reps):
            for name in names[rep % len(names):] + names[:rep % len(names)]:
                for kind in KINDS:
                    cold_ok &= parallel_case(comm, member, cases[name], expected, ("b", ranks) + name, kind, times,
                                             reports)
        if member is not None:
            member.Free()
    return cold_ok


def prepare(args, comm, scratch):
    """Write the raw file and the dataset of one process (rank 0), then the dataset of 2 ranks (ranks 0-1).

    Returns the paths, the source cube (rank 0, else None) and whether the 2-rank files equal the others.
    """
    paths = {"raw": os.path.join(scratch, "data.raw"), **{w: os.path.join(scratch, f"{w}.idx") for w in WRITERS}}
    source = identical = None
    if comm.rank == 0:
        source = source_slab(args.size, 0, args.size)
        with open(paths["raw"], "wb") as f:
            f.write(memoryview(source).cast("B"))
            os.fsync(f.fileno())
        write_hzio(paths["serial"], None, args.size, 0, args.size)
    polite_wait(comm.Ibarrier())
    if comm.size >= 2:
        pair = comm.Split(0 if comm.rank < 2 else MPI.UNDEFINED, comm.rank)
        if pair != MPI.COMM_NULL:
            write_hzio(paths["parallel2"], pair, args.size, *slabs(args.size, 2)[comm.rank])
            pair.Free()
        polite_wait(comm.Ibarrier())
        if comm.rank == 0:
            a, b = paths["serial"][:-4], paths["parallel2"][:-4]
            names = sorted(os.listdir(a))
            identical = names == sorted(os.listdir(b)) and not any(filecmp.cmpfiles(a, b, names, shallow=False)[1:])
    return paths, source, identical


# ------------------------------------------------------------------------------------------ reporting
def report_serial(times, reports, nbytes, load):
    """Print (a) and return its JSON summary."""
    out = {name: {k: summarize(times[("a", name, k)], nbytes) for k in KINDS} for name in ("raw", "raw-reused", "hzio")}
    print(f"\n(a) full read, one process, open to array: {nbytes / MIB:.0f} MiB float32 (load {load})")
    print(f"  {'case':<12}{'cold s':>9}{'MiB/s':>8}{'warm s':>9}{'MiB/s':>8}{'bytes read':>12}")
    for name, s in out.items():
        s["bytes_read"] = reports[("a", name)]["bytes_read"]
        print(f"  {name:<12}" + "".join(f"{s[k]['median_s']:>9.3f}{s[k]['mib_per_s']:>8.0f}" for k in KINDS)
              + f"{s['bytes_read']:>12}")
    for base in ("raw", "raw-reused"):
        for k in KINDS:
            ratio = out[base][k]["median_s"] / out["hzio"][k]["median_s"]
            out[f"hzio_vs_{base.replace('-', '_')}_{k}"] = round(ratio, 3)
    print(f"  hzio x raw (throughput ratio): cold {out['hzio_vs_raw_cold']:.2f}, warm {out['hzio_vs_raw_warm']:.2f}; "
          f"x raw-reused: cold {out['hzio_vs_raw_reused_cold']:.2f}, warm {out['hzio_vs_raw_reused_warm']:.2f}")
    return out


def report_parallel(times, reports, nbytes, identical, load):
    """Print (b) and return its JSON summary."""
    out = {"files_of_2_ranks_equal_files_of_1_process": identical}
    for ranks in sorted({k[1] for k in reports if k[0] == "b"}, reverse=True):
        raw = {k: median(times[("b", ranks, "raw", "pread", k)]) for k in KINDS}
        print(f"\n(b) every rank opens and reads its z slab, {ranks} ranks, seconds = max over ranks (load {load})")
        print(f"  {'written by':<12}{'method':<13}{'ran':<13}{'cold s':>8}{'MiB/s':>7}{'x raw':>7}"
              f"{'warm s':>8}{'MiB/s':>7}{'x raw':>7}{'bytes read':>12}")
        for key in [("raw", "pread"), ("raw", "pread-reused")] + [(w, m) for w in WRITERS for m in METHODS]:
            s = {k: summarize(times[("b", ranks) + key + (k,)], nbytes) for k in KINDS}
            ratio = {k: round(raw[k] / s[k]["median_s"], 3) for k in KINDS}
            r = reports[("b", ranks) + key]
            out.setdefault(f"{ranks}_ranks", {})["/".join(key)] = dict(s, vs_raw=ratio, **r)
            print(f"  {WRITERS.get(key[0], 'raw file'):<12}{key[1]:<13}{r['method']:<13}" + "".join(
                f"{s[k]['median_s']:>8.3f}{s[k]['mib_per_s']:>7.0f}{ratio[k]:>7.2f}" for k in KINDS)
                + f"{r['bytes_read']:>12}")
        reused = {k: median(times[("b", ranks, "raw", "pread-reused", k)]) for k in KINDS}
        mine = {k: median(times[("b", ranks, "serial", "independent", k)]) for k in KINDS}
        print("  1 process / independent x raw into a reused array: " + ", ".join(
            f"{k} {reused[k] / mine[k]:.2f}" for k in KINDS))
    print(f"  the 2-rank dataset's files are byte-identical to the 1-process ones: {identical}")
    return out


def report_levels(times, reports, full, load):
    """Print (c) and return its JSON summary; ``full`` is (a)'s hzio summary (with its bytes read)."""
    print(f"\n(c) open + read(level=h) of the whole box vs a full read ({full['bytes_read']} bytes, cold "
          f"{full['cold']['median_s']:.3f} s, warm {full['warm']['median_s']:.3f} s) (load {load})")
    print(f"  {'level':>5}{'blocks':>8}{'bytes read':>12}{'% full':>9}{'cold ms':>9}{'x full':>8}{'warm ms':>9}"
          f"{'x full':>8}")
    out = []
    for h in sorted(k[1] for k in reports if k[0] == "c"):
        r, (c, w) = reports[("c", h)], (median(times[("c", h, k)]) for k in KINDS)
        out.append({"level": h, "blocks_read": r["blocks_read"], "bytes_read": r["bytes_read"],
                    "fraction_of_full_read_bytes": r["bytes_read"] / full["bytes_read"], "cold_s": c, "warm_s": w,
                    "cold_vs_full": c / full["cold"]["median_s"], "warm_vs_full": w / full["warm"]["median_s"]})
        print(f"  {h:>5}{r['blocks_read']:>8}{r['bytes_read']:>12}{100 * r['bytes_read'] / full['bytes_read']:>9.3f}"
              f"{1e3 * c:>9.1f}{out[-1]['cold_vs_full']:>8.3f}{1e3 * w:>9.1f}{out[-1]['warm_vs_full']:>8.3f}")
    return out


def report_progressive(times, reports, full, load):
    """Print (d) and return its JSON summary."""
    print(f"\n(d) progressive(): per step; cold = page cache dropped before opening (load {load})")
    print(f"  {'level':>5}{'blocks':>8}{'bytes':>12}{'cold step ms':>14}{'since open':>12}{'warm step ms':>14}"
          f"{'since open':>12}")
    steps = []
    for h in sorted(k[1] for k in reports if k[0] == "d"):
        r = reports[("d", h)]
        v = {f"{k}_{m}_s": median(times[("d", h, k, m)]) for k in KINDS for m in ("step", "since_open")}
        steps.append(dict(level=h, blocks_read=r["blocks_read"], bytes_read=r["bytes_read"], **v))
        print(f"  {h:>5}{r['blocks_read']:>8}{r['bytes_read']:>12}" + "".join(
            f"{1e3 * v[f'{k}_step_s']:>14.1f}{1e3 * v[f'{k}_since_open_s']:>12.1f}" for k in KINDS))
    out = {"steps": steps}
    for k in KINDS:
        first, last = steps[0][f"{k}_since_open_s"], steps[-1][f"{k}_since_open_s"]
        out[k] = {"first_result_s": first, "first_vs_full_read": first / full[k]["median_s"],
                  "all_steps_vs_full_read": last / full[k]["median_s"]}
        print(f"  {k}: first result after {1e3 * first:.1f} ms ({out[k]['first_vs_full_read']:.4f} x a full read); "
              f"all steps {out[k]['all_steps_vs_full_read']:.2f} x a full read")
    return out


# ------------------------------------------------------------------------------------------ main
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (default 5)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "read.json"), help="JSON output")
    parser.add_argument("--parts", default="abcd", help="parts to run (default abcd; a always runs with c or d; "
                        "b needs 2+ ranks)")
    parser.add_argument("--mpi-threads", type=int, default=1, help="hzio threads per rank in part b (default 1)")
    add_plot_option(parser)
    return parser.parse_args(argv)


def load_now():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_parts(args, comm, paths, source, identical):
    """Parts a, c, d on rank 0 (the others sleep), then b on every rank; returns (results, times, cold_ok)."""
    results, times, reports, cold_ok = {}, {}, {}, True
    if comm.rank == 0 and set("acd") & set(args.parts):
        full = lambda: results["a_full_read"]["hzio"]  # noqa: E731
        parts = [("a_full_read", part_serial, lambda load: report_serial(times, reports, source.nbytes, load)),
                 ("c_levels", part_levels, lambda load: report_levels(times, reports, full(), load)),
                 ("d_progressive", part_progressive, lambda load: report_progressive(times, reports, full(), load))]
        for name, run, show in (p for p in parts if p[0][0] in args.parts + "a"):
            load = load_now()
            cold_ok &= run(args, paths, source, times, reports)
            results[name] = show(load)
    polite_wait(comm.Ibarrier())
    if comm.size >= 2 and "b" in args.parts:
        load = load_now()
        cold_ok &= part_parallel(args, comm, paths, times, reports)
        if comm.rank == 0:
            results["b_parallel"] = report_parallel(times, reports, args.size**3 * 4, identical, load)
    return results, times, cold_ok


def main(argv=None):
    args = parse_args(argv)
    comm = MPI.COMM_WORLD
    scratch = comm.bcast(os.path.join(os.path.abspath(args.dir), f"read_{os.getpid()}"), root=0)
    if comm.rank == 0:
        os.makedirs(scratch)
        facts, uptime_before = machine_facts(scratch), uptime_line()
        print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
              f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
        print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}")
        print(f"ranks: {comm.size}; cube {args.size}^3 float32; reps {args.reps}", flush=True)
    try:
        polite_wait(comm.Ibarrier())
        results, times, cold_ok = run_parts(args, comm, *prepare(args, comm, scratch))
    except SystemExit as e:  # a wrong read: the other ranks may be waiting in a collective, so abort them
        if comm.size > 1:
            print(e, flush=True)
            shutil.rmtree(scratch, ignore_errors=True)
            comm.Abort(1)
        raise
    finally:
        polite_wait(comm.Ibarrier())
        if comm.rank == 0:
            shutil.rmtree(scratch, ignore_errors=True)
    cold_ok = polite_reduce(comm, [0 if cold_ok else 1], MPI.SUM)[0] == 0
    if comm.rank != 0:
        return 0
    if not cold_ok:
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); 'cold' reads are warm")
    uptime_after = uptime_line()
    print(f"\nall reads equal the source; uptime at the end: {uptime_after}")
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join(([f"mpiexec -n {comm.size} --oversubscribe"] if comm.size > 1 else [])
                                  + [os.path.relpath(sys.executable, REPO_ROOT), "bench/read_bench.py"]
                                  + (argv if argv is not None else sys.argv[1:])),
              "size": args.size, "dtype": "float32", "bytes": args.size**3 * 4, "reps": args.reps,
              "ranks": comm.size, "mpi_threads": args.mpi_threads, "cold_cache_dropped": cold_ok,
              "machine": facts, "uptime_before": uptime_before, "uptime_after": uptime_after, "results": results,
              "seconds": {"/".join(map(str, k)): [round(s, 5) for s in v] for k, v in times.items()},
              "versions": {"hzio": hzio.__version__, "numpy": np.__version__,
                           "hzio_core_built": HZIO_BUILT}}
    write_json(args.json, report)
    plot_after_run(args, "read_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
