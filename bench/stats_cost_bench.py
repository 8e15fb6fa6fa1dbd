"""Benchmark: what the per-block statistics (min/max, computed by every hzio writer) cost during a write.

hzio has no switch to turn statistics off, so the cost cannot be measured as "write with minus write
without". It is bounded and estimated three ways, all in the same run and all single-threaded, and
compared with the time of ``hzio.create + write + close`` (raw codec, HZ order, ``durable=False`` and
``True``, 1 thread and one per core):

* ``writer gap``: the write's wall time minus the phases its report attributes (``last_write_report``).
  For the raw codec the writer computes statistics between its timed ``hz`` copy and its timed ``write``,
  so with 1 thread the gap holds the statistics plus Python, create and bookkeeping: an **upper bound**.
* ``hzio kernel``: ``hzio.index(path)`` on the written dataset (warm page cache) runs the same statistics
  function over the same blocks; minus a ``pread`` of every block and an estimate of its durable sidecar
  writes, what is left is the statistics kernel (plus small per-block overhead).
* ``numpy``: ``min`` and ``max`` per block over the same block bytes (two passes, one fused in hzio).

The NumPy per-block results must equal ``ds.blocks()`` statistics, and every write must read back equal
to the source; otherwise the run fails. Medians over ``--reps``; see bench/README.md.

    .venv/bin/python bench/stats_cost_bench.py [--size 512] [--reps 5]
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import machine_facts, summarize, uptime_line

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
TARGET_SHARE = 0.05  # statistics at most 5% of the write time; printed, never asserted
PHASES = ("restructure", "hz", "aggregate", "compress", "write", "commit")


def make_source(size):
    """``size``^3 float32: smooth waves plus seeded noise."""
    axis = np.arange(size, dtype=np.float32)
    cube = np.sin(axis[None, None, :] / 7) * np.cos(axis[None, :, None] / 11) + axis[:, None, None] / size
    cube += np.random.default_rng(3).standard_normal(cube.shape, dtype=np.float32) * np.float32(1e-3)
    return cube


def write_once(path, source, durable, threads):
    """``hzio.create`` + ``write`` + ``close``; returns (wall seconds, the write report)."""
    t0 = time.perf_counter()
    with hzio.create(path, shape=source.shape, fields={"data": "float32"}, codec="raw", durable=durable,
                     threads=threads, overwrite=True) as ds:
        ds.write(source)
    return time.perf_counter() - t0, ds.last_write_report


def time_writes(args, source, path):
    """Every (durable, threads) case ``reps`` times in rotated order; each result read back and checked."""
    cases = [(d, t) for d in (False, True) for t in (1, 0)]
    wall, phases = {c: [] for c in cases}, {c: {p: [] for p in PHASES} for c in cases}
    for rep in range(args.reps):
        for case in cases[rep % len(cases):] + cases[:rep % len(cases)]:
            shutil.rmtree(path[:-4], ignore_errors=True)
            os.sync()  # no earlier writeback paid by this case
            seconds, report = write_once(path, source, *case)
            wall[case].append(seconds)
            for p in PHASES:
                phases[case][p].append(report["max"].get(p, 0.0))
            with hzio.open(path) as ds:
                if not np.array_equal(ds.read(), source):
                    raise SystemExit(f"FAIL: the dataset written with durable={case[0]} threads={case[1]} "
                                     "reads back different from the source")
    return wall, phases


def present_blocks(path):
    with hzio.open(path) as ds:
        blocks = ds.blocks()
    return blocks[blocks["present"]]


def load_blocks(path):
    """Every block's payload, in block order, as a (blocks, samples) float32 array (untimed)."""
    blocks = present_blocks(path)
    out = np.empty((len(blocks), int(blocks["size"][0]) // 4), np.float32)
    for row, b in zip(out, blocks):
        with open(b["file"], "rb", buffering=0) as f:
            f.seek(int(b["offset"]))
            f.readinto(memoryview(row).cast("B"))
    return out


def pread_seconds(path):
    """Seconds to ``pread`` every block into one reused block buffer, as ``hzio.index`` reads them."""
    blocks = present_blocks(path)
    where = [(str(b["file"]), int(b["offset"])) for b in blocks]
    buffer = bytearray(int(blocks["size"][0]))
    fds = {f: os.open(f, os.O_RDONLY) for f, _ in where}
    try:
        t0 = time.perf_counter()
        for f, offset in where:
            if os.preadv(fds[f], [buffer], offset) != len(buffer):
                raise SystemExit(f"FAIL: short read of {f} at {offset}")
        return time.perf_counter() - t0
    finally:
        for fd in fds.values():
            os.close(fd)


def check_stats(path, mins, maxs):
    """Fail unless hzio's block statistics equal NumPy's over the same block bytes."""
    blocks = present_blocks(path)
    if not (np.array_equal(blocks["min"], mins.astype(np.float64))
            and np.array_equal(blocks["max"], maxs.astype(np.float64))):
        raise SystemExit("FAIL: hzio's block statistics differ from NumPy's min/max over the same blocks")


def sidecar_write_seconds(path, scratch):
    """Time writing files like hzio.index's sidecars, durably (write, fsync, rename, fsync the folder)."""
    folder = path[:-4]
    sizes = [os.path.getsize(os.path.join(folder, n)) for n in sorted(os.listdir(folder)) if n.endswith(".hzstats")]
    t0 = time.perf_counter()
    for k, size in enumerate(sizes):
        tmp, final = os.path.join(scratch, f"side{k}.tmp"), os.path.join(scratch, f"side{k}")
        with open(tmp, "wb") as f:
            f.write(b"\0" * size)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
        fd = os.open(scratch, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    return time.perf_counter() - t0, len(sizes)


def time_stats(args, path, scratch):
    """The three single-thread estimates' ingredients, warm page cache, ``reps`` times each."""
    data = load_blocks(path)  # also warms the page cache
    out = {"pread": [], "numpy": [], "index": [], "sidecars": []}
    for _ in range(args.reps):
        out["pread"].append(pread_seconds(path))
        t0 = time.perf_counter()
        mins, maxs = data.min(axis=1), data.max(axis=1)
        out["numpy"].append(time.perf_counter() - t0)
        check_stats(path, mins, maxs)
        t0 = time.perf_counter()
        hzio.index(path)
        out["index"].append(time.perf_counter() - t0)
        check_stats(path, mins, maxs)  # the sidecars hzio.index rewrote say the same
        seconds, files = sidecar_write_seconds(path, scratch)
        out["sidecars"].append(seconds)
    return out, files, data.shape


def case_name(case):
    return f"durable={case[0]}, threads={case[1] or 'cores'}"


def report(args, wall, phases, stats, files, shape, nbytes, cores, loads):
    """Print the tables and return the JSON summary."""
    med = {k: statistics.median(v) for k, v in stats.items()}
    kernel = max(0.0, med["index"] - med["pread"] - med["sidecars"])
    gib = nbytes / 2**30
    print(f"\nwrite = hzio.create + write + close, raw codec, HZ order, {nbytes / MIB:.0f} MiB, median of {args.reps} "
          f"(load {loads['writes']})")
    print(f"  {'case':<28}{'wall s':>8}{'MiB/s':>7}" + "".join(f"{p:>9}" for p in ("hz", "write", "commit"))
          + f"{'sum phases':>11}{'gap s':>8}")
    rows = {}
    for case, secs in wall.items():
        w = summarize(secs, nbytes)
        ph = {p: statistics.median(v) for p, v in phases[case].items()}
        gap = w["median_s"] - sum(ph.values())
        rows[case_name(case)] = {"wall": w, "phases_median_s": ph, "gap_s": gap}
        print(f"  {case_name(case):<28}{w['median_s']:>8.3f}{w['mib_per_s']:>7.0f}"
              + "".join(f"{ph[p]:>9.3f}" for p in ("hz", "write", "commit")) + f"{sum(ph.values()):>11.3f}{gap:>8.3f}")
    print(f"\nstatistics alone, one thread, warm page cache, median of {args.reps} (load {loads['stats']}):")
    print(f"  pread of every block ({shape[0]} blocks of {shape[1]} samples): {med['pread']:.3f} s")
    print(f"  numpy min + max per block:                       {med['numpy']:.3f} s ({gib / med['numpy']:.2f} GiB/s)")
    print(f"  hzio.index (read + statistics + {files} durable sidecars): {med['index']:.3f} s "
          f"({med['index'] / gib:.3f} s per GiB)")
    print(f"  durable writes of {files} sidecar-sized files:            {med['sidecars']:.3f} s")
    print(f"  hzio kernel = index - pread - sidecars:          {kernel:.3f} s ({gib / max(kernel, 1e-9):.2f} GiB/s)")
    print(f"\nstatistics share of the write time (target <= {100 * TARGET_SHARE:g}%, judged on the hzio kernel; "
          f"with threads=cores the estimates are divided by {cores} cores)")
    print(f"  {'case':<28}{'gap (bound)':>12}{'hzio kernel':>12}{'numpy':>8}  target")
    shares = {}
    for case in wall:
        name, w = case_name(case), rows[case_name(case)]["wall"]["median_s"]
        spread = 1 if case[1] == 1 else cores
        s = {"writer_gap_upper_bound": rows[name]["gap_s"] / w if case[1] == 1 else None,
             "hzio_kernel": kernel / spread / w, "numpy": med["numpy"] / spread / w}
        s["target_met"] = s["hzio_kernel"] <= TARGET_SHARE
        shares[name] = s
        bound = s["writer_gap_upper_bound"]
        gap = f"{100 * bound:>11.1f}%" if bound is not None else f"{'-':>12}"
        print(f"  {name:<28}{gap}{100 * s['hzio_kernel']:>11.1f}%{100 * s['numpy']:>7.1f}%  "
              f"{'met' if s['target_met'] else 'MISSED'}")
    return {"writes": rows, "stats_seconds": {k: summarize(v, nbytes) for k, v in stats.items()},
            "hzio_kernel_s": kernel, "index_s_per_gib": med["index"] / gib, "sidecar_files": files, "shares": shares}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (default 5)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "stats_cost.json"), help="JSON output")
    add_plot_option(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    scratch = os.path.join(os.path.abspath(args.dir), f"stats_cost_{os.getpid()}")
    os.makedirs(scratch)
    facts, uptime_before = machine_facts(scratch), uptime_line()
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}")
    print(f"cube {args.size}^3 float32; reps {args.reps}", flush=True)
    source = make_source(args.size)
    path = os.path.join(scratch, "data.idx")
    loads = {}
    try:
        loads["writes"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        wall, phases = time_writes(args, source, path)
        loads["stats"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        stats, files, shape = time_stats(args, path, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = report(args, wall, phases, stats, files, shape, source.nbytes, facts["cores_usable"], loads)
    uptime_after = uptime_line()
    print(f"\nevery write read back equal to the source; hzio's block statistics equal NumPy's\n"
          f"uptime at the end: {uptime_after}")
    out = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/stats_cost_bench.py"]
                               + (argv if argv is not None else sys.argv[1:])),
           "size": args.size, "dtype": "float32", "bytes": source.nbytes, "reps": args.reps, "blocks": list(shape),
           "machine": facts, "uptime_before": uptime_before, "uptime_after": uptime_after, "loads": loads,
           "target_share": TARGET_SHARE, "results": summary,
           "versions": {"hzio": hzio.__version__, "numpy": np.__version__,
                        "hzio_core_built": HZIO_BUILT}}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.json}")
    plot_after_run(args, "stats_cost_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
