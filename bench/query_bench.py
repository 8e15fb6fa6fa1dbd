"""Benchmark: value-range queries (``ds.query``) against a full scan (``ds.read()`` then a NumPy mask) of
the same dataset, per block size and selectivity.

The field is a spherical front, ``tanh((r - R) / w)`` with a wavy radius, so the samples near any value
sit in a thin shell: a localized feature, as in a flame or reaction front. For each ``bits_per_block``
(and, with ``--sub-block``, statistics of 2^g parts per block, hzio.create's default) and each
selectivity, it reports blocks read and skipped, bytes read, the reads a query issues (estimated from the
sidecars, see bench/README.md) and the median time, cold and warm, next to the full scan. Every answer
is compared with NumPy on the source; a mismatch fails the run.

    .venv/bin/python bench/query_bench.py [--size 256] [--reps 5] [--bits 12,14,16,18] [--sub-block 14:2,16:4,18:6]
"""

import argparse
import datetime
import os
import shutil
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, machine_facts, summarize, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
TARGET = {"selectivity": 0.01, "max_bytes_vs_scan": 0.10}  # printed next to the numbers, never asserted
STATS_RECORD = np.dtype([("count", "<u8"), ("min", "<f8"), ("max", "<f8")])  # docs/format.md "Statistics sidecar"
UNKNOWN = np.uint64(2**64 - 1)


# ------------------------------------------------------------------------------------------ data
def make_front(size):
    """``size``^3 float32: ``tanh((r - R) / w)`` around an off-centre point, R wavy in x and y."""
    c = np.array([0.42, 0.55, 0.47]) * size  # [z, y, x]
    axis = np.arange(size, dtype=np.float32)
    y, x = axis[:, None], axis[None, :]
    radius = np.float32(0.25 * size) * (1 + np.float32(0.08) * np.sin(6 * np.pi * x / size)
                                        * np.sin(4 * np.pi * y / size))
    width = np.float32(max(1.5, 0.012 * size))
    out = np.empty((size, size, size), np.float32)
    for z in range(size):
        r = np.sqrt((z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2, dtype=np.float32)
        out[z] = np.tanh((r - radius) / width)
    return out


def value_ranges(source, selectivities):
    """``[lo, hi]`` per selectivity, from the data's quantiles, centred (in rank) on the front value 0.

    Returns ``{s: (lo, hi, achieved_fraction)}``; the achieved fraction counts the samples in
    ``[lo, hi]`` exactly (ties can make it differ from ``s``).
    """
    ordered = np.sort(source, axis=None)
    n = ordered.size
    at_front = np.searchsorted(ordered, 0.0) / n
    out = {}
    for s in selectivities:
        first = int(round(min(max(at_front - s / 2, 0.0), 1.0 - s) * n))
        last = min(n, first + max(1, int(round(s * n)))) - 1
        lo, hi = float(ordered[first]), float(ordered[last])
        count = np.searchsorted(ordered, hi, side="right") - np.searchsorted(ordered, lo, side="left")
        out[s] = (lo, hi, count / n)
    return out


# ------------------------------------------------------------------------------------------ model
def planned_reads(ds, lo, hi):
    """What the query should read, from the statistics sidecars (docs/design/read-path.md "Queries").

    Returns ``(blocks, reads, bytes, per_level)``: blocks read whole or in parts, contiguous byte ranges
    read (adjacent matching parts merge into one), the bytes read (those ranges plus each file's header
    table and sidecar), and per level ``[blocks read, blocks]``. Raw blocks of one field only.
    """
    blocks = ds.blocks()
    blocks = blocks[blocks["present"]]
    block_bytes = int(blocks["size"].max())
    n_reads = payload = 0
    wanted = np.zeros(len(blocks), bool)
    for path in np.unique(blocks["file"]):
        table, parts = read_sidecar(path + ".hzstats")
        payload += 40 + 40 * len(table) + os.path.getsize(path + ".hzstats")  # docs/format.md: header table
        for i in np.flatnonzero(blocks["file"] == path):
            rec = table[blocks["entry"][i]]
            meets = (rec["count"] == UNKNOWN) | ((rec["count"] > 0) & (rec["max"] >= lo) & (rec["min"] <= hi))
            sel = meets[1:].astype(np.int8) if parts else meets[:1].astype(np.int8)
            if meets[0] and sel.any():
                wanted[i] = True
                n_reads += int(np.count_nonzero(np.diff(np.concatenate(([0], sel))) == 1))
                payload += int(sel.sum()) * block_bytes // len(sel)
    per_level = {int(h): [int(wanted[blocks["level"] == h].sum()), int((blocks["level"] == h).sum())]
                 for h in np.unique(blocks["level"])}
    return int(wanted.sum()), n_reads, payload, per_level


def read_sidecar(path):
    """Per entry, the block's range record then its parts' (one scalar field); and the part count."""
    data = open(path, "rb").read()
    if data[:8] != b"HZSTATS1":
        raise SystemExit(f"FAIL: {path} is not a statistics sidecar")
    fields, bpf, bits = (int(np.frombuffer(data, "<u4", 1, 12)[0]), int(np.frombuffer(data, "<u8", 1, 16)[0]),
                         int(np.frombuffer(data, "<u4", 1, 24)[0]))
    if fields != 1:
        raise SystemExit(f"FAIL: {path}: the model handles one field, found {fields}")
    per_entry = 1 + (1 << bits if bits else 0)
    version = int(np.frombuffer(data, "<u4", 1, 8)[0])
    sums = (1 << bits) if version >= 2 else 0  # version 2: each entry starts with its payload checksums
    entry = np.dtype([("sums", "<u8", (sums,)), ("records", STATS_RECORD, (per_entry,))])
    table = np.frombuffer(data, entry, bpf, 48 + 8)["records"]
    return table, (1 << bits if bits else 0)


# ------------------------------------------------------------------------------------------ cases
def run_query(path, lo, hi, mask):
    """Open the dataset and query ``[lo, hi]``; return the answer and the report."""
    with hzio.open(path) as ds:
        return ds.query(None, lo, hi, mask=mask), ds.last_read_report


def run_scan(path, lo, hi, mask):
    """Open the dataset, read everything, then find ``[lo, hi]`` with NumPy (mask, or coordinates and values)."""
    with hzio.open(path) as ds:
        a = ds.read()
        report = ds.last_read_report
    m = (a >= lo) & (a <= hi)
    return (m if mask else (np.argwhere(m), a[m])), report


def same_answer(got, expected, mask):
    if mask:
        return got.shape == expected.shape and np.array_equal(got, expected)
    return np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def timed_cases(cases, expected, mask, reps, name):
    """``reps`` rounds of every case, cold then warm, the case order swapped each round; every answer is
    checked. Returns ``{case: (seconds per kind, report)}`` and whether cold runs were really cold."""
    seconds = {c: {"cold": [], "warm": []} for c in cases}
    reports, cold_ok = {}, True
    for rep in range(reps):
        for case in sorted(cases, reverse=rep % 2 == 1):
            for kind in ("cold", "warm"):
                if kind == "cold":
                    cold_ok &= drop_page_cache()
                t0 = time.perf_counter()
                answer, reports[case] = cases[case]()
                seconds[case][kind].append(time.perf_counter() - t0)
                if not same_answer(answer, expected, mask):
                    raise SystemExit(f"FAIL: {case} {name} ({kind}) differs from NumPy on the source")
                del answer
    return {c: (seconds[c], reports[c]) for c in cases}, cold_ok


def run_variant(args, source, path, name, ranges, modes):
    """Every selectivity and mode on one dataset; returns the rows and whether cold reads were cold."""
    rows, cold_ok = [], True
    for s, (lo, hi, achieved) in ranges.items():
        m = (source >= lo) & (source <= hi)
        with hzio.open(path) as ds:
            model = planned_reads(ds, lo, hi)
        for mode in modes:
            mask = mode == "mask"
            expected = m if mask else (np.argwhere(m), source[m])
            row = {"selectivity": s, "lo": lo, "hi": hi, "achieved": achieved, "mode": mode,
                   "model_blocks": model[0], "model_reads": model[1], "model_bytes": model[2],
                   "model_blocks_per_level": model[3]}
            cases = {"query": lambda: run_query(path, lo, hi, mask), "scan": lambda: run_scan(path, lo, hi, mask)}
            timed, ok = timed_cases(cases, expected, mask, args.reps, f"{name} s={s} {mode}")
            cold_ok &= ok
            for case, (secs, report) in timed.items():
                row[case] = dict(report, cold=summarize(secs["cold"], 1), warm=summarize(secs["warm"], 1))
            row["bytes_vs_scan"] = row["query"]["bytes_read"] / row["scan"]["bytes_read"]
            for k in ("cold", "warm"):
                row[f"speedup_{k}"] = row["scan"][k]["median_s"] / row["query"][k]["median_s"]
            got = (row["query"]["blocks_read"], row["query"]["bytes_read"])
            row["model_agrees"] = got == (model[0], model[2])
            rows.append(row)
            del expected
        print_rows(rows[-len(modes):], name)
    return rows, cold_ok


# ------------------------------------------------------------------------------------------ reporting
def print_rows(rows, name):
    for r in rows:
        q, sc = r["query"], r["scan"]
        print(f"  {name:<16}{100 * r['selectivity']:>7.1f}{100 * r['achieved']:>8.3f}  {r['mode']:<7}"
              f"{q['blocks_read']:>7}{q['blocks_skipped']:>8}{r['model_reads']:>7}{q['bytes_read'] / MIB:>10.2f}"
              f"{100 * r['bytes_vs_scan']:>8.2f}" + "".join(
                  f"{1e3 * q[k]['median_s']:>10.1f}{1e3 * sc[k]['median_s']:>9.1f}{r[f'speedup_{k}']:>7.2f}"
                  for k in ("cold", "warm"))
              + ("" if r["model_agrees"] else f"  (expected {r['model_blocks']} blocks, {r['model_bytes']} bytes)"),
              flush=True)


def print_header():
    print(f"  {'dataset':<16}{'sel %':>7}{'got %':>8}  {'mode':<7}{'blocks':>7}{'skipped':>8}{'reads':>7}"
          f"{'MiB read':>10}{'% scan':>8}"
          + "".join(f"{f'q {k} ms':>10}{'scan ms':>9}{'x':>7}" for k in ("cold", "warm")))


def print_target_table(variants):
    """Seed-001-style table at the target selectivity: block size vs bytes read vs reads vs time."""
    s, limit = TARGET["selectivity"], TARGET["max_bytes_vs_scan"]
    print(f"\nat {100 * s:g}% selectivity (mask mode): target bytes read <= {100 * limit:g}% of a full scan")
    print(f"  {'dataset':<16}{'block KiB':>10}{'part KiB':>9}{'reads':>7}{'MiB read':>10}{'% scan':>8}"
          f"{'cold ms':>9}{'MiB/s':>8}{'x scan':>8}  target")
    verdicts = {}
    for v in variants:
        r = next((r for r in v["rows"] if r["selectivity"] == s and r["mode"] == "mask"), None)
        if r is None:
            continue
        q, block_kib = r["query"], 4 * 2 ** v["bits_per_block"] / 1024
        part_kib = block_kib / 2 ** v["sub_block_bits"]
        met = r["bytes_vs_scan"] <= limit
        verdicts[v["name"]] = met
        print(f"  {v['name']:<16}{block_kib:>10g}{part_kib:>9g}{r['model_reads']:>7}{q['bytes_read'] / MIB:>10.2f}"
              f"{100 * r['bytes_vs_scan']:>8.2f}{1e3 * q['cold']['median_s']:>9.1f}"
              f"{q['bytes_read'] / MIB / q['cold']['median_s']:>8.0f}{r['speedup_cold']:>8.2f}  "
              f"{'met' if met else 'MISSED'}")
    print("  blocks read / blocks per level at that selectivity (coarse levels span the whole cube):")
    for v in variants:
        r = next((r for r in v["rows"] if r["selectivity"] == s and r["mode"] == "mask"), None)
        if r is not None:
            print(f"  {v['name']:<16}" + " ".join(f"{h}:{a}/{b}" for h, (a, b) in r["model_blocks_per_level"].items()))
    return verdicts


# ------------------------------------------------------------------------------------------ main
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="samples per axis of the cube (default 256)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (default 5)")
    parser.add_argument("--bits", default="12,14,16,18",
                        help="bits_per_block values, statistics per block only (default 12,14,16,18)")
    parser.add_argument("--sub-block", default="14:2,16:4,18:6",
                        help="extra bpb:g variants with statistics of 2^g parts per block (default 14:2,16:4,18:6, "
                             "which is what hzio.create picks for 14, 16 and 18 when not told; '' none)")
    parser.add_argument("--selectivity", default="0.001,0.01,0.1,1", help="fractions of samples to match")
    parser.add_argument("--modes", default="mask,coords", help="query result forms: mask and/or coords")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "query.json"), help="JSON output")
    add_plot_option(parser)
    return parser.parse_args(argv)


def variants_of(args):
    out = [(int(b), 0) for b in args.bits.split(",") if b]
    out += [tuple(int(v) for v in item.split(":")) for item in args.sub_block.split(",") if item]
    return out


def write_variant(path, source, bits, sub_bits):
    """Write ``source`` with ``bits`` per block (raw codec, HZ order) and statistics of 2^sub_bits parts."""
    with hzio.create(path, shape=source.shape, fields={"data": "float32"}, bits_per_block=bits, codec="raw",
                     overwrite=True, sub_block_bits=sub_bits) as ds:
        ds.write(source)


def main(argv=None):
    args = parse_args(argv)
    scratch = os.path.join(os.path.abspath(args.dir), f"query_{os.getpid()}")
    os.makedirs(scratch)
    facts, uptime_before = machine_facts(scratch), uptime_line()
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}")
    print(f"cube {args.size}^3 float32 ({args.size**3 * 4 / MIB:.0f} MiB); reps {args.reps}",
          flush=True)
    source = make_front(args.size)
    ranges = value_ranges(source, [float(s) for s in args.selectivity.split(",")])
    modes = args.modes.split(",")
    variants, cold_ok = [], True
    print("times are medians of open + query (or open + read + NumPy); x = scan time / query time")
    print_header()
    try:
        for bits, sub_bits in variants_of(args):
            name = f"bpb={bits}" + (f" g={sub_bits}" if sub_bits else "")
            path = os.path.join(scratch, f"front_{bits}_{sub_bits}.idx")
            write_variant(path, source, bits, sub_bits)
            load = [round(x, 2) for x in os.getloadavg()]
            rows, ok = run_variant(args, source, path, name, ranges, modes)
            cold_ok &= ok
            variants.append({"name": name, "bits_per_block": bits, "sub_block_bits": sub_bits, "load": load,
                             "rows": rows})
            shutil.rmtree(path[:-4])
            os.remove(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not cold_ok:
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); 'cold' reads are warm")
    verdicts = print_target_table(variants)
    for v in variants:
        print(f"  load while measuring {v['name']}: {', '.join(map(str, v['load']))}")
    uptime_after = uptime_line()
    agree = all(r["model_agrees"] for v in variants for r in v["rows"])
    print(f"\nevery query equals NumPy on the source; blocks and bytes read equal what the sidecars predict in "
          f"every row: {agree}\nuptime at the end: {uptime_after}")
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/query_bench.py"]
                                  + (argv if argv is not None else sys.argv[1:])),
              "size": args.size, "dtype": "float32", "reps": args.reps, "field": "tanh((r - R(x, y)) / w), sphere",
              "ranges": {str(s): v for s, v in ranges.items()}, "cold_cache_dropped": cold_ok, "machine": facts,
              "uptime_before": uptime_before, "uptime_after": uptime_after, "target": TARGET,
              "target_met": verdicts, "variants": variants,
              "versions": {"hzio": hzio.__version__, "numpy": np.__version__,
                           "hzio_core_built": HZIO_BUILT}}
    write_json(args.json, report)
    plot_after_run(args, "query_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
