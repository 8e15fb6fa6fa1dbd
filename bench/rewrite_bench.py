"""Benchmark: what atomic rewrites cost (docs/design/commit.md "Atomic rewrites").

A commit that rewrites a listed timestep holds the commit marker and renames the .idx anew; every read
checks the .idx before and after itself. Measured in one run, medians over repetitions:

* commits: rewriting timestep 0 whole against appending a new timestep of the same bytes (an append
  already renamed the .idx before atomic rewrites; a rewrite now does too, plus the marker), durable
  and not, for the cube and for a 16^3 one whose commit is almost only its fixed cost;
* small reads: a one-block box, warm, in one open dataset, against ``os.preadv`` of the same number of
  bytes from the data file (the syscalls a read cannot avoid), so that the fixed cost per read shows.

Every read is compared with the source; a mismatch fails the run. See bench/README.md.

    .venv/bin/python bench/rewrite_bench.py [--size 256] [--reps 9]
"""

import argparse
import datetime
import os
import shutil
import statistics
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import machine_facts, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)


def commit_times(path, a, b, durable, reps):
    """Medians of (rewrite of timestep 0, append of a new timestep) commits, alternating."""
    rewrite, append = [], []
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}, overwrite=True, durable=durable, times=[0]) as ds:
        ds.write(a, time=0)
    with hzio.open(path, mode="r+", durable=durable) as ds:
        for k in range(reps):
            for kind in (("rewrite", "append") if k % 2 == 0 else ("append", "rewrite")):
                data = b if k % 2 else a
                t0 = time.perf_counter()
                if kind == "rewrite":
                    ds.write(data, time=0)
                else:
                    ds.write(data, time=1 + k)
                ds.flush()
                (rewrite if kind == "rewrite" else append).append(time.perf_counter() - t0)
    with hzio.open(path) as ds:
        if not np.array_equal(ds.read(time=0), b if (reps - 1) % 2 else a):
            sys.exit("FAIL: the rewritten timestep does not hold the last rewrite")
    return statistics.median(rewrite), statistics.median(append), rewrite, append


def small_read_times(path, a, reps):
    """Medians of a one-block box read (warm, one open dataset) and of preadv of as many bytes."""
    with hzio.open(path) as ds:
        n = 1 << (ds.bits_per_block // 3)  # a cube of about one block
        box = ((0, 0, 0), (n, n, n))
        want = a[:n, :n, :n]
        got = ds.read(box=box, time=0)
        if not np.array_equal(got, want):
            sys.exit("FAIL: small read differs from the source")
        files = sorted(str(p) for p in ds.blocks(time=0)["file"])
        reads, raw = [], []
        buf = bytearray(want.nbytes)
        fd = os.open(files[0], os.O_RDONLY)
        try:
            for _ in range(reps):
                for _ in range(50):
                    ds.read(box=box, time=0)  # warm up
                t0 = time.perf_counter()
                for _ in range(200):
                    ds.read(box=box, time=0)
                reads.append((time.perf_counter() - t0) / 200)
                t0 = time.perf_counter()
                for _ in range(200):
                    os.preadv(fd, [buf], 4096)
                raw.append((time.perf_counter() - t0) / 200)
        finally:
            os.close(fd)
    return statistics.median(reads), statistics.median(raw), reads, raw


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="samples per axis (default 256)")
    parser.add_argument("--reps", type=int, default=9, help="repetitions; medians are reported (default 9)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"), help="scratch folder")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "rewrite_bench.json"), help="JSON output")
    add_plot_option(parser)
    args = parser.parse_args()
    work = os.path.join(args.dir, f"rewrite_{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(1)
    shape = (args.size,) * 3
    a = rng.standard_normal(shape, dtype=np.float32)
    b = rng.standard_normal(shape, dtype=np.float32)
    print(machine_facts(work))
    print(uptime_line())
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "size": args.size, "reps": args.reps, "results": {}}
    try:
        print(f"{args.size}^3 float32 ({a.nbytes >> 20} MiB per timestep), {args.reps} repetitions, medians")
        print(f"  {'commit':28} {'rewrite s':>10} {'append s':>10} {'rewrite / append':>17}")
        tiny = (a[:16, :16, :16].copy(), b[:16, :16, :16].copy())  # a commit's fixed cost: the marker, the .idx
        for durable, (x, y) in ((True, (a, b)), (False, (a, b)), (True, tiny), (False, tiny)):
            r, p, rs, ps = commit_times(os.path.join(work, f"c{int(durable)}{x.shape[0]}.idx"), x, y, durable,
                                        args.reps)
            name = f"{x.shape[0]}^3, " + ("durable" if durable else "not durable")
            report["results"][f"commit {name}"] = {"rewrite_s": r, "append_s": p, "ratio": r / p,
                                                    "rewrite_all_s": rs, "append_all_s": ps}
            print(f"  {name:28} {r:10.4f} {p:10.4f} {r / p:17.3f}")
        last = b if (args.reps - 1) % 2 else a  # what the last rewrite left in timestep 0
        read, raw, rs, ps = small_read_times(os.path.join(work, f"c0{args.size}.idx"), last, args.reps)
        report["results"]["small read"] = {"read_s": read, "preadv_s": raw, "read_all_s": rs, "preadv_all_s": ps}
        print(f"  one-block read, warm: {read * 1e6:.1f} us per read; preadv of as many bytes {raw * 1e6:.1f} us "
              f"({read / raw:.1f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(uptime_line())
    write_json(args.json, report)
    plot_after_run(args, "rewrite_bench")


if __name__ == "__main__":
    main()
