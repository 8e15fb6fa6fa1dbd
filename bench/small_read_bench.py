"""Benchmark: small reads, a ``box``^3 sub-box at full resolution of a ``size``^3 float32 cube, hzio against
the chunked formats at their best: zarr v3 and HDF5 (h5py) with ``box``^3 chunks and no compression, plus
OpenVisus reading hzio's dataset.

Each format reads the same boxes (``--aligned`` positions on the chunk grid and ``--unaligned`` ones off it,
drawn with a fixed seed) in six ways: cold (page cache dropped) and warm, each as open + read and as a read in
an already open object, and as the first read of a fresh process (a child interpreter; its import is timed
apart). The order of the formats rotates with each repetition. It reports medians, hzio's ratios to zarr and
h5py (per box, then their geometric mean; target <= 1, printed, never asserted) and the bytes each cold read
pulled from the disk (``read_bytes`` of /proc/self/io). Every read is compared with the source; a mismatch
fails the run. See bench/README.md.

    .venv/bin/python bench/small_read_bench.py [--size 512] [--box 64] [--reps 7] [--no-plot]
"""

import argparse
import base64
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, NamedTuple

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, machine_facts, tree_bytes, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 2**20
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
FORMATS = ("hzio", "zarr", "h5py", "openvisus")
BASELINES = ("zarr", "h5py")
TARGET_MAX_RATIO = 1.0  # hzio time / baseline time, every case; never asserted
CASES = {"cold_open_read": "cold, open + read", "cold_read": "cold, read in an open object",
         "warm_open_read": "warm, open + read", "warm_read": "warm, read again in the open object",
         "fresh_cold": "fresh process, cold: open + read", "fresh_warm": "fresh process, warm: open + read"}
COLD_CASES = ("cold_open_read", "cold_read", "fresh_cold")
COMPILERS = "ninja|cc1plus"  # a build on this machine takes the cores (and the disk) the reads use

# The child of the fresh-process cases: a new interpreter imports one library, opens and reads one box, then
# prints one JSON line. Its calls are those of load_readers below.
CHILD = r"""
import base64, json, os, sys, time
def read_bytes():
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))
fmt, path = sys.argv[1], sys.argv[2]
z, y, x, n = (int(v) for v in sys.argv[3:7])
t0 = time.perf_counter()
if fmt == "hzio":
    import hzio
elif fmt == "zarr":
    import zarr
elif fmt == "h5py":
    import h5py
else:
    import OpenVisus as ov
t1 = time.perf_counter()
b0 = read_bytes()
t2 = time.perf_counter()
if fmt == "hzio":
    a = hzio.open(path)[z:z + n, y:y + n, x:x + n]
elif fmt == "zarr":
    a = zarr.open_array(path, mode="r")[z:z + n, y:y + n, x:x + n]
elif fmt == "h5py":
    a = h5py.File(path, "r")["data"][z:z + n, y:y + n, x:x + n]
else:
    a = ov.LoadDataset(path).read(x=[x, x + n], y=[y, y + n], z=[z, z + n])
t3 = time.perf_counter()
b1 = read_bytes()
built = time.ctime(os.path.getmtime(hzio._core.__file__)) if fmt == "hzio" else None
print(json.dumps({"import_s": t1 - t0, "open_read_s": t3 - t2, "read_bytes": b1 - b0, "hzio_core_built": built,
                  "shape": list(a.shape), "dtype": str(a.dtype), "data": base64.b64encode(a.tobytes()).decode()}))
"""


class Reader(NamedTuple):
    """How one format opens its copy of the cube, reads the box at ``zyx`` of edge ``n``, and closes."""

    open: Callable[[str], Any]
    read: Callable[[Any, tuple[int, int, int], int], np.ndarray]
    close: Callable[[Any], None]


class Position(NamedTuple):
    kind: str  # "aligned" (on the chunk grid) or "unaligned"
    zyx: tuple[int, int, int]


# ------------------------------------------------------------------------------------------ formats
def box_slices(zyx: tuple[int, int, int], n: int) -> tuple[slice, slice, slice]:
    """The NumPy key of the box of edge ``n`` at corner ``zyx``."""
    z, y, x = zyx
    return slice(z, z + n), slice(y, y + n), slice(x, x + n)


def load_readers(names: list[str]) -> tuple[dict[str, Reader], dict[str, str], dict[str, str]]:
    """Import each format's library; return its reader, library versions and why the others were skipped."""
    readers, versions, skipped = {}, {"hzio": hzio.__version__, "numpy": np.__version__}, {}
    if "hzio" in names:
        readers["hzio"] = Reader(hzio.open, lambda ds, p, n: ds[box_slices(p, n)], lambda ds: ds.close())
    for name in names:
        try:
            if name == "zarr":
                import zarr
                readers[name] = Reader(lambda path: zarr.open_array(path, mode="r"),
                                       lambda a, p, n: a[box_slices(p, n)], lambda a: None)
                versions[name] = zarr.__version__
            elif name == "h5py":
                import h5py
                readers[name] = Reader(lambda path: h5py.File(path, "r")["data"],
                                       lambda d, p, n: d[box_slices(p, n)], lambda d: d.file.close())
                versions[name], versions["hdf5"] = h5py.__version__, h5py.version.hdf5_version
            elif name == "openvisus":
                import OpenVisus as ov
                readers[name] = Reader(ov.LoadDataset,
                                       lambda db, p, n: db.read(x=[p[2], p[2] + n], y=[p[1], p[1] + n],
                                                                z=[p[0], p[0] + n]),
                                       lambda db: None)
                versions[name] = getattr(ov, "__version__", "unknown")
        except ImportError as e:
            skipped[name] = f"not importable ({e})"
    return readers, versions, skipped


def write_copies(scratch: str, cube: np.ndarray, chunk: int, names: list[str], bits_per_block: int | None):
    """Write the cube once per format (OpenVisus reads hzio's copy); return the path each format reads."""
    paths = {"hzio": os.path.join(scratch, "cube.idx"), "zarr": os.path.join(scratch, "cube.zarr"),
             "h5py": os.path.join(scratch, "cube.h5")}
    paths["openvisus"] = paths["hzio"]
    with hzio.create(paths["hzio"], shape=cube.shape, fields={"data": "float32"}, bits_per_block=bits_per_block) as ds:
        ds.write(cube)
    if "zarr" in names:
        import zarr
        z = zarr.create_array(store=paths["zarr"], shape=cube.shape, chunks=(chunk,) * 3, dtype="float32",
                              compressors=None, zarr_format=3)
        z[:] = cube
    if "h5py" in names:
        import h5py
        with h5py.File(paths["h5py"], "w") as f:
            f.create_dataset("data", data=cube, chunks=(chunk,) * 3)  # no compression unless asked
    os.sync()
    return {name: paths[name] for name in names}


def on_disk(path: str) -> dict[str, int]:
    """Bytes and files of one copy (for hzio the .idx plus its data folder)."""
    parts = [p for p in ([path, path[:-4]] if path.endswith(".idx") else [path]) if os.path.exists(p)]
    files = [os.path.join(r, n) for p in parts for r, _, names in os.walk(p) for n in names]
    return {"bytes": sum(tree_bytes(p) for p in parts), "files": len(files) + sum(map(os.path.isfile, parts))}


# ------------------------------------------------------------------------------------------ data and boxes
def make_source(size: int) -> np.ndarray:
    """``size``^3 float32: smooth waves rising with z, plus seeded noise (as the other benchmarks)."""
    axis = np.arange(size, dtype=np.float32)
    cube = np.sin(axis[None, None, :] / 7) * np.cos(axis[None, :, None] / 11) + axis[:, None, None] / size
    cube += np.random.default_rng(5).standard_normal(cube.shape, dtype=np.float32) * np.float32(1e-3)
    return cube


def box_positions(size: int, box: int, chunk: int, aligned: int, unaligned: int, seed: int) -> list[Position]:
    """Distinct box corners: ``aligned`` on the chunk grid, ``unaligned`` off it on every axis."""
    rng = np.random.default_rng(seed)
    slots = (size - box) // chunk + 1
    out = []
    for pick in rng.choice(slots**3, size=min(aligned, slots**3), replace=False):
        z, y, x = (int(v) * chunk for v in np.unravel_index(int(pick), (slots,) * 3))
        out.append(Position("aligned", (z, y, x)))
    while len(out) < min(aligned, slots**3) + unaligned:
        z, y, x = (int(v) for v in rng.integers(0, size - box + 1, 3))
        if z % chunk and y % chunk and x % chunk and (z, y, x) not in [p.zyx for p in out]:
            out.append(Position("unaligned", (z, y, x)))
    return out


def compilers_running() -> bool:
    return subprocess.run(["pgrep", "-f", COMPILERS], capture_output=True).returncode == 0


def check(name: str, result: np.ndarray, expected: np.ndarray) -> None:
    """Exit with FAIL unless ``result`` equals ``expected`` exactly (shape, dtype, every sample)."""
    if result.shape != expected.shape or result.dtype != expected.dtype or not np.array_equal(result, expected):
        raise SystemExit(f"FAIL: {name} returned wrong data ({result.dtype} {result.shape}, expected "
                         f"{expected.dtype} {expected.shape})")


# ------------------------------------------------------------------------------------------ timed calls
def read_bytes() -> int:
    """Bytes this process (all its threads) caused to be fetched from storage so far (/proc/self/io)."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))


def measured(fn: Callable[[], Any]) -> tuple[float, int, Any]:
    """Call ``fn()``: (seconds, bytes read from storage meanwhile, its result)."""
    b0 = read_bytes()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    return seconds, read_bytes() - b0, result


def open_read(reader: Reader, path: str, zyx: tuple[int, int, int], box: int) -> tuple[Any, np.ndarray]:
    """Open the copy at ``path`` and read the box; return the open object and the array."""
    obj = reader.open(path)
    return obj, reader.read(obj, zyx, box)


def fresh_process(name: str, path: str, pos: Position, box: int) -> dict[str, Any]:
    """A new interpreter imports the library, opens and reads the box once; returns its JSON line, decoded."""
    out = subprocess.run([sys.executable, "-c", CHILD, name, path, *map(str, pos.zyx), str(box)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: the {name} reading process exited with {out.returncode}:\n{out.stderr}")
    child = json.loads(out.stdout.strip().splitlines()[-1])
    data = base64.b64decode(child.pop("data"))
    child["array"] = np.frombuffer(data, dtype=child["dtype"]).reshape(child["shape"])
    return child


def run_position(name: str, reader: Reader, path: str, pos: Position, box: int, expected: np.ndarray,
                 cold: list[bool]) -> dict[str, dict[str, Any]]:
    """The six cases for one format and one box, cold ones after a page-cache drop; returns per case
    ``{"s", "read_bytes"}`` (fresh-process cases also ``import_s``)."""
    where = f"{name} box at {pos.zyx}"
    out: dict[str, dict[str, Any]] = {}

    def record(case: str, seconds: float, nbytes: int, result: np.ndarray, **extra: Any) -> None:
        check(f"{where}, {CASES[case]}", result, expected)
        out[case] = {"s": seconds, "read_bytes": nbytes, **extra}

    cold.append(drop_page_cache())
    s, nb, (obj, a) = measured(lambda: open_read(reader, path, pos.zyx, box))
    record("cold_open_read", s, nb, a)
    s, nb, a = measured(lambda: reader.read(obj, pos.zyx, box))
    record("warm_read", s, nb, a)
    reader.close(obj)
    s, nb, (obj, a) = measured(lambda: open_read(reader, path, pos.zyx, box))
    record("warm_open_read", s, nb, a)
    reader.close(obj)
    obj = reader.open(path)
    cold.append(drop_page_cache())
    s, nb, a = measured(lambda: reader.read(obj, pos.zyx, box))
    record("cold_read", s, nb, a)
    reader.close(obj)
    for case in ("fresh_warm", "fresh_cold"):  # warm first: the page cache still holds the box
        if case == "fresh_cold":
            cold.append(drop_page_cache())
        child = fresh_process(name, path, pos, box)
        record(case, child["open_read_s"], child["read_bytes"], child["array"], import_s=child["import_s"],
               hzio_core_built=child["hzio_core_built"])
    return out


# ------------------------------------------------------------------------------------------ reporting
def summarize(samples: dict[str, dict[str, list[dict[str, Any]]]], positions: list[Position]) -> dict[str, Any]:
    """Per format and case: the median ms over every repetition and box, the median per box and the median
    bytes; then hzio's ratio to each baseline per box (of the medians over the repetitions), its geometric
    mean over all boxes and over each kind, and the target verdict per case.

    The geometric mean of the per-box ratios is the headline, not the ratio of the overall medians (also in
    the JSON): aligned and unaligned boxes take very different times, and where the overall median of a
    format falls between the two groups depends on the format."""
    def ms(rows: list[dict[str, Any]], key: str = "s") -> float:
        return 1e3 * statistics.median(r[key] for r in rows)

    per_format: dict[str, Any] = {}
    for name, by_case in samples.items():
        per_format[name] = {}
        for case, rows in by_case.items():
            per_box = [ms([r for r in rows if r["position"] == i]) for i in range(len(positions))]
            entry = {"median_ms": ms(rows), "per_box_median_ms": per_box,
                     "median_read_bytes": statistics.median(r["read_bytes"] for r in rows),
                     "median_read_bytes_by_kind": {k: statistics.median(r["read_bytes"] for r in rows if r["kind"] == k)
                                                   for k in {r["kind"] for r in rows}}}
            if "import_s" in rows[0]:
                entry["median_import_ms"] = ms(rows, "import_s")
            per_format[name][case] = entry
    ratios: dict[str, Any] = {}
    for case in CASES:
        ratios[case] = {}
        for base in (b for b in BASELINES if b in per_format):
            h, b = per_format["hzio"][case], per_format[base][case]
            per_box = [x / y for x, y in zip(h["per_box_median_ms"], b["per_box_median_ms"])]
            kinds = {k: [r for r, p in zip(per_box, positions) if p.kind == k] for k in ("aligned", "unaligned")}
            ratios[case][base] = {"all": statistics.geometric_mean(per_box), "per_box": per_box,
                                  **{k: statistics.geometric_mean(v) for k, v in kinds.items() if v},
                                  "ratio_of_medians": h["median_ms"] / b["median_ms"]}
        if ratios[case]:
            ratios[case]["target_met"] = all(r["all"] <= TARGET_MAX_RATIO for r in ratios[case].values())
    return {"formats": per_format, "ratios": ratios}


def print_tables(summary: dict[str, Any], names: list[str], box_mib: float) -> None:
    per, ratios = summary["formats"], summary["ratios"]
    bases = [b for b in BASELINES if b in names]
    print(f"\nmedian ms over every repetition and box; hzio / baseline: per box, geometric mean over the boxes "
          f"(lower is better; target <= {TARGET_MAX_RATIO:g})")
    print(f"  {'case':<38}" + "".join(f"{n + ' ms':>14}" for n in names)
          + "".join(f"{'hzio/' + b:>12}" for b in bases) + "  target")
    for case, label in CASES.items():
        verdict = ("met" if ratios[case]["target_met"] else "MISSED") if "target_met" in ratios[case] else "-"
        print(f"  {label:<38}" + "".join(f"{per[n][case]['median_ms']:>14.2f}" for n in names)
              + "".join(f"{ratios[case][b]['all']:>12.2f}" for b in bases) + f"  {verdict}")
    print("\nhzio / baseline by kind of box: geometric mean over the aligned boxes and over the unaligned ones")
    print(f"  {'case':<38}" + "".join(f"{f'{b} aligned':>16}{f'{b} unaligned':>16}" for b in bases))
    for case, label in CASES.items():
        print(f"  {label:<38}" + "".join(f"{ratios[case][b].get('aligned', float('nan')):>16.2f}"
                                         f"{ratios[case][b].get('unaligned', float('nan')):>16.2f}" for b in bases))
    print(f"\nMiB read from the disk per cold read, aligned / unaligned boxes (medians; read_bytes of /proc/self/io; "
          f"the box is {box_mib:.2f} MiB)")
    print(f"  {'case':<38}" + "".join(f"{n:>16}" for n in names))
    for case in COLD_CASES:
        cells = [" / ".join(f"{per[n][case]['median_read_bytes_by_kind'].get(k, float('nan')) / MIB:.2f}"
                            for k in ("aligned", "unaligned")) for n in names]
        print(f"  {CASES[case]:<38}" + "".join(f"{c:>16}" for c in cells))
    print("\nfresh process: import of the library, median ms (warm / cold)")
    print("  " + "   ".join(f"{n} {per[n]['fresh_warm']['median_import_ms']:.0f} / "
                            f"{per[n]['fresh_cold']['median_import_ms']:.0f}" for n in names))


# ------------------------------------------------------------------------------------------ main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--box", type=int, default=64, help="edge of the box read, and of the chunks (default 64)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions; medians are reported (default 7)")
    parser.add_argument("--aligned", type=int, default=5, help="boxes on the chunk grid (default 5)")
    parser.add_argument("--unaligned", type=int, default=3, help="boxes off the chunk grid on every axis (default 3)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the box positions (default 11)")
    parser.add_argument("--formats", default=",".join(FORMATS), help=f"default {','.join(FORMATS)}")
    parser.add_argument("--bits-per-block", type=int, default=None, help="hzio's bits_per_block (default: hzio's)")
    parser.add_argument("--dir", default=os.path.join(REPO_ROOT, "build", "bench_tmp"),
                        help="scratch folder on the disk to measure (default build/bench_tmp); emptied at the end")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "small_read.json"), help="JSON output")
    add_plot_option(parser)
    args = parser.parse_args(argv)
    if args.box < 2 or args.size < 2 * args.box:
        parser.error("--box must be at least 2 and --size at least twice --box")
    args.formats = [n for n in args.formats.split(",") if n]
    if "hzio" not in args.formats or set(args.formats) - set(FORMATS):
        parser.error(f"--formats: hzio plus any of {', '.join(FORMATS[1:])}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    readers, versions, skipped = load_readers(args.formats)
    names = [n for n in FORMATS if n in readers]
    scratch = os.path.join(os.path.abspath(args.dir), f"small_read_{os.getpid()}")
    os.makedirs(scratch)
    facts, uptime_before, compiling = machine_facts(scratch), uptime_line(), [compilers_running()]
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}; "
          + ", ".join(f"{k} {v}" for k, v in versions.items() if k not in ("hzio", "numpy")))
    for name, why in skipped.items():
        print(f"skipping {name}: {why}")
    positions = box_positions(args.size, args.box, args.box, args.aligned, args.unaligned, args.seed)
    print(f"cube {args.size}^3 float32, box {args.box}^3 at {len(positions)} positions "
          f"({', '.join(f'{p.kind} {p.zyx}' for p in positions)}); formats {', '.join(names)}; reps {args.reps}",
          flush=True)
    cube = make_source(args.size)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {n: {c: [] for c in CASES} for n in names}
    cold: list[bool] = []
    try:
        paths = write_copies(scratch, cube, args.box, names, args.bits_per_block)
        disk = {n: on_disk(p) for n, p in paths.items() if n != "openvisus"}
        print("on disk: " + ", ".join(f"{n} {d['bytes'] / MIB:.1f} MiB in {d['files']} files" for n, d in disk.items()))
        t_start = time.monotonic()
        for rep in range(args.reps):
            for name in names[rep % len(names):] + names[:rep % len(names)]:
                for i, pos in enumerate(positions):
                    expected = cube[box_slices(pos.zyx, args.box)]
                    for case, row in run_position(name, readers[name], paths[name], pos, args.box, expected,
                                                  cold).items():
                        samples[name][case].append({"rep": rep, "position": i, "kind": pos.kind, **row})
            print(f"  repetition {rep + 1}/{args.reps} done ({time.monotonic() - t_start:.0f} s)", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = summarize(samples, positions)
    print_tables(summary, names, args.box**3 * 4 / MIB)
    if not all(cold):
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); 'cold' reads were warm")
    builds = {r["hzio_core_built"] for c in ("fresh_cold", "fresh_warm") for r in samples["hzio"][c]}
    if builds - {HZIO_BUILT}:
        print(f"WARNING: a fresh process loaded another hzio build ({sorted(builds)}): hzio was reinstalled")
    compiling.append(compilers_running())
    if any(compiling):
        print(f"WARNING: a compiler ({COMPILERS}) was running at the start or the end; timings may be disturbed")
    uptime_after = uptime_line()
    print(f"\nevery read equals the source; uptime at the end: {uptime_after}")
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/small_read_bench.py"]
                                  + (argv if argv is not None else sys.argv[1:])),
              "size": args.size, "box": args.box, "chunk": args.box, "dtype": "float32", "reps": args.reps,
              "hzio_bits_per_block": args.bits_per_block, "positions": [p._asdict() for p in positions],
              "cases": CASES, "skipped": skipped, "on_disk": disk, "cold_cache_dropped": all(cold),
              "target": {"max_ratio": TARGET_MAX_RATIO, "baselines": list(BASELINES),
                         "meaning": "hzio time / baseline time per box (medians over the repetitions), geometric "
                                    "mean over the boxes, in every case"},
              "compiler_running_at_start_end": compiling, "machine": facts, "uptime_before": uptime_before,
              "uptime_after": uptime_after, "summary": summary, "samples": samples,
              "versions": {**versions, "hzio_core_built": HZIO_BUILT}}
    write_json(args.json, report)
    plot_after_run(args, "small_read_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
