"""Collective writes with partitions in local index space (a dataset per partition and a ``.midx`` mosaic)
of random data over random box decompositions.

Run under mpiexec (``tests/python/test_local_partitions.py`` does)::

    mpiexec -n 4 python write_local.py '{"out": "/tmp/d", "seed": 7, "case": {"shape": [40, 33, 17], ...}}'

The JSON argument (or ``$HZIO_MPI_ARGS``) holds ``out`` (a directory), ``seed``, ``case`` (see
:func:`normalize_case`) and ``stage``:

``"create"`` (default)
    ``hzio.create(<out>/local.idx, ..., comm=, partitions=, index_space="local")``; every rank writes its
    boxes of every (field, timestep) of ``times`` (:func:`plan_writes`: a random bisection of the domain
    per pair, random owners, some ranks idle, some boxes left out), one ``flush``, ``close``. With
    ``append_time``, the mosaic is then reopened with ``hzio.open(<out>/local.midx, comm=, mode="r+")``
    and that new timestep is written the same way (no box left out), flushed and closed.
``"append"``
    Only the second half, on an existing ``<out>/local.midx`` (written by another run, maybe at
    another rank count).
``"bad_input"``
    Collective misuse (:func:`bad_input`), in ``<out>``; rank 0 prints what each raised.

Rank 0 prints one JSON line: the paths, each flush's report (timings dropped; ``same_reports`` says
whether every rank returned the same one) and the bytes each rank handed to ``write`` per flush.

The module is importable without MPI: the test uses :func:`build_arrays`, :func:`plan_writes` and
:func:`expected_arrays` to know what the mosaic must hold.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import hz_expect as he  # noqa: E402
from abort_on_failure import aborting_every_rank  # noqa: E402
from write_random import bisect  # noqa: E402

_DEFAULTS = dict(times=[0, 1], codec="raw", bitmask=None, bits_per_block=None, blocks_per_file=None,
                 placement="localized", holes=0.0, idle_ranks=0, append_time=None, append_region=None)


def normalize_case(case: dict) -> dict:
    """The case with defaults filled in.

    Keys: ``shape``; ``fields`` as ``[[name, dtype], ...]`` or ``[[name, dtype, {"codec": ...}], ...]``;
    ``partitions`` (R, a power of two >= 2); ``times`` (declared at create and all written);
    ``codec``, ``bitmask``, ``bits_per_block``, ``blocks_per_file``, ``placement`` as in
    ``hzio.create``; ``holes`` (probability that a box of the create's timesteps is left unwritten);
    ``idle_ranks`` (that many ranks own no box, when there are more ranks than that); ``append_time``
    (a timestep written after reopening the mosaic, None: none); ``append_region`` (``[lo, hi]``: the
    appended timestep's boxes cut only this part of the domain, None: all of it).
    """
    out = dict(_DEFAULTS)
    out.update(case)
    out["shape"] = tuple(int(v) for v in out["shape"])
    out["fields"] = [list(f) for f in out["fields"]]
    out["times"] = [int(t) for t in out["times"]]
    return out


def dtypes(case: dict) -> dict:
    return {f[0]: f[1] for f in case["fields"]}


def all_times(case: dict) -> list:
    """Every timestep the mosaic gets: the create's, then the appended one."""
    return case["times"] + ([int(case["append_time"])] if case["append_time"] is not None else [])


def build_arrays(seed: int, case: dict) -> dict:
    """The global arrays ``{(field, time): ndarray}`` of every timestep (the same on every rank)."""
    rng = np.random.default_rng([seed, 21])
    return {(f, t): he.random_array(rng, case["shape"], d) for t in all_times(case) for f, d in dtypes(case).items()}


def plan_writes(seed: int, case: dict, size: int, times) -> list:
    """The writes of one collective write of ``times`` at ``size`` ranks: ``[(rank, field, time, lo, hi)]``.

    Each (field, timestep) gets its own bisection or reuses the previous one (new owners either way);
    ``idle_ranks`` random ranks own no box. Boxes are left out (``holes``) only at the create's
    timesteps, so that every partition gets samples of an appended timestep.
    """
    times = [int(t) for t in times]
    rng = np.random.default_rng([seed, 22, size, *times])
    idle = int(case["idle_ranks"]) if size > int(case["idle_ranks"]) else 0
    active = rng.permutation(size)[idle:]
    writes, boxes = [], None
    for t in times:
        region = ((0,) * len(case["shape"]), case["shape"])
        if t not in case["times"] and case["append_region"] is not None:
            region = tuple(tuple(int(v) for v in c) for c in case["append_region"])
        for f in dtypes(case):
            if boxes is None or rng.random() < 0.5:
                cut = bisect(rng, [h - l for l, h in zip(*region)], int(rng.integers(2, 2 * size + 6)))
                boxes = [(tuple(a + l for a, l in zip(lo, region[0])), tuple(b + l for b, l in zip(hi, region[0])))
                         for lo, hi in cut]
            for lo, hi in boxes:
                if t in case["times"] and rng.random() < case["holes"]:
                    continue
                writes.append((int(rng.choice(active)), f, t, tuple(lo), tuple(hi)))
    return [writes[i] for i in rng.permutation(len(writes))]


def expected_arrays(seed: int, case: dict, runs) -> dict:
    """What every (field, timestep) must read back as after ``runs``, ``[(size, times)]`` (the
    collective writes in order): the written boxes, 0 elsewhere."""
    arrays = build_arrays(seed, case)
    out = {}
    for (f, t), a in arrays.items():
        out[(f, t)] = np.zeros_like(a)
    for size, times in runs:
        for _, f, t, lo, hi in plan_writes(seed, case, size, times):
            box = tuple(slice(l, h) for l, h in zip(lo, hi))
            out[(f, t)][box] = arrays[(f, t)][box]
    return out


def fields_spec(case: dict) -> list:
    return [(f[0], f[1], f[2]) if len(f) > 2 else (f[0], f[1]) for f in case["fields"]]


def _stable(report) -> dict:
    """The report as plain values, without timings (which differ between ranks)."""
    out = {k: v for k, v in dict(report).items() if k not in ("max", "mean", "levels", "groups", "merge")}
    out["levels"] = [dict(lv) for lv in report["levels"]]
    out["groups"] = [dict(g, partitions=list(g["partitions"])) for g in report["groups"]]
    out["merge"] = {k: v for k, v in dict(report["merge"]).items() if k != "seconds"}
    return out


def _write(ds, rank, writes, arrays) -> int:
    nbytes = 0
    for r, f, t, lo, hi in writes:
        if r == rank:
            data = np.ascontiguousarray(arrays[(f, t)][tuple(slice(l, h) for l, h in zip(lo, hi))])
            ds.write(data, offset=lo, field=f, time=t)
            nbytes += data.nbytes
    return nbytes


def write_collectively(comm, out, seed, case, stage):
    """The collective writes of ``stage``; returns [(type name, report, bytes this rank staged)]."""
    import hzio  # noqa: PLC0415

    arrays = build_arrays(seed, case)
    path, midx = os.path.join(out, "local.idx"), os.path.join(out, "local.midx")
    done = []
    if stage == "create":
        ds = hzio.create(path, case["shape"], fields_spec(case), codec=case["codec"], bitmask=case["bitmask"],
                         bits_per_block=case["bits_per_block"], blocks_per_file=case["blocks_per_file"],
                         times=case["times"], overwrite=True, durable=False, comm=comm, placement=case["placement"],
                         threads=1, partitions=case["partitions"], index_space="local")
        nbytes = _write(ds, comm.rank, plan_writes(seed, case, comm.size, case["times"]), arrays)
        done.append((type(ds).__name__, _stable(ds.flush()), nbytes))
        ds.close()
    if case["append_time"] is not None:
        ds = hzio.open(midx, comm=comm, mode="r+", durable=False, threads=1, placement=case["placement"])
        nbytes = _write(ds, comm.rank, plan_writes(seed, case, comm.size, [case["append_time"]]), arrays)
        done.append((type(ds).__name__, _stable(ds.flush()), nbytes))
        ds.close()
    return done


def _outcome(comm, action) -> list:
    """Runs ``action()`` on every rank: ``[error type name or "ok", message]`` of rank 0, and whether every
    rank got the same type (a collective error must be agreed, not raised on some ranks only)."""
    try:
        action()
        got = ["ok", ""]
    except Exception as e:  # noqa: BLE001
        got = [type(e).__name__, str(e)]
    kinds = comm.allgather(got[0])
    return [got[0], got[1], len(set(kinds)) == 1]


def bad_input(comm, out) -> dict:
    """Collective misuse of local index space, each on every rank; ``{check: _outcome}``."""
    import shutil  # noqa: PLC0415

    import hzio  # noqa: PLC0415

    shape, fields = (16, 12), {"v": "int16"}
    kw = dict(comm=comm, overwrite=True, durable=False, threads=1)
    res = {}

    def create(name, **extra):
        return hzio.create(os.path.join(out, name), shape, fields, **{**kw, **extra})

    res["partitions_1"] = _outcome(comm, lambda: create("a.idx", partitions=1, index_space="local").close())
    res["partitions_3"] = _outcome(comm, lambda: create("b.idx", partitions=3, index_space="local").close())
    res["bogus_space"] = _outcome(comm, lambda: create("c.idx", partitions=2, index_space="bogus").close())
    res["template_too_long"] = _outcome(comm, lambda: hzio.create(os.path.join(out, "d.idx"), (2, 2), fields, **kw,
                                                                  partitions=4, index_space="local").close())
    good = os.path.join(out, "m.idx")
    with create("m.idx", partitions=2, index_space="local", times=[0]) as ds:
        if comm.rank == 0:
            ds.write(np.arange(16 * 12, dtype=np.int16).reshape(shape), time=0)
    res["exists"] = _outcome(comm, lambda: hzio.create(good, shape, fields, comm=comm, partitions=2,
                                                       index_space="local", durable=False).close())
    res["collective_open_for_reading"] = _outcome(comm, lambda: hzio.open(good, comm=comm).read(time=0))
    res["other_partition_count"] = _outcome(comm, lambda: hzio.open(good, comm=comm, mode="r+", partitions=4).close())
    ds = hzio.open(good, comm=comm, mode="r+", durable=False)
    res["write_outside"] = _outcome(comm, lambda: ds.write(np.zeros((4, 4), np.int16), offset=(14, 0), time=1))
    res["read_through_writer"] = _outcome(comm, lambda: ds.read(time=0))
    res["query_through_writer"] = _outcome(comm, lambda: ds.query("v", 0, 1, time=0))
    ds.close()
    # A mosaic whose second part is gone: found at open or at the flush that writes it, on every rank.
    lost = os.path.join(out, "lost")
    if comm.rank == 0:
        shutil.copytree(out, lost, ignore=lambda d, names: [n for n in names if n == "lost"])
        os.remove(os.path.join(lost, "m_p1.idx"))
        with open(os.path.join(lost, "bad.midx"), "w") as f:
            f.write("<dataset typename='IdxMultipleDataset' mosaic='true'>\n</dataset>\n")
    comm.Barrier()

    def write_lost():
        with hzio.open(os.path.join(lost, "m.midx"), comm=comm, mode="r+", durable=False) as w:
            w.write(np.ones(shape, np.int16), time=0)

    res["missing_part"] = _outcome(comm, write_lost)
    res["malformed"] = _outcome(comm, lambda: hzio.open(os.path.join(lost, "bad.midx"), comm=comm, mode="r+").close())
    return res


def main(argv) -> None:
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        args = json.loads(argv[1] if len(argv) > 1 else os.environ["HZIO_MPI_ARGS"])
        if args.get("stage") == "bad_input":
            res = bad_input(comm, args["out"])
            if comm.rank == 0:
                print(json.dumps(res), flush=True)
            return
        seed, case, out = int(args["seed"]), normalize_case(args["case"]), args["out"]
        done = write_collectively(comm, out, seed, case, args.get("stage", "create"))
        everyone = comm.gather(done, root=0)
        if comm.rank == 0:
            print(json.dumps({"path": os.path.join(out, "local.idx"), "midx": os.path.join(out, "local.midx"),
                              "size": comm.size, "types": [d[0] for d in done],
                              "reports": [d[1] for d in done],
                              "same_reports": all([d[1] for d in e] == [d[1] for d in done] for e in everyone),
                              "staged_bytes": [[e[i][2] for e in everyone] for i in range(len(done))]}),
                  flush=True)


if __name__ == "__main__":
    main(sys.argv)
