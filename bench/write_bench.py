"""Collective hzio writes against IOR-like baselines in the same MPI run.

Run it with ``mpiexec -n N .venv/bin/python bench/write_bench.py ...`` (``-h`` lists the options). Each
rank owns one box of a global array; every case
writes the same bytes with the same fsync policy: file per process (``os.write`` per MiB), one shared
file with MPI-IO collective writes, and hzio (``hzio.create(..., comm=...)``, one case per placement and
partition count). Times are the maximum over ranks between two barriers; medians over the repetitions are reported.
"""

import argparse
import dataclasses
import glob
import itertools
import json
import os
import platform
import shutil
import statistics
import sys
import time

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run

MIB = 1 << 20


class UsageError(Exception):
    """A bad option: printed as ``write_bench: error: ...`` with exit status 2."""


def parse_ints(text, option):
    """``"4,8,16"`` -> ``(4, 8, 16)``; positive integers only."""
    try:
        values = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise UsageError(f"{option} expects comma-separated positive integers, got {text!r}")
    return values


def parse_partitions(text):
    """``"1,2,4"`` -> ``(1, 2, 4)``: the partition counts of ``--partitions``, powers of two, repeats dropped.

    Examples
    --------
    >>> parse_partitions("1,4,2,4")
    (1, 4, 2)
    """
    values = parse_ints(text, "--partitions")
    bad = [n for n in values if n & (n - 1)]
    if bad:
        raise UsageError(f"--partitions expects comma-separated powers of two (1, 2, 4, ...), got {text!r} "
                         f"({', '.join(map(str, bad))} {'is' if len(bad) == 1 else 'are'} not)")
    return tuple(dict.fromkeys(values))


def shape_text(shape):
    return " x ".join(map(str, shape))


def print_fields(pairs):
    width = max(len(label) for label, _ in pairs)
    for label, value in pairs:
        print(f"  {label:<{width}}  {value}")


def print_table(rows):
    """Rows of strings, the first a header; columns padded to their widest cell, numbers to the right."""
    widths = [max(map(len, col)) for col in zip(*rows)]
    for row in rows:
        print("  " + "  ".join(c.rjust(w) if c[:1].isdigit() else c.ljust(w) for c, w in zip(row, widths)).rstrip())

PIECE_BYTES = MIB  # os.write size of the file-per-process baseline
MPIIO_PIECE_BYTES = 1 << 30  # largest Write_at_all: MPI counts are C ints
CASE_TITLES = {"fpp": "file per process", "shared": "shared file, MPI-IO"}


def hzio_case(placement, partitions, index_space="global"):
    """The case name of an hzio write: ``hzio_<placement>``, then ``_p<R>`` for R > 1 partitions, then
    ``_local`` in local index space.

    Examples
    --------
    >>> hzio_case("localized", 1), hzio_case("uniform", 4), case_title("hzio_uniform_p4")
    ('hzio_localized', 'hzio_uniform_p4', 'hzio uniform p4')
    >>> hzio_case("localized", 2, "local")
    'hzio_localized_p2_local'
    """
    return f"hzio_{placement}" + (f"_p{partitions}" if partitions > 1 else "") + (
        "_local" if index_space == "local" else "")


def case_title(name):
    """How the output names a case: the baselines by their titles, ``hzio_localized_p2`` as ``hzio localized p2``."""
    return CASE_TITLES.get(name, name.replace("_", " "))


def near_cubic_decomp(ranks, shape):
    """Factor ``ranks`` into one count per axis of ``shape`` giving boxes of the smallest surface.

    Ties go to more parts along the slower axes (z first). Raises UsageError when no factoring gives
    every box at least one sample.

    Examples
    --------
    >>> near_cubic_decomp(4, (512, 512, 512)), near_cubic_decomp(3, (8, 8, 8)), near_cubic_decomp(6, (2, 64, 64))
    ((2, 2, 1), (3, 1, 1), (1, 3, 2))
    """
    divisors = [d for d in range(1, ranks + 1) if ranks % d == 0]
    candidates = []
    for parts in itertools.product(divisors, repeat=len(shape)):
        if int(np.prod(parts)) == ranks and all(p <= n for p, n in zip(parts, shape)):
            edges = [n / p for n, p in zip(shape, parts)]
            area = sum(np.prod(edges[:a] + edges[a + 1:]) for a in range(len(edges)))
            candidates.append((round(area, 6), tuple(-p for p in parts), parts))
    if not candidates:
        raise UsageError(f"{ranks} ranks cannot each get a box of the {shape_text(shape)} array")
    return min(candidates)[2]


def rank_box(shape, decomp, rank):
    """Return the ``(lo, hi)`` box ([z, y, x], exclusive) of ``rank`` in C order over the ``decomp`` grid.

    Uneven splits give the first parts along an axis one sample more.

    Examples
    --------
    >>> rank_box((10, 4, 4), (3, 1, 1), 0), rank_box((10, 4, 4), (3, 1, 1), 2)
    (((0, 0, 0), (4, 4, 4)), ((7, 0, 0), (10, 4, 4)))
    """
    lo, hi = [], []
    for n, p, i in zip(shape, decomp, np.unravel_index(rank, decomp)):
        base, extra = divmod(n, p)
        lo.append(int(i) * base + min(int(i), extra))
        hi.append(lo[-1] + base + (int(i) < extra))
    return tuple(lo), tuple(hi)


def rank_arrays(shape, box, dtype, fields, timesteps):
    """The arrays a rank writes: ``{(field, timestep): array}`` of its box, cheap to build.

    Sample ``p`` of field ``f`` at timestep ``t`` holds (global C-order index of ``p``) * components +
    component + ``f * timesteps + t``, cast to the dtype (integers wrap).
    """
    _, scalar, comps = hzio.parse_dtype(dtype)
    index = np.ravel_multi_index(np.ix_(*[np.arange(l, h) for l, h in zip(*box)]), shape).astype(np.int64)
    if comps > 1:
        index = index[..., None] * comps + np.arange(comps, dtype=np.int64)
    return {(name, t): (index + (f * timesteps + t)).astype(scalar)
            for f, name in enumerate(fields) for t in range(timesteps)}


# ------------------------------------------------------------------------------------------ cases
def write_fpp(path, arrays, fsync):
    """File-per-process baseline: the rank's arrays in one file, ``os.write`` per MiB, fsync, close."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for a in arrays:
            view = memoryview(a.reshape(-1).view(np.uint8))
            pos = 0
            while pos < len(view):
                pos += os.write(fd, view[pos:pos + PIECE_BYTES])
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_shared(MPI, comm, path, arrays, offset, pieces, fsync):
    """Shared-file baseline: each rank's arrays back to back at ``offset`` with ``Write_at_all``.

    ``pieces`` is the most ``Write_at_all`` calls any rank needs per array (every rank makes as many).
    """
    fh = MPI.File.Open(comm, path, MPI.MODE_WRONLY | MPI.MODE_CREATE)
    try:
        for a in arrays:
            view = a.reshape(-1).view(np.uint8)
            for k in range(pieces):
                fh.Write_at_all(offset + k * MPIIO_PIECE_BYTES, view[k * MPIIO_PIECE_BYTES:(k + 1) * MPIIO_PIECE_BYTES])
            offset += view.nbytes
        if fsync:
            fh.Sync()
    finally:
        fh.Close()


def write_hzio(comm, path, cfg, box, arrays, placement, partitions, index_space="global"):
    """hzio: collective create (``partitions`` as given), one ``write`` per field and timestep, close (flush,
    fsync, commit).

    Returns the close's write report, as plain dicts (for the JSON output).
    """
    times = list(range(cfg["timesteps"])) if cfg["timesteps"] > 1 else None
    with hzio.create(path, shape=cfg["global"], fields={f: cfg["dtype"] for f in cfg["field_names"]},
                     codec=cfg["codec"], layout=cfg["layout"], bits_per_block=cfg["bits_per_block"],
                     blocks_per_file=cfg["blocks_per_file"], times=times, overwrite=True, durable=cfg["fsync"],
                     threads=cfg["threads"], comm=comm, placement=placement, aggregator_count=cfg["aggregator_count"],
                     aggregator_bytes=cfg["aggregator_bytes"], partitions=partitions,
                     index_space=index_space) as ds:
        for (field, t), a in arrays.items():
            ds.write(a, offset=box[0], field=field, time=t, copy=cfg["copy"])
    return dataclasses.asdict(ds.last_write_report)


def check_read_back(comm, path, box, arrays, local=False):
    """Collective: every rank reads its box of every field and timestep and compares (collectively; a
    mosaic of local index space, each rank on its own). Returns the problems."""
    problems = []
    with hzio.open(path) if local else hzio.open(path, comm=comm) as ds:
        for (field, t), want in arrays.items():
            got = ds.read(box=box, field=field, time=t)
            if got.shape != want.shape:
                problems.append(f"rank {comm.Get_rank()}, box {box}, field {field}, timestep {t}: shape {got.shape}")
            elif not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                problems.append(f"rank {comm.Get_rank()}, box {box}, field {field}, timestep {t}: {len(bad)} samples "
                                f"differ, the first at {bad[0].tolist()} of the box")
    return [p for rank_problems in comm.allgather(problems) for p in rank_problems]


def timed(MPI, comm, op):
    """Barrier, run ``op``, barrier; return (the slowest rank's seconds, ``op``'s value). Collective.

    An exception on any rank is raised on every rank (after the second barrier, so no rank hangs).
    """
    comm.Barrier()
    t0 = time.perf_counter()
    error, value = None, None
    try:
        value = op()
    except Exception as e:  # every rank must reach the barrier and the agreement below
        error = e
    comm.Barrier()
    seconds = time.perf_counter() - t0
    messages = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
    if error is not None:
        raise error
    failed = next((f"rank {r}: {m}" for r, m in enumerate(messages) if m), None)
    if failed:
        raise hzio.Error(f"failed on another rank, {failed}")
    return comm.allreduce(seconds, op=MPI.MAX), value


# ------------------------------------------------------------------------------------------ the run
def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise UsageError(f"write_bench needs mpi4py (pip install mpi4py): {e}") from None
    return MPI, MPI.COMM_WORLD  # an hzio built without MPI fails in its first create, on every rank


def _config(args, ranks):
    shape = parse_ints(args.global_shape, "--global")
    if len(shape) > 3:
        raise UsageError(f"--global needs 1 to 3 axes ([z, y, x] order), got {args.global_shape!r}")
    decomp = parse_ints(args.decomp, "--decomp") if args.decomp else near_cubic_decomp(ranks, shape)
    if len(decomp) != len(shape) or int(np.prod(decomp)) != ranks:
        raise UsageError(f"--decomp {args.decomp} must have {len(shape)} counts whose product is the rank count "
                         f"{ranks}")
    if any(p > n for p, n in zip(decomp, shape)):
        raise UsageError(f"--decomp {args.decomp} leaves some ranks without samples of {shape_text(shape)}")
    for option, value in (("--fields", args.fields), ("--timesteps", args.timesteps), ("--reps", args.reps)):
        if value < 1:
            raise UsageError(f"{option} must be at least 1, got {value}")
    partitions = parse_partitions(args.partitions)
    hzio.parse_dtype(args.dtype)
    cfg = {k: getattr(args, k) for k in ("fields", "dtype", "timesteps", "codec", "layout", "bits_per_block",
                                         "blocks_per_file", "aggregator_count", "aggregator_bytes", "fsync", "copy",
                                         "reps")}
    # One encode thread per rank: the ranks share the cores, and the baselines write from one thread.
    cfg.update({"global": shape, "decomp": tuple(decomp), "field_names": [f"f{i}" for i in range(args.fields)],
                "placements": ["localized", "uniform"] if args.placement == "both" else [args.placement],
                "partitions": partitions, "threads": 1,
                "index_spaces": ["global", "local"] if args.index_space == "both" else [args.index_space],
                "dir": os.path.abspath(args.dir)})
    return cfg


def _run_dir(comm, parent):
    """Rank 0 makes ``parent/write_<pid>``; returns (its absolute path, whether ``parent`` was made)."""
    made, path = False, None
    if comm.Get_rank() == 0:
        parent = os.path.abspath(parent)
        made = not os.path.exists(parent)
        path = os.path.join(parent, f"write_{os.getpid()}")
        os.makedirs(path)
    return comm.bcast((path, made), root=0)


def bench_write(args):
    """Run the benchmark (Collective over ``MPI.COMM_WORLD``); rank 0 prints and writes ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The options of ``write_bench.py -h``.

    Returns
    -------
    int
        0, or 1 when a rank read back different data from an hzio dataset (rank 0 prints FAIL lines).

    Notes
    -----
    JSON keys: ``benchmark`` ("write"), ``hzio_version``, ``mpi_library``, ``host``, ``cpu_count``,
    ``load_before``/``load_after`` (1, 5, 15 min load averages), ``ranks``, ``config`` (the options, with
    ``global`` and ``decomp`` in [z, y, x]), ``bytes`` (all ranks), ``rank_bytes`` (min, max), ``cases``
    (``fpp``, ``shared``, and ``hzio_<placement>`` with ``_p<R>`` appended for R > 1 partitions: ``seconds``
    per rep, ``median_s``, ``min_s``, ``max_s``, ``mib_per_s``; hzio cases add ``report``, the write report
    of the median rep, ``partitioning`` (:func:`partition_summary` of that report) and ``verified``),
    ``ratios`` (each hzio case: ``vs_fpp``, ``vs_shared``, of MiB/s) and ``verified``.

    Examples
    --------
    ``mpiexec -n 4 .venv/bin/python bench/write_bench.py --global 512,512,512 --placement both --json write.json``
    ``mpiexec -n 8 .venv/bin/python bench/write_bench.py --global 256,256,256 --partitions 1,2,4``
    """
    MPI, comm = _mpi()
    cfg = _config(args, comm.Get_size())
    rank = comm.Get_rank()
    load_before = os.getloadavg()
    box = rank_box(cfg["global"], cfg["decomp"], rank)
    arrays = rank_arrays(cfg["global"], box, cfg["dtype"], cfg["field_names"], cfg["timesteps"])
    run_dir, made_parent = _run_dir(comm, args.dir)
    ops, paths = _cases(MPI, comm, cfg, run_dir, box, arrays)
    try:
        seconds, reports, problems = _repeat(MPI, comm, cfg, ops, paths, box, arrays)
        comm.Barrier()
    finally:
        if rank == 0:
            shutil.rmtree(run_dir, ignore_errors=True)
            if made_parent and not os.listdir(os.path.dirname(run_dir)):
                os.rmdir(os.path.dirname(run_dir))
    my_bytes = sum(a.nbytes for a in arrays.values())
    byte_range = (comm.allreduce(my_bytes, op=MPI.MIN), comm.allreduce(my_bytes, op=MPI.MAX))
    total = comm.allreduce(my_bytes)
    if rank != 0:
        return 0 if not any(problems.values()) else 1
    result = _result(MPI, comm, cfg, seconds, reports, problems, total, byte_range, load_before)
    print_bench(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
        plot_after_run(args, "write_bench")
    return 0 if result["verified"] else 1


def _remove(path):
    """Remove a file or folder, and an hzio dataset's data folder next to its .idx (and a mosaic's .midx
    and parts)."""
    stem = os.path.splitext(path)[0]
    parts = glob.glob(glob.escape(stem) + "_p*") if path.endswith(".idx") else []
    for p in (path, stem, stem + ".midx", *parts):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def _cases(MPI, comm, cfg, run_dir, box, arrays):
    """Return ``({case: operation}, {case: path})`` for the baselines and each hzio placement and partition
    count."""
    rank, buffers = comm.Get_rank(), list(arrays.values())
    offset = comm.exscan(sum(a.nbytes for a in buffers)) or 0  # None on rank 0
    pieces = comm.allreduce(max(1, -(-max(a.nbytes for a in buffers) // MPIIO_PIECE_BYTES)), op=MPI.MAX)
    paths = {"fpp": os.path.join(run_dir, "fpp"), "shared": os.path.join(run_dir, "shared.bin")}
    ops = {"fpp": lambda: write_fpp(os.path.join(paths["fpp"], f"rank{rank:05d}.bin"), buffers, cfg["fsync"]),
           "shared": lambda: write_shared(MPI, comm, paths["shared"], buffers, offset, pieces, cfg["fsync"])}
    for placement, partitions, space in itertools.product(cfg["placements"], cfg["partitions"], cfg["index_spaces"]):
        if space == "local" and partitions == 1:
            continue  # one partition has no local index space
        name = hzio_case(placement, partitions, space)
        paths[name] = os.path.join(run_dir, f"{name}.idx")
        ops[name] = lambda name=name, placement=placement, partitions=partitions, space=space: write_hzio(
            comm, paths[name], cfg, box, arrays, placement, partitions, space)
    return ops, paths


def _repeat(MPI, comm, cfg, ops, paths, box, arrays):
    """Run every case ``reps`` times in a rotating order; check each hzio case's last rep by reading back."""
    names = list(ops)
    seconds = {n: [] for n in names}
    reports = {n: [] for n in names if n.startswith("hzio")}
    problems = {n: [] for n in reports}
    for rep in range(cfg["reps"]):
        k = rep % len(names)
        for name in names[k:] + names[:k]:  # rotated, so slow drift of a shared machine hits every case
            if comm.Get_rank() == 0 and name == "fpp":
                os.makedirs(paths["fpp"])
            comm.Barrier()
            s, report = timed(MPI, comm, ops[name])
            seconds[name].append(s)
            if name in reports:
                reports[name].append(report)
                if rep == cfg["reps"] - 1:
                    problems[name] = check_read_back(comm, paths[name], box, arrays, name.endswith("_local"))
            comm.Barrier()
            if comm.Get_rank() == 0:
                _remove(paths[name])
                # The file system frees (and, mounted with discard, trims) the removed blocks at its next
                # journal commit: let that happen here, not during the next case's timed write.
                os.sync()
    return seconds, reports, problems


# ------------------------------------------------------------------------------------------ results
def _summary(seconds, total_bytes):
    median = statistics.median(seconds)
    return {"seconds": seconds, "median_s": median, "min_s": min(seconds), "max_s": max(seconds),
            "mib_per_s": total_bytes / MIB / median}


def partition_summary(rep):
    """The partitioning of a write report (a dict): groups, record messages, the merge and the moves.

    Returns
    -------
    dict
        ``partitions``; ``groups`` and ``ranks_per_group`` (without partitions the ranks form one group);
        ``messages`` and ``message_bytes`` (all ranks); ``group_messages`` (within groups, summed),
        ``group_max_messages`` and ``group_max_bytes`` (the most in one group); ``merge`` (``mergers``,
        ``files``, ``messages``, ``bytes``, ``seconds``); ``moved_messages`` and ``moved_bytes``.

    Examples
    --------
    >>> rep = {"ranks": 4, "partitions": 2, "messages": 9, "message_bytes": 900, "moved_messages": 1,
    ...        "moved_bytes": 50, "merge": {"mergers": 1, "files": 2, "messages": 2, "bytes": 250},
    ...        "groups": [{"ranks": 2, "messages": 4, "bytes": 400}, {"ranks": 2, "messages": 2, "bytes": 200}]}
    >>> s = partition_summary(rep)
    >>> s["groups"], s["ranks_per_group"], s["group_messages"], s["group_max_messages"], s["group_max_bytes"]
    (2, [2, 2], 6, 4, 400)
    """
    groups = list(rep["groups"]) or [{"ranks": rep["ranks"], "messages": rep["messages"],
                                      "bytes": rep["message_bytes"]}]
    return {"partitions": rep["partitions"], "groups": len(groups), "ranks_per_group": [g["ranks"] for g in groups],
            "messages": rep["messages"], "message_bytes": rep["message_bytes"],
            "group_messages": sum(g["messages"] for g in groups),
            "group_max_messages": max(g["messages"] for g in groups),
            "group_max_bytes": max(g["bytes"] for g in groups),
            "merge": {k: rep["merge"].get(k, 0) for k in ("mergers", "files", "messages", "bytes", "seconds")},
            "moved_messages": rep["moved_messages"], "moved_bytes": rep["moved_bytes"]}


def _result(MPI, comm, cfg, seconds, reports, problems, total, byte_range, load_before):
    cases = {name: _summary(s, total) for name, s in seconds.items()}
    ratios = {}
    for name, reps in reports.items():
        order = sorted(range(len(seconds[name])), key=seconds[name].__getitem__)
        cases[name]["report"] = reps[order[(len(order) - 1) // 2]]  # the median rep (the faster one of two)
        cases[name]["partitioning"] = partition_summary(cases[name]["report"])
        cases[name]["verified"] = not problems[name]
        cases[name]["problems"] = problems[name]
        ratios[name] = {"vs_fpp": cases[name]["mib_per_s"] / cases["fpp"]["mib_per_s"],
                        "vs_shared": cases[name]["mib_per_s"] / cases["shared"]["mib_per_s"]}
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items() if k != "field_names"}
    return {"benchmark": "write", "hzio_version": hzio.__version__,
            "mpi_library": MPI.Get_library_version().strip().splitlines()[0], "host": platform.node(),
            "cpu_count": os.cpu_count(), "load_before": list(load_before), "load_after": list(os.getloadavg()),
            "command": sys.argv, "ranks": comm.Get_size(), "config": config, "bytes": total,
            "rank_bytes": list(byte_range), "cases": cases, "ratios": ratios,
            "verified": all(c.get("verified", True) for c in cases.values())}


def print_bench(r):
    """Print the dict of :func:`bench_write` as text: setup, the case table, then each hzio case's report."""
    c = r["config"]
    print(f"write_bench: {r['ranks']} ranks, global {shape_text(c['global'])} ([z, y, x]), decomposition "
          f"{shape_text(c['decomp'])}, {_count(c['fields'], 'field')} of {c['dtype']}, "
          f"{_count(c['timesteps'], 'timestep')}")
    print_fields([
        ("hzio options", f"codec {c['codec']}, layout {c['layout']}, threads {c['threads']}, bits_per_block "
                         f"{c['bits_per_block'] or 'default'}, blocks_per_file {c['blocks_per_file'] or 'default'}, "
                         f"aggregator_count {c['aggregator_count']}, aggregator_bytes {c['aggregator_bytes']}, "
                         f"partitions {', '.join(map(str, c['partitions']))}, "
                         f"write copies {'yes' if c.get('copy', True) else 'no (copy=False)'}"),
        ("bytes", f"{r['bytes'] / MIB:.1f} MiB in all, {r['rank_bytes'][0] / MIB:.1f} to "
                  f"{r['rank_bytes'][1] / MIB:.1f} MiB per rank; fsync {'on' if c['fsync'] else 'off'}"),
        ("runs", f"{c['reps']} reps per case, medians, rotating order; in {c['dir']}"),
        ("load average", f"{_load(r['load_before'])} before, {_load(r['load_after'])} after "
                         f"({r['cpu_count']} cpus, {r['host']})"),
        ("mpi", r["mpi_library"])])
    rows = [["case", "median s", "min s", "max s", "MiB/s", "x fpp", "x shared"]]
    for name, case in r["cases"].items():
        ratio = r["ratios"].get(name)
        rows.append([case_title(name), f"{case['median_s']:.3f}", f"{case['min_s']:.3f}",
                     f"{case['max_s']:.3f}", f"{case['mib_per_s']:.1f}",
                     f"{ratio['vs_fpp']:.2f}" if ratio else "-", f"{ratio['vs_shared']:.2f}" if ratio else "-"])
    print()
    print_table(rows)
    if any(n > 1 for n in c["partitions"]):
        for placement, space in itertools.product(c["placements"], c.get("index_spaces", ["global"])):
            cases = {n: r["cases"][hzio_case(placement, n, space)]["partitioning"] for n in c["partitions"]
                     if hzio_case(placement, n, space) in r["cases"]}
            _print_partitioning(placement + (" (local index space)" if space == "local" else ""), cases)
    for name in r["ratios"]:
        _print_report(case_title(name), r["cases"][name]["report"])
    print()
    for name in r["ratios"]:
        problems = r["cases"][name]["problems"]
        print(f"read-back check, {case_title(name)}: " + ("FAIL" if problems else
              "OK (every rank read its box and found what it wrote)"))
        for p in problems:
            print(f"FAIL: {case_title(name)} read back wrong data: {p}", file=sys.stderr)


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _load(triple):
    return " ".join(f"{v:.2f}" for v in triple)


def _print_partitioning(placement, summaries):
    """One column per partition count (``{count: partition_summary}``): groups, messages, merge and moves."""
    def mib(b):
        return f"{b / MIB:.2f}"

    def spread(values):
        return str(values[0]) if min(values) == max(values) else f"{min(values)}-{max(values)}"

    rows = {"groups (ranks each)": lambda s: f"{s['groups']} ({spread(s['ranks_per_group'])})",
            "messages, all ranks": lambda s: str(s["messages"]),
            "MiB, all ranks": lambda s: mib(s["message_bytes"]),
            "messages, most in a group": lambda s: str(s["group_max_messages"]),
            "MiB, most in a group": lambda s: mib(s["group_max_bytes"]),
            "merge: mergers, files": lambda s: f"{s['merge']['mergers']}, {s['merge']['files']}",
            "merge: messages": lambda s: str(s["merge"]["messages"]),
            "merge: MiB": lambda s: mib(s["merge"]["bytes"]),
            "merge: seconds (slowest rank)": lambda s: f"{s['merge']['seconds']:.3f}",
            "moved: messages": lambda s: str(s["moved_messages"]),
            "moved: MiB": lambda s: mib(s["moved_bytes"])}
    print(f"\nhzio {placement}, record messages between ranks by partition count (write report of the median rep):")
    print_table([["", *(_count(n, "partition") for n in summaries)]]
                + [[label, *map(cell, summaries.values())] for label, cell in rows.items()])


def _print_report(title, rep):
    print(f"\n{title}, write report of the median rep: {rep['ranks']} ranks, {rep['aggregators']} aggregators, "
          f"{rep['rounds']} rounds, {rep['files']} files, {rep['file_bytes'] / MIB:.1f} MiB in files")
    rows = [["phase", "max s", "mean s"]]
    rows += [[p, f"{rep['max'][p]:.3f}", f"{rep['mean'].get(p, 0):.3f}"] for p in rep["max"]]
    print_table(rows)
    rows = [["level", "blocks", "MiB", "hz max s", "write max s"]]
    rows += [[str(lv["level"]), str(lv["blocks"]), f"{lv['bytes'] / MIB:.3f}", f"{lv['hz_max']:.4f}",
              f"{lv['write_max']:.4f}"] for lv in rep["levels"]]
    print_table(rows)


def build_parser():
    """The options of the benchmark."""
    w = argparse.ArgumentParser(
        prog="write_bench.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Under mpiexec -n N, each rank writes one box of a global array (fields x timesteps) with hzio\n"
                    "(collective create, write, close) and, with the same bytes and fsync policy, to a file of its\n"
                    "own (os.write per MiB) and to one shared file (MPI-IO Write_at_all). Prints the median time\n"
                    "(slowest rank, between barriers) and MiB/s of each case, hzio's ratios to the baselines, and\n"
                    "hzio's write report (phases, levels); with --partitions, each hzio case once per partition\n"
                    "count, with its groups, record messages, merge and moves. Every rank then reads its box back\n"
                    "and compares.")
    w.add_argument("--global", dest="global_shape", metavar="Z,Y,X", default="512,512,512",
                   help="global array shape in [z, y, x] order (default: 512,512,512)")
    w.add_argument("--decomp", metavar="PZ,PY,PX",
                   help="ranks per axis, product = rank count (default: a near-cubic factoring); uneven splits allowed")
    w.add_argument("--fields", metavar="N", type=int, default=1, help="fields (default: 1)")
    w.add_argument("--dtype", default="float32", help="field dtype, e.g. float32 or float32[3] (default: float32)")
    w.add_argument("--timesteps", metavar="T", type=int, default=1, help="timesteps (default: 1)")
    w.add_argument("--codec", default="raw", help="hzio codec (default: raw; baselines always write raw bytes)")
    w.add_argument("--layout", default="hzorder", choices=["hzorder", "rowmajor"], help="default: hzorder")
    w.add_argument("--bits-per-block", metavar="N", type=int, help="log2 of samples per block (default: OpenVisus's)")
    w.add_argument("--blocks-per-file", metavar="N", type=int, help="blocks per data file (default: OpenVisus's)")
    w.add_argument("--placement", default="localized", choices=["localized", "uniform", "both"],
                   help="aggregator placement; both runs the two in the same run (default: localized)")
    w.add_argument("--partitions", metavar="LIST", default="1",
                   help="partition counts (powers of two, comma-separated): each hzio case runs once per count, "
                        "as hzio_<placement>_p<R> for R > 1 (default: 1, no partitioning)")
    w.add_argument("--index-space", default="global", choices=["global", "local", "both"],
                   help="index space of the partitioned cases (R > 1): one dataset, or one per partition and a "
                        ".midx (hzio_<placement>_p<R>_local); default: global")
    w.add_argument("--aggregator-count", metavar="N", type=int, default=0, help="cap on aggregators (default: 0, none)")
    w.add_argument("--aggregator-bytes", metavar="BYTES", type=int, default=256 << 20,
                   help="memory an aggregator may take per round (default: 268435456)")
    w.add_argument("--copy", action=argparse.BooleanOptionalAction, default=True,
                   help="hzio's write copies each array (default); --no-copy passes copy=False, so the flush "
                        "reads the caller's arrays (the baselines write from them too)")
    w.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=True,
                   help="make every case durable: hzio durable=True, fsync, MPI File.Sync (default: on)")
    w.add_argument("--reps", metavar="R", type=int, default=3, help="repetitions per case (default: 3)")
    w.add_argument("--dir", default="hzio_bench_tmp",
                   help="scratch folder; the run works in DIR/write_<pid> and removes it (default: ./hzio_bench_tmp)")
    w.add_argument("--json", metavar="PATH", help="also write the full results as JSON (rank 0)")
    add_plot_option(w)
    return w


def main(argv=None):
    """Exit status: 0, 1 when a read-back differs, 2 on a bad option or an hzio error."""
    args = build_parser().parse_args(argv)
    try:
        return bench_write(args)
    except (UsageError, hzio.Error) as e:
        print(f"write_bench: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
