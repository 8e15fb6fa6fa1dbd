"""Benchmark: what checksum verification (``hzio.open(path, verify=True)``, the default) costs on reads,
against ``verify=False`` measured in the same run.

For each codec (``raw``, the default, and ``zip``) one ``size``^3 float32 dataset is written with
``hzio.create``'s default options, then full reads ``ds.read()`` are timed with and without verification,
the order of the two alternating with each repetition: (a) warm, read again in one open dataset; (b) warm,
open + read; (c) open + read as the first read of a fresh process; (d) cold, open + read after dropping the
page cache; and a warm ``ds.query`` over a narrow value range, in one open dataset and open + query. It
reports medians and time(verify) / time(no verify). Every answer is compared with the source; a mismatch
fails the run. See bench/README.md.

    .venv/bin/python bench/checksum_bench.py [--size 512] [--reps 7] [--codecs raw,zip]
"""

import argparse
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, machine_facts, tree_bytes, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
TARGET = {"max_cost": 0.03, "parts": ("a", "b")}  # verify / no verify - 1 on warm full reads; never asserted
PARTS = {"a": "(a) warm, read in one open dataset", "b": "(b) warm, open + read",
         "c": "(c) fresh process, open + read", "d": "(d) cold, open + read",
         "qa": "query, warm, in one open dataset", "qb": "query, warm, open + query"}
COMPILERS = "ninja|cc1plus"  # a build on this machine would take the cores the reads use

# The child of part (c): a new interpreter imports hzio, opens and reads once, then reports as one JSON line.
CHILD = r"""
import hashlib, json, os, sys, time
t0 = time.perf_counter()
import hzio
t1 = time.perf_counter()
with hzio.open(sys.argv[1], verify=sys.argv[2] == "1") as ds:
    a = ds.read()
    report = dict(ds.last_read_report)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_read_s": t2 - t1, "report": report, "shape": list(a.shape),
                  "dtype": str(a.dtype), "sha256": hashlib.sha256(memoryview(a).cast("B")).hexdigest(),
                  "hzio_core_built": time.ctime(os.path.getmtime(hzio._core.__file__))}))
"""


# ------------------------------------------------------------------------------------------ data
def make_source(size):
    """``size``^3 float32: smooth waves rising with z, plus seeded noise (so zip has work to do)."""
    axis = np.arange(size, dtype=np.float32)
    cube = np.sin(axis[None, None, :] / 7) * np.cos(axis[None, :, None] / 11) + axis[:, None, None] / size
    cube += np.random.default_rng(5).standard_normal(cube.shape, dtype=np.float32) * np.float32(1e-3)
    return cube


def query_range(source, fraction):
    """``(lo, hi)``: the top ``fraction`` of the values (high waves near the last planes: few blocks)."""
    flat = source.ravel()
    k = min(flat.size - 1, int(round((1 - fraction) * flat.size)))
    return float(np.partition(flat, k)[k]), float(flat.max())


def check(name, result, expected):
    """Exit with FAIL unless ``result`` equals ``expected`` exactly (shape, dtype, every sample)."""
    if result.shape != expected.shape or result.dtype != expected.dtype or not np.array_equal(result, expected):
        raise SystemExit(f"FAIL: {name} returned wrong data (shape {result.shape}, expected {expected.shape})")


def compilers_running():
    return subprocess.run(["pgrep", "-f", COMPILERS], capture_output=True).returncode == 0


def wait_for_compilers(poll_s=30):
    """Wait while a compiler runs (another build); return the seconds waited."""
    t0 = time.monotonic()
    while compilers_running():
        print(f"  a compiler is running ({COMPILERS}); waiting {poll_s} s", flush=True)
        time.sleep(poll_s)
    return round(time.monotonic() - t0)


# ------------------------------------------------------------------------------------------ timed calls
def read_in(ds):
    """(a) ``ds.read()`` in an open dataset: (seconds, array, report)."""
    t0 = time.perf_counter()
    a = ds.read()
    return time.perf_counter() - t0, a, dict(ds.last_read_report)


def open_read(path, verify):
    """(b), (d) open + read + close: (seconds, array, report)."""
    t0 = time.perf_counter()
    with hzio.open(path, verify=verify) as ds:
        a = ds.read()
        report = ds.last_read_report
    return time.perf_counter() - t0, a, dict(report)


def query_in(ds, lo, hi):
    t0 = time.perf_counter()
    answer = ds.query(None, lo, hi)
    return time.perf_counter() - t0, answer, dict(ds.last_read_report)


def open_query(path, verify, lo, hi):
    t0 = time.perf_counter()
    with hzio.open(path, verify=verify) as ds:
        answer = ds.query(None, lo, hi)
        report = ds.last_read_report
    return time.perf_counter() - t0, answer, dict(report)


def fresh_process(path, verify):
    """(c) a new interpreter opens and reads once: (its open + read seconds, its JSON line, spawn wall s)."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, path, "1" if verify else "0"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"FAIL: the reading process (verify={verify}) exited with {out.returncode}:\n{out.stderr}")
    child = json.loads(out.stdout.strip().splitlines()[-1])
    return child["open_read_s"], child, wall


# ------------------------------------------------------------------------------------------ one case
def alternate(reps, fn, extra):
    """Call ``fn(verify)`` for both settings each repetition: verify first on even ones, last on odd ones.
    Before each repetition, wait while a compiler runs (adding the wait to ``extra["waited_s"]``)."""
    for rep in range(reps):
        extra["waited_s"] += wait_for_compilers()
        for verify in ((True, False) if rep % 2 == 0 else (False, True)):
            fn(verify)


def run_case(args, codec, path, source, expected):
    """Write the dataset, then every part; returns (seconds per part and verify, reports, extras)."""
    kwargs = {} if codec == "raw" else {"codec": codec}  # raw is hzio.create's default codec
    with hzio.create(path, shape=source.shape, fields={"data": "float32"}, **kwargs) as ds:
        ds.write(source)
    times, reports, extra = {p: {True: [], False: []} for p in PARTS}, {}, {"child": [], "cold_ok": True, "waited_s": 0}
    lo, hi, coords, values, digest = expected

    def record(part, verify, seconds, report):
        times[part][verify].append(seconds)
        reports.setdefault(part, {})[verify] = report

    def check_query(name, answer):
        if not (np.array_equal(answer[0], coords) and np.array_equal(answer[1], values)):
            raise SystemExit(f"FAIL: {name} returned {len(answer[0])} samples, expected {len(coords)} (or others)")

    for verify in (True, False):  # untimed: brings the files into the page cache
        check(f"{codec} warm-up verify={verify}", open_read(path, verify)[1], source)
    with hzio.open(path, verify=True) as on, hzio.open(path, verify=False) as off:
        opened = {True: on, False: off}
        for ds in opened.values():  # untimed: the first read loads the header tables (and the sidecars)
            check(f"{codec} first read", ds.read(), source)

        def part_a(v):
            seconds, a, report = read_in(opened[v])
            record("a", v, seconds, report)
            check(f"{codec} (a) verify={v}", a, source)

        def part_qa(v):
            seconds, answer, report = query_in(opened[v], lo, hi)
            record("qa", v, seconds, report)
            check_query(f"{codec} query in one open dataset, verify={v}", answer)

        alternate(args.reps, part_a, extra)
        alternate(args.reps, part_qa, extra)

    def part_b(v):
        seconds, a, report = open_read(path, v)
        record("b", v, seconds, report)
        check(f"{codec} (b) verify={v}", a, source)

    def part_c(v):
        seconds, child, wall = fresh_process(path, v)
        record("c", v, seconds, child["report"])
        extra["child"].append({"verify": v, "import_s": child["import_s"], "open_read_s": seconds, "spawn_wall_s": wall,
                               "hzio_core_built": child["hzio_core_built"]})
        if child["shape"] != list(source.shape) or child["dtype"] != str(source.dtype) or child["sha256"] != digest:
            raise SystemExit(f"FAIL: {codec} (c) verify={v}: the fresh process read other data than the source")

    def part_qb(v):
        seconds, answer, report = open_query(path, v, lo, hi)
        record("qb", v, seconds, report)
        check_query(f"{codec} open + query, verify={v}", answer)

    def part_d(v):
        extra["cold_ok"] &= drop_page_cache()
        seconds, a, report = open_read(path, v)
        record("d", v, seconds, report)
        check(f"{codec} (d) verify={v}", a, source)

    for fn in (part_b, part_c, part_qb, part_d):  # cold last: the warm parts need the page cache full
        alternate(args.reps, fn, extra)
    return times, reports, extra


# ------------------------------------------------------------------------------------------ reporting
def summarize_case(times, reports):
    """Medians, the ratio of medians, per-repetition ratios and the target verdict for each part."""
    out = {}
    for part, by in times.items():
        mv, mn = statistics.median(by[True]), statistics.median(by[False])
        pairs = [v / n for v, n in zip(by[True], by[False])]
        ratio = mv / mn
        out[part] = {"verify_median_s": round(mv, 5), "no_verify_median_s": round(mn, 5), "ratio": round(ratio, 4),
                     "cost": round(ratio - 1, 4), "per_rep_ratio_median": round(statistics.median(pairs), 4),
                     "per_rep_ratio_min": round(min(pairs), 4), "per_rep_ratio_max": round(max(pairs), 4),
                     "verify_s": [round(s, 5) for s in by[True]], "no_verify_s": [round(s, 5) for s in by[False]],
                     "bytes_read": {"verify": reports[part][True].get("bytes_read"),
                                    "no_verify": reports[part][False].get("bytes_read")},
                     "assembly": {"verify": reports[part][True].get("assembly"),
                                  "no_verify": reports[part][False].get("assembly")},
                     "blocks_read": reports[part][True].get("blocks_read"),
                     "blocks_skipped": reports[part][True].get("blocks_skipped")}
        if part in TARGET["parts"]:
            out[part]["target_met"] = ratio - 1 <= TARGET["max_cost"]
    return out


def print_case(codec, summary, extra, on_disk, files, load):
    print(f"\n{codec}: {on_disk / MIB:.0f} MiB on disk in {files} files (load {load})")
    print(f"  {'part':<35}{'verify s':>10}{'no verify s':>12}{'ratio':>8}{'cost':>8}{'per-rep ratios':>17}"
          f"{'extra MiB':>11}  target")
    for part, s in summary.items():
        extra_mib = ((s["bytes_read"]["verify"] or 0) - (s["bytes_read"]["no_verify"] or 0)) / MIB
        verdict = (f"<= {100 * TARGET['max_cost']:g}%: {'met' if s['target_met'] else 'MISSED'}"
                   if "target_met" in s else "-")
        print(f"  {PARTS[part]:<35}{s['verify_median_s']:>10.4f}{s['no_verify_median_s']:>12.4f}{s['ratio']:>8.3f}"
              f"{100 * s['cost']:>7.1f}%{s['per_rep_ratio_min']:>8.3f}-{s['per_rep_ratio_max']:<8.3f}"
              f"{extra_mib:>11.2f}  {verdict}")
    q = summary["qa"]
    imports = statistics.median(c["import_s"] for c in extra["child"])
    spawn = statistics.median(c["spawn_wall_s"] for c in extra["child"])
    print(f"  query: blocks read {q['blocks_read']}, skipped {q['blocks_skipped']}; fresh process: import hzio "
          f"{imports:.3f} s, whole process {spawn:.3f} s (medians, both settings)")


# ------------------------------------------------------------------------------------------ main
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions; medians are reported (default 7)")
    parser.add_argument("--codecs", default="raw,zip", help="one dataset per codec (default raw,zip)")
    parser.add_argument("--query-fraction", type=float, default=0.01,
                        help="the query's range holds this top fraction of the values (default 0.01)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "checksum_bench.json"), help="JSON output")
    add_plot_option(parser)
    return parser.parse_args(argv)


def load_now():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    args = parse_args(argv)
    scratch = os.path.join(os.path.abspath(args.dir), f"checksum_{os.getpid()}")
    os.makedirs(scratch)
    facts, uptime_before = machine_facts(scratch), uptime_line()
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}")
    print(f"cube {args.size}^3 float32; codecs {args.codecs}; reps {args.reps}", flush=True)
    source = make_source(args.size)
    lo, hi = query_range(source, args.query_fraction)
    mask = (source >= lo) & (source <= hi)
    expected = (lo, hi, np.argwhere(mask), source[mask], hashlib.sha256(memoryview(source).cast("B")).hexdigest())
    del mask
    print(f"query [{lo:.6g}, {hi:.6g}]: {len(expected[2])} samples ({100 * len(expected[2]) / source.size:.2f} %)")
    results, waited, cold_ok, builds = {}, {}, True, []
    try:
        for codec in args.codecs.split(","):
            waited[codec] = wait_for_compilers()
            load = load_now()
            path = os.path.join(scratch, f"{codec}.idx")
            times, reports, extra = run_case(args, codec, path, source, expected)
            summary = summarize_case(times, reports)
            on_disk, files = tree_bytes(path[:-4]), len(os.listdir(path[:-4]))
            print_case(codec, summary, extra, on_disk, files, load)
            cold_ok &= extra["cold_ok"]
            builds += [c["hzio_core_built"] for c in extra["child"]]
            waited[codec] += extra["waited_s"]
            results[codec] = {"parts": summary, "on_disk_bytes": on_disk, "files": files, "load_at_start": load,
                              "fresh_process": extra["child"]}
            shutil.rmtree(path[:-4], ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not cold_ok:
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); 'cold' reads were warm")
    if set(builds) - {HZIO_BUILT}:
        print(f"WARNING: a fresh process loaded another hzio build ({sorted(set(builds))}): hzio was reinstalled")
    if any(waited.values()):
        print(f"waited for compilers to finish (seconds, per codec): {waited}")
    compiling = compilers_running()
    if compiling:
        print(f"WARNING: a compiler ({COMPILERS}) is running at the end of the run; timings may be disturbed")
    uptime_after = uptime_line()
    print(f"\nevery read and query equals the source; uptime at the end: {uptime_after}")
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/checksum_bench.py"]
                                  + (argv if argv is not None else sys.argv[1:])),
              "size": args.size, "dtype": "float32", "bytes": source.nbytes, "reps": args.reps,
              "query": {"lo": lo, "hi": hi, "fraction": args.query_fraction, "samples": len(expected[2])},
              "target": {"max_cost": TARGET["max_cost"], "parts": list(TARGET["parts"]),
                         "meaning": "time(verify) / time(no verify) - 1 on a warm full read"},
              "parts": PARTS, "cold_cache_dropped": cold_ok, "waited_for_compilers_s": waited,
              "compiler_running_at_end": compiling, "machine": facts, "uptime_before": uptime_before,
              "uptime_after": uptime_after, "results": results,
              "versions": {"hzio": hzio.__version__, "numpy": np.__version__, "hzio_core_built": HZIO_BUILT}}
    write_json(args.json, report)
    plot_after_run(args, "checksum_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
