"""Benchmark: durable write and full-resolution read of one float32 cube, hzio against same-run baselines.

Writers: a raw file (one ``os.write`` per MiB, then ``os.fsync``), hzio (raw codec, HZ and row-major
layouts, ``durable=True``) and OpenVisus (``CreateIdx`` + ``db.write``, row-major and HZ, plus the one-shot
``CreateIdx(data=...)`` that zips), each OpenVisus file fsynced afterwards. Readers: ``readinto`` of the raw
file, hzio ``ds.read()`` and OpenVisus ``db.read()``, cold (page cache dropped) and warm. Every read is
compared with the source array and a mismatch fails the run. Medians over ``--reps``; see bench/README.md.

    .venv/bin/python bench/write_read_bench.py [--size 512] [--reps 5] [--dir DIR] [--json PATH]
"""

import argparse
import datetime
import os
import shutil
import sys
import time

import hzio
import numpy as np
import OpenVisus as ov  # imported here so no timed case pays for loading the library
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, fsync_tree, machine_facts, summarize, timed, tree_bytes, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20

# Targets printed next to the numbers; the benchmark reports them, it never fails on them.
TARGETS = {"write_vs_raw": 0.8, "write_vs_openvisus": 1.5, "read_vs_raw": 0.8, "read_vs_openvisus": 1.0}


# ------------------------------------------------------------------------------------------ writers
def write_raw(array, folder):
    """Write ``array``'s bytes to ``folder/data.raw`` one MiB per ``os.write``, then fsync; return the path."""
    path = os.path.join(folder, "data.raw")
    view = memoryview(array).cast("B")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pos = 0
        while pos < len(view):
            pos += os.write(fd, view[pos:pos + MIB])
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def write_raw_direct(array, folder):
    """Write ``array``'s bytes to ``folder/data.raw`` with ``O_DIRECT``, 8 MiB per ``os.write`` from an
    aligned buffer, then fsync; return the path. A reference for how fast the disk takes writes that
    bypass the page cache, as hzio's durable writes do; not a target baseline."""
    import mmap
    path = os.path.join(folder, "data.raw")
    view = memoryview(array).cast("B")
    chunk = 8 * MIB
    buffer = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT wants
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
    try:
        for pos in range(0, len(view), chunk):
            n = min(chunk, len(view) - pos)
            buffer[:n] = view[pos:pos + n]
            if n % 4096:  # the last piece: pad to a page, cut afterwards
                buffer[n:n - n % 4096 + 4096] = bytes(4096 - n % 4096)
            os.write(fd, memoryview(buffer)[:(n + 4095) // 4096 * 4096])
        os.ftruncate(fd, len(view))
        os.fsync(fd)
    finally:
        os.close(fd)
        buffer.close()
    return path


def write_hzio(array, folder, layout):
    """Write ``array`` as field ``data`` with hzio (raw codec, durable close); return the .idx path."""
    path = os.path.join(folder, "data.idx")
    with hzio.create(path, shape=array.shape, fields={"data": "float32"}, codec="raw", layout=layout,
                     overwrite=True) as ds:
        ds.write(array)
    return path


def write_openvisus(array, folder, layout):
    """Write ``array`` with ``CreateIdx`` + ``db.write`` (raw blocks), then fsync each file; return the .idx."""
    path = os.path.join(folder, "data.idx")
    field = ov.Field("data", "float32", layout) if layout else ov.Field("data", "float32")
    db = ov.CreateIdx(url=path, dims=list(reversed(array.shape)), fields=[field])
    db.write(array)
    del db  # release OpenVisus' file handles before the fsync
    fsync_tree(folder)
    return path


def write_openvisus_oneshot(array, folder):
    """Write ``array`` with the one-shot ``CreateIdx(dim=3, data=...)`` (row-major, zip), then fsync each file."""
    path = os.path.join(folder, "data.idx")
    db = ov.CreateIdx(url=path, dim=3, data=array)
    del db
    fsync_tree(folder)
    return path


WRITERS = {
    "raw": write_raw,
    "raw-direct": write_raw_direct,
    "hzio-hzorder": lambda a, f: write_hzio(a, f, "hzorder"),
    "hzio-rowmajor": lambda a, f: write_hzio(a, f, "rowmajor"),
    "openvisus-rowmajor": lambda a, f: write_openvisus(a, f, None),
    "openvisus-hzorder": lambda a, f: write_openvisus(a, f, "hzorder"),
    "openvisus-oneshot-zip": write_openvisus_oneshot,
}
# OpenVisus writers that store the same uncompressed samples; the fastest is the write baseline.
OPENVISUS_UNCOMPRESSED = ("openvisus-rowmajor", "openvisus-hzorder")


# ------------------------------------------------------------------------------------------ readers
def read_raw(path, shape):
    """Read the whole raw file into a new float32 array with one ``readinto``."""
    out = np.empty(shape, np.float32)
    with open(path, "rb", buffering=0) as f:
        got = f.readinto(memoryview(out).cast("B"))
    if got != out.nbytes:
        raise RuntimeError(f"short read of {path}: {got} of {out.nbytes} bytes")
    return out


def read_hzio(path, shape):
    """Open the dataset with hzio and read it at full resolution."""
    with hzio.open(path) as ds:
        return ds.read()


def read_openvisus(path, shape):
    """Open the dataset with OpenVisus and read it at full resolution."""
    return ov.LoadDataset(path).read()


# Reader name -> (the writer whose output it reads, function).
READERS = {
    "raw": ("raw", read_raw),
    "hzio-hzorder": ("hzio-hzorder", read_hzio),
    "hzio-rowmajor": ("hzio-rowmajor", read_hzio),
    "openvisus-rowmajor": ("openvisus-rowmajor", read_openvisus),
    "openvisus-hzorder": ("openvisus-hzorder", read_openvisus),
}
# Interoperability checks, once per run and untimed: (reader, the writer whose output it reads).
INTEROP = [("openvisus", "hzio-hzorder"), ("openvisus", "hzio-rowmajor"),
           ("hzio", "openvisus-rowmajor"), ("hzio", "openvisus-hzorder")]


# ------------------------------------------------------------------------------------------ running
def make_source(size, seed=1):
    """Return a ``size``^3 float32 cube: smooth waves plus a little noise (so zip has real work)."""
    axis = np.arange(size, dtype=np.float32)
    z, y, x = axis[:, None, None], axis[None, :, None], axis[None, None, :]
    rng = np.random.default_rng(seed)
    cube = np.sin(x / 7) * np.cos(y / 11) + z / size
    cube += rng.standard_normal(cube.shape, dtype=np.float32) * np.float32(1e-3)
    return cube


def check(name, result, source):
    """Fail the run if a read returned anything but the source samples."""
    if result.shape != source.shape or result.dtype != source.dtype or not np.array_equal(result, source):
        raise SystemExit(f"FAIL: read {name} returned wrong data (shape {result.shape}, dtype {result.dtype})")


def rotated(names, rep):
    """``names`` rotated by ``rep`` so no case always runs first (drift is spread over every case)."""
    k = rep % len(names)
    return names[k:] + names[:k]


def run_rep(rep, source, scratch, writers, times, cold_ok, pause):
    """One repetition: every writer (timed), then every reader cold and warm (timed, checked)."""
    paths = {}
    for name in rotated(list(writers), rep):
        folder = os.path.join(scratch, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        os.sync()  # leave no earlier writeback to be paid by this case
        time.sleep(pause)  # and let the host's disk drain what the guest already handed it
        seconds, paths[name] = timed(writers[name], source, folder)
        times.setdefault(("write", name), []).append(seconds)
        times.setdefault(("bytes", name), tree_bytes(folder))
    for name in rotated([r for r in READERS if READERS[r][0] in paths], rep):
        target, fn = READERS[name]
        cold_ok &= drop_page_cache()
        for kind in ("read_cold", "read_warm"):
            seconds, result = timed(fn, paths[target], source.shape)
            check(f"{name} ({kind})", result, source)
            times.setdefault((kind, name), []).append(seconds)
            del result
    return paths, cold_ok


def run_interop(paths, source):
    """Check OpenVisus reads hzio's datasets and hzio reads OpenVisus' ones exactly; return the outcomes."""
    readers = {"openvisus": read_openvisus, "hzio": read_hzio}
    outcome = {}
    for reader, writer in INTEROP:
        if writer in paths:
            check(f"{reader} of {writer}", readers[reader](paths[writer], source.shape), source)
            outcome[f"{reader} reads {writer}"] = "equal"
    return outcome


# ------------------------------------------------------------------------------------------ reporting
def summarize_all(times, nbytes):
    """Medians and MiB/s per (operation, case), as ``{op: {case: summary}}``."""
    out = {}
    for (op, name), seconds in times.items():
        if op != "bytes":
            extra = {"bytes_on_disk": times[("bytes", name)]} if op == "write" else {}
            out.setdefault(op, {})[name] = dict(summarize(seconds, nbytes), **extra)
    return out


def ratios(summary):
    """hzio throughput over raw and over the fastest uncompressed OpenVisus case, per operation and layout.

    Returns
    -------
    dict
        ``{op: {hzio_case: {"vs_raw": r, "vs_openvisus": r, "openvisus_baseline": name,
        "vs_openvisus_same_layout": r, "targets_met": {...}}}}``; the targets use ``vs_raw`` and
        ``vs_openvisus`` (the fastest OpenVisus case, whatever its layout).
    """
    out = {}
    for op, cases in summary.items():
        ov = [n for n in OPENVISUS_UNCOMPRESSED if n in cases]
        best_ov = max(ov, key=lambda n: cases[n]["mib_per_s"]) if ov else None
        kind = "write" if op == "write" else "read"
        for hz in (n for n in cases if n.startswith("hzio")):
            speed = cases[hz]["mib_per_s"]
            row = {"vs_raw": round(speed / cases["raw"]["mib_per_s"], 3) if "raw" in cases else None,
                   "openvisus_baseline": best_ov,
                   "vs_openvisus": round(speed / cases[best_ov]["mib_per_s"], 3) if best_ov else None}
            if "raw-direct" in cases:
                row["vs_raw_direct"] = round(speed / cases["raw-direct"]["mib_per_s"], 3)
            same = hz.replace("hzio", "openvisus")
            row["vs_openvisus_same_layout"] = round(speed / cases[same]["mib_per_s"], 3) if same in cases else None
            row["targets_met"] = {
                "vs_raw": row["vs_raw"] is not None and row["vs_raw"] >= TARGETS[f"{kind}_vs_raw"],
                "vs_openvisus": row["vs_openvisus"] is not None and (
                    row["vs_openvisus"] >= TARGETS["write_vs_openvisus"] if kind == "write"
                    else row["vs_openvisus"] > TARGETS["read_vs_openvisus"])}
            out.setdefault(op, {})[hz] = row
    return out


def print_tables(summary, ratio, nbytes, reps):
    """Print one table per operation, then each hzio case's ratios next to its targets."""
    titles = {"write": "durable write", "read_cold": "full read, cold cache", "read_warm": "full read, warm cache"}
    for op in ("write", "read_cold", "read_warm"):
        if op not in summary:
            continue
        print(f"\n{titles[op]}: {nbytes / MIB:.0f} MiB of samples, median of {reps}")
        disk_title = f"{'on disk MiB':>13}" if op == "write" else ""
        print(f"  {'case':<24}{'median s':>10}{'MiB/s':>9}{'min s':>9}{'max s':>9}{disk_title}")
        for name, s in summary[op].items():
            disk = f"{s['bytes_on_disk'] / MIB:13.1f}" if "bytes_on_disk" in s else ""
            print(f"  {name:<24}{s['median_s']:>10.3f}{s['mib_per_s']:>9.0f}{s['min_s']:>9.3f}{s['max_s']:>9.3f}{disk}")
        kind = "write" if op == "write" else "read"
        ov_target = (f">= {TARGETS['write_vs_openvisus']}" if kind == "write"
                     else f"> {TARGETS['read_vs_openvisus']}")
        for hz, r in ratio.get(op, {}).items():
            met = r["targets_met"]
            print(f"  {hz}: {r['vs_raw']:.2f} x raw (target >= {TARGETS[kind + '_vs_raw']}: "
                  f"{'met' if met['vs_raw'] else 'MISSED'}), {r['vs_openvisus']:.2f} x {r['openvisus_baseline']} "
                  f"(target {ov_target}: {'met' if met['vs_openvisus'] else 'MISSED'}), "
                  f"{r['vs_openvisus_same_layout']:.2f} x {hz.replace('hzio', 'openvisus')}"
                  + (f", {r['vs_raw_direct']:.2f} x raw-direct (reference)" if "vs_raw_direct" in r else ""))


def parse_args(argv):
    """Parse the command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (default 5)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "write_read.json"), help="JSON output")
    parser.add_argument("--skip-zip", action="store_true", help="skip the slow one-shot OpenVisus zip writer")
    parser.add_argument("--pause", type=float, default=0,
                        help="seconds to wait before each timed write, after a sync (default 0); on a virtual "
                             "disk that slows down after sustained writes, a few seconds keep the cases comparable")
    add_plot_option(parser)
    return parser.parse_args(argv)


def main(argv=None):
    """Run every repetition, print the tables and write the JSON report; returns 0 (a wrong read exits)."""
    args = parse_args(argv)
    if args.reps < 1 or args.size < 1:
        raise SystemExit("--reps and --size must be at least 1")
    scratch = os.path.join(os.path.abspath(args.dir), f"write_read_{os.getpid()}")
    os.makedirs(scratch)
    writers = {k: v for k, v in WRITERS.items() if not (args.skip_zip and k == "openvisus-oneshot-zip")}
    facts, uptime_before = machine_facts(scratch), uptime_line()
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    print(f"uptime: {uptime_before}")
    print("note: the machine is shared (other builds run on the same cores and disk), so timings are noisy; "
          "compare ratios within one run, not absolute numbers across runs")
    source = make_source(args.size)
    times, cold_ok = {}, True
    try:
        interop = None
        for rep in range(args.reps):
            paths, cold_ok = run_rep(rep, source, scratch, writers, times, cold_ok, args.pause)
            interop = run_interop(paths, source) if rep == 0 else interop
            print(f"rep {rep + 1}/{args.reps} done", flush=True)
            for name in paths:
                shutil.rmtree(os.path.join(scratch, name))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not cold_ok:
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); 'cold' reads are warm")
    summary = summarize_all(times, source.nbytes)
    ratio = ratios(summary)
    print_tables(summary, ratio, source.nbytes, args.reps)
    print(f"\ninteroperability (untimed): {', '.join(f'{k}: {v}' for k, v in interop.items())}")
    uptime_after = uptime_line()
    print(f"uptime at the end: {uptime_after}")
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/write_read_bench.py"]
                                  + (argv if argv is not None else sys.argv[1:])),
              "size": args.size, "dtype": "float32", "bytes": source.nbytes, "reps": args.reps,
              "cold_cache_dropped": cold_ok, "machine": facts, "uptime_before": uptime_before,
              "uptime_after": uptime_after, "targets": TARGETS, "results": summary, "ratios": ratio,
              "interop": interop, "versions": {"hzio": hzio.__version__, "numpy": np.__version__}}
    write_json(args.json, report)
    plot_after_run(args, "write_read_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
