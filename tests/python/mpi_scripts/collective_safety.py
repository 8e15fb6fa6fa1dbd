"""Dataset paths and failed commits of the collective writer; rank 0 prints one JSON report.

Run under mpiexec (``tests/python/test_collective_safety.py`` does)::

    mpiexec -n 3 python collective_safety.py '{"out": "/tmp/d", "seed": 7, "steps": {...}}'

The JSON argument holds ``out`` (an empty directory), ``seed``, ``good`` (dataset names that must
work), ``bad`` (names that must be refused; ``run.idx`` is refused because a file ``run`` exists) and
``steps`` (step name -> ``[op, path pattern, errno]`` for ``hzio._core.inject_fault``, armed on every
rank). Each rank writes a z slab of the same seeded arrays. The report holds, per good name, whether
every rank read the whole array back; per bad name, the error class each rank saw; for the blocked
data folder, each rank's error; for 12 new timesteps committed one by one, each rank's errors; per
step, each rank's flush error, its ``times`` after the failure,
whether the .idx kept its bytes, what timestep 0 reads as (``"a"``: the committed data, ``"b"``: the
failed rewrite), the leftover ``.log.``/``.tmp.`` files, and whether writing again and closing then
works.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hzio
import numpy as np
from mpi4py import MPI

SHAPE = (16, 16, 16)
comm = MPI.COMM_WORLD


def slab():
    """This rank's z range."""
    return SHAPE[0] * comm.rank // comm.size, SHAPE[0] * (comm.rank + 1) // comm.size


def write_slab(ds, array, time=None):
    z0, z1 = slab()
    if z1 > z0:
        ds.write(array[z0:z1], offset=(z0, 0, 0), time=time)


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


def fault_case(path, step, a, b, c):
    op, pattern, err = step
    create(path, a, times=[0])
    idx_before = path.read_bytes()
    ds = hzio.open(path, mode="r+", comm=comm)
    write_slab(ds, b, time=0)
    write_slab(ds, c, time=1)
    hzio._core.inject_fault(ds._core, op, pattern, err)
    try:
        failure = error_of(ds.flush)
    finally:
        hzio._core.clear_fault(ds._core)
    comm.Barrier()
    t0 = ds.read(box=((0, 0, 0), SHAPE), time=0)
    result = {
        "error": failure,
        "times": ds.times,
        "idx_same": path.read_bytes() == idx_before,
        "t0": "a" if np.array_equal(t0, a) else "b" if np.array_equal(t0, b) else "neither",
        "debris": sorted(p.name for p in path.parent.rglob("*") if ".log." in p.name or ".tmp." in p.name),
    }
    write_slab(ds, c, time=1)
    result["close_again"] = error_of(ds.close)
    with hzio.open(path, comm=comm) as back:
        result["times_after"] = back.times
        result["t1_after"] = bool(np.array_equal(back.read(box=((0, 0, 0), SHAPE), time=1), c))
    return comm.gather(result)


def main():
    args = json.loads(sys.argv[1])
    out = Path(args["out"])
    rng = np.random.default_rng(args["seed"])
    a, b, c = (rng.random(SHAPE, dtype=np.float32) for _ in range(3))
    report = path_cases(out, args["good"], args["bad"], a)
    report["steps"] = {}
    for i, (name, step) in enumerate(sorted(args["steps"].items())):
        report["steps"][name] = fault_case(out / f"step{i}" / "f.idx", step, a, b, c)
    if comm.rank == 0:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
