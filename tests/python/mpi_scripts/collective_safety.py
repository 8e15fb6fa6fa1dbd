"""Dataset paths and failed commits of the collective writer; rank 0 prints one JSON report.

Run under mpiexec (``tests/python/test_collective_safety.py`` does)::

    mpiexec -n 3 python collective_safety.py '{"out": "/tmp/d", "seed": 7, "cases": [...]}'

The JSON argument holds ``out`` (an empty directory), ``seed``, ``good`` (dataset names that must
work), ``bad`` (names that must be refused; ``run.idx`` is refused because a file ``run`` exists) and
``cases``: failed commits, each ``{"id", "scenario", "op", "pattern", "after_bytes", "errno", "durable"}``
(the fault of ``hzio._core.inject_fault``, armed on every rank; the scenarios are those of
``test_failed_commits.py``: ``"new timestep"``, ``"rewrite"``, ``"partial rewrite"``, ``"rewrite and new
timestep"``). Each rank writes a z slab of the same seeded arrays (``a`` committed as timestep 0 before
the case; ``b`` or its part over timestep 0, ``c`` as timestep 1; then ``d``).

The report holds, per good name, whether every rank read the whole array back; per bad name, the error
class each rank saw; for the blocked data folder, each rank's error; for 12 new timesteps committed one
by one, each rank's errors; and per case id, one dict per rank: its process id, its flush error, its
``times`` after the failure, whether the .idx kept its bytes, what timestep 0 reads as (``"old"``: ``a``,
``"new"``: the case's writes, ``"neither"``), whether timestep 1 is unreadable, the leftover
``.log.``/``.tmp.`` files; then, after the same handle writes again and closes (``close_again``: its
error) and a fresh collective open writes ``d`` (a part over timestep 0, all of timestep 2): the
timesteps listed and whether each reads as expected (``after``), the leftovers again. Rank 0 adds the
blocks whose statistics contradict the data after the failure (``wrong_stats``) and at the end
(``wrong_stats_after``), ``hzio verify``'s exit status then (``verify``, ``verify_after``), and the
data files of timesteps 0 and 1 (``data``) and the .idx (``idx``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import hzio
import hzio.cli
import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import hz_expect as he  # noqa: E402
from commit_scenarios import PART, SHAPE, scenario_result  # noqa: E402

WHOLE = tuple(slice(0, n) for n in SHAPE)
comm = MPI.COMM_WORLD


def slab():
    """This rank's z range."""
    return SHAPE[0] * comm.rank // comm.size, SHAPE[0] * (comm.rank + 1) // comm.size


def write_slab(ds, array, time=None, box=WHOLE):
    """Writes this rank's z slab of ``array[box]`` (``array`` is the whole volume)."""
    z0, z1 = slab()
    z0, z1 = max(z0, box[0].start), min(z1, box[0].stop)
    if z1 > z0:
        part = (slice(z0, z1), *box[1:])
        ds.write(array[part], offset=tuple(s.start for s in part), time=time)


def create(path, array, **options):
    with hzio.create(path, shape=SHAPE, fields={"v": "float32"}, bits_per_block=8, comm=comm, **options) as ds:
        write_slab(ds, array, time=options.get("times", [None])[0])


def error_of(call):
    try:
        call()
    except hzio.Error as e:
        return f"{type(e).__name__}: {e}"
    return None


def path_cases(out, good, bad, a):
    report = {"good": {}, "bad": {}}
    for i, name in enumerate(good):
        path = out / f"good{i}" / name
        create(path, a)
        with hzio.open(path, comm=comm) as ds:
            back = ds.read(box=((0, 0, 0), SHAPE))
        report["good"][name] = comm.gather(bool(np.array_equal(back, a)))
    (out / "bad").mkdir(exist_ok=True)
    if comm.rank == 0:
        (out / "bad" / "run").write_bytes(b"someone's file")
        (out / "bad" / "sub").mkdir()
    comm.Barrier()
    for name in bad:
        report["bad"][name] = comm.gather(error_of(lambda: create(out / "bad" / name, a)))
    ds = hzio.create(out / "blocked.idx", shape=SHAPE, fields={"v": "float32"}, bits_per_block=8, comm=comm)
    if comm.rank == 0:
        (out / "blocked").write_bytes(b"in the way")
    comm.Barrier()
    write_slab(ds, a)
    report["blocked"] = comm.gather(error_of(ds.flush))
    ds.close()
    # Many new timesteps, one commit each: the aggregators make each new time folder at once.
    ds = hzio.create(out / "many" / "t.idx", shape=SHAPE, fields={"v": "float32"}, bits_per_block=6,
                     blocks_per_file=4, times=[0], comm=comm)
    errors = []
    for t in range(12):
        write_slab(ds, a, time=t)
        errors.append(error_of(ds.flush))
    ds.close()
    report["many_times"] = comm.gather(errors)
    return report


def scenario_write(ds, scenario, b, c):
    """This rank's part of the writes of ``scenario`` (as in test_failed_commits.py)."""
    if scenario in ("rewrite", "rewrite and new timestep"):
        write_slab(ds, b, time=0)
    if scenario == "partial rewrite":
        write_slab(ds, b, time=0, box=PART)
    if scenario in ("new timestep", "rewrite and new timestep"):
        write_slab(ds, c, time=1)


def wrong_statistics(path, expected):
    """Rank 0: blocks whose known statistics (count, min, max) are not those of ``expected`` ({time: array})."""
    wrong = []
    with hzio.open(path) as ds:
        block = (he.hz_address(ds.bitmask, np.indices(SHAPE)) >> ds.bits_per_block).reshape(-1)
        for t, array in expected.items():
            rows = ds.blocks(time=t)
            for row in rows[rows["present"] & rows["stats_known"]]:
                values = array.reshape(-1)[block == row["block"]]
                if (row["count"], float(row["min"]), float(row["max"])) != (values.size, values.min(), values.max()):
                    wrong.append([t, int(row["block"])])
    return wrong


def verify(path):
    """Rank 0: ``hzio verify``'s exit status (its CLI entry point, in this process; nonzero on debris too)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = hzio.cli.main(["verify", str(path)])
    return status if "DEBRIS" not in out.getvalue() else f"debris: {out.getvalue()}"


def debris(folder):
    return sorted(p.name for p in folder.rglob("*") if ".log." in p.name or ".tmp." in p.name)


def read_all(ds, time):
    return ds.read(box=((0, 0, 0), SHAPE), time=time)


def fault_case(path, case, a, b, c, d):
    scenario, durable = case["scenario"], case["durable"]
    create(path, a, times=[0], durable=durable, threads=1)
    idx_before = path.read_bytes()
    result = scenario_result(scenario, a, b, c)
    ds = hzio.open(path, mode="r+", comm=comm, durable=durable, threads=1)
    hzio._core.inject_fault(ds._core, case["op"], case["pattern"], case["errno"], case["after_bytes"])
    try:
        failure = error_of(lambda: (scenario_write(ds, scenario, b, c), ds.flush()))
    finally:
        hzio._core.clear_fault(ds._core)
    comm.Barrier()
    t0 = read_all(ds, 0)
    r = {
        "pid": os.getpid(),
        "error": failure,
        "times": ds.times,
        "idx_same": path.read_bytes() == idx_before,
        "t0": "old" if np.array_equal(t0, a) else "new" if np.array_equal(t0, result[0]) else "neither",
        "t1_missing": error_of(lambda: read_all(ds, 1)) is not None,
        "debris": debris(path.parent),
    }
    comm.Barrier()
    if comm.rank == 0:
        r["wrong_stats"] = wrong_statistics(path, {0: t0})
        r["verify"] = verify(path)
    comm.Barrier()
    scenario_write(ds, scenario, b, c)  # the same handle writes and commits again
    r["close_again"] = error_of(ds.close)
    with hzio.open(path, mode="r+", comm=comm, durable=durable, threads=1) as again:  # a fresh open writes more
        write_slab(again, d, time=0, box=PART)
        write_slab(again, d, time=2)
    result[0] = result[0].copy()
    result[0][PART] = d[PART]
    result[2] = d
    with hzio.open(path, comm=comm, threads=1) as back:
        r["times_after"] = back.times
        r["after"] = {str(t): bool(np.array_equal(read_all(back, t), array)) for t, array in sorted(result.items())}
    r["debris_after"] = debris(path.parent)
    comm.Barrier()
    if comm.rank == 0:
        r["wrong_stats_after"] = wrong_statistics(path, result)
        r["verify_after"] = verify(path)
        with hzio.open(path) as back:
            r["idx"] = str(path)
            r["data"] = {str(t): str(back.blocks(time=t)["file"][0]) for t in (0, 1) if t in back.times}
    comm.Barrier()
    return comm.gather(r)


def main():
    args = json.loads(sys.argv[1])
    out = Path(args["out"])
    rng = np.random.default_rng(args["seed"])
    # Disjoint value ranges: every rewritten block changes its minimum and maximum.
    a, b, c, d = (k + rng.random(SHAPE, dtype=np.float32) for k in range(4))
    report = path_cases(out, args["good"], args["bad"], a)
    report["cases"] = {}
    for i, case in enumerate(args["cases"]):
        report["cases"][case["id"]] = fault_case(out / f"case{i}" / "f.idx", case, a, b, c, d)
    if comm.rank == 0:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
