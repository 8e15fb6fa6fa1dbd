"""Collective write of random data over a random box decomposition, then the same data from one process.

Run under mpiexec (``tests/python/test_parallel_write.py`` does)::

    mpiexec -n 3 python write_random.py '{"out": "/tmp/d", "seed": 7, "case": {"shape": [40, 33, 17], ...}}'

The JSON argument (or ``$HZIO_MPI_ARGS``) holds ``out`` (a directory), ``seed`` and ``case`` (see
:func:`normalize_case`). Every rank builds the same global arrays and the same write plan from the seed
(:func:`build_arrays`, :func:`plan_writes`): for each (field, timestep) a recursive random bisection of
the domain into uneven boxes, each owned by a random rank (some ranks may own none), some boxes possibly
left unwritten (``holes``). The ranks write their boxes into ``<out>/parallel.idx`` collectively
(``flushes`` collective flushes, then ``close``); then rank 0 writes the same boxes with the one-process
writer into ``<out>/serial.idx`` and prints one JSON line: paths, every flush report of every rank
(timings dropped), the bytes each rank handed to ``write`` per flush, and the one-process report.

The module is importable without MPI: the test uses :func:`build_arrays`, :func:`plan_writes` and
:func:`expected_arrays` to know what the datasets must hold.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hz_expect as he  # noqa: E402
from abort_on_failure import aborting_every_rank  # noqa: E402

_DEFAULTS = dict(times=None, written_times=None, codec="raw", layout="hzorder", bitmask=None, bits_per_block=None,
                 blocks_per_file=None, placement="localized", aggregator_count=0, aggregator_bytes=256 << 20,
                 holes=0.0, idle_ranks=0, flushes=1, durable=False, borrow=0.0, rewrite=0.0,
                 sub_block_bits=None, slabs=False, partitions=1, node_memory=0.0)


def normalize_case(case: dict) -> dict:
    """The case with defaults filled in.

    Keys: ``shape``; ``fields`` as ``[[name, dtype], ...]`` or ``[[name, dtype, {"codec": ..., "layout":
    ...}], ...]``; ``times`` (None: one timestep 0 without a time folder); ``written_times`` (the
    timesteps that get data, default all); ``codec``, ``layout``, ``bitmask``, ``bits_per_block``,
    ``blocks_per_file``, ``placement``, ``aggregator_count``, ``aggregator_bytes``, ``durable``,
    ``sub_block_bits`` as in ``hzio.create``; ``holes`` (probability that a box is left
    unwritten); ``idle_ranks`` (that many ranks get no box at all, when there are more ranks than that);
    ``flushes`` (collective flushes the writes are spread over); ``borrow`` (probability that a
    collective write passes ``copy=False``; the other writes clobber their array after ``write``
    returns, which a copy must not see); ``rewrite`` (probability that a rank first writes junk over its
    box or a random part of it, in the same flush, which the real write that follows must replace; a
    rank's first write always is); ``slabs`` (instead of random boxes, rank r writes the r-th of
    near-equal slabs along the first axis: large boxes that hold whole blocks); ``partitions`` (domain
    partitioning of the collective write, as in ``hzio.create``); ``node_memory`` (probability that a write,
    junk or real, is staged with ``copy=False`` from an array in node memory, ``hzio.shared_array``: the
    aggregators on the node read it where it lies).
    """
    out = dict(_DEFAULTS)
    out.update(case)
    out["shape"] = tuple(int(v) for v in out["shape"])
    out["fields"] = [list(f) for f in out["fields"]]
    if out["written_times"] is None:
        out["written_times"] = list(out["times"]) if out["times"] is not None else [0]
    return out


def keys(case: dict) -> list:
    """(field, timestep) pairs that get data, in a fixed order."""
    return [(f[0], int(t)) for t in case["written_times"] for f in case["fields"]]


def all_keys(case: dict) -> list:
    """Every (field, timestep) pair of the dataset, written or not."""
    return [(f[0], int(t)) for t in (case["times"] if case["times"] is not None else [0]) for f in case["fields"]]


def build_arrays(seed: int, case: dict) -> dict:
    """The global arrays ``{(field, time): ndarray}`` of every written pair (the same on every rank)."""
    rng = np.random.default_rng([seed, 1])
    dtypes = {f[0]: f[1] for f in case["fields"]}
    return {(f, t): he.random_array(rng, case["shape"], dtypes[f]) for f, t in keys(case)}


def bisect(rng: np.random.Generator, shape, count: int) -> list:
    """``count`` (or fewer, if the domain is too small) non-overlapping boxes covering ``shape``.

    Recursive random bisection: a random box (weighted by volume) is cut along a random axis at a random
    plane, so the boxes are uneven and mostly not powers of two.
    """
    boxes = [((0,) * len(shape), tuple(shape))]
    while len(boxes) < count:
        sizes = np.array([np.prod([h - l for l, h in zip(*b)]) for b in boxes], dtype=float)
        if sizes.max() < 2:
            break
        i = int(rng.choice(len(boxes), p=sizes / sizes.sum()))
        lo, hi = boxes[i]
        axes = [a for a in range(len(shape)) if hi[a] - lo[a] >= 2]
        if not axes:
            continue
        a = int(rng.choice(axes))
        cut = int(rng.integers(lo[a] + 1, hi[a]))
        boxes[i] = (lo, hi[:a] + (cut,) + hi[a + 1:])
        boxes.append((lo[:a] + (cut,) + lo[a + 1:], hi))
    return boxes


def plan_writes(seed: int, case: dict, size: int) -> list:
    """Every write of the collective run: ``[(rank, flush, field, time, lo, hi)]`` in write order.

    Each (field, timestep) gets its own bisection or reuses the previous one (new owners either way);
    ``idle_ranks`` random ranks own no box at all.
    """
    rng = np.random.default_rng([seed, 2, size])
    idle = int(case["idle_ranks"]) if size > int(case["idle_ranks"]) else 0
    active = rng.permutation(size)[idle:]
    writes, boxes = [], None
    for field, time in keys(case):
        if case["slabs"]:
            cuts = np.linspace(0, case["shape"][0], size + 1).round().astype(int)
            rest = tuple(case["shape"][1:])
            writes += [[r, 0, field, time, (int(cuts[r]),) + (0,) * len(rest), (int(cuts[r + 1]),) + rest]
                       for r in range(size) if cuts[r + 1] > cuts[r]]
            continue
        if boxes is None or rng.random() < 0.5:
            boxes = bisect(rng, case["shape"], int(rng.integers(1, 2 * size + 5)))
        for lo, hi in boxes:
            if rng.random() < case["holes"]:
                continue
            writes.append([int(rng.choice(active)), 0, field, time, lo, hi])
    order = rng.permutation(len(writes))
    writes = [writes[i] for i in order]
    for i, w in enumerate(writes):
        w[1] = i * int(case["flushes"]) // max(1, len(writes))
    return [tuple(w) for w in writes]


def expected_arrays(seed: int, case: dict, size: int) -> dict:
    """What every (field, timestep) must read back as: the written boxes, 0 elsewhere."""
    arrays = build_arrays(seed, case)
    dtypes = {f[0]: f[1] for f in case["fields"]}
    out = {}
    for f, t in all_keys(case):
        base, comps = he.split_dtype(dtypes[f])
        out[(f, t)] = np.zeros(case["shape"] + ((comps,) if comps > 1 else ()), dtype=base)
    for _, _, f, t, lo, hi in plan_writes(seed, case, size):
        box = tuple(slice(l, h) for l, h in zip(lo, hi))
        out[(f, t)][box] = arrays[(f, t)][box]
    return out


def fields_spec(case: dict) -> list:
    return [(f[0], f[1], f[2]) if len(f) > 2 else (f[0], f[1]) for f in case["fields"]]


def create_kwargs(case: dict) -> dict:
    return dict(shape=case["shape"], fields=fields_spec(case), codec=case["codec"], layout=case["layout"],
                bitmask=case["bitmask"], bits_per_block=case["bits_per_block"],
                blocks_per_file=case["blocks_per_file"], times=case["times"], durable=case["durable"],
                overwrite=True, sub_block_bits=case["sub_block_bits"])


def _box_data(arrays, f, t, lo, hi):
    return np.ascontiguousarray(arrays[(f, t)][tuple(slice(l, h) for l, h in zip(lo, hi))])


def _stable(report: dict) -> dict:
    """The report without timings (which differ between ranks)."""
    out = {k: v for k, v in report.items() if k not in ("max", "mean", "levels")}
    out["levels"] = [{k: lv[k] for k in ("level", "blocks", "bytes")} for lv in report["levels"]]
    out["groups"] = [dict(g, partitions=list(g["partitions"])) for g in report["groups"]]
    out["merge"] = dict(report["merge"])
    return out


def write_collectively(comm, path, seed, case, arrays):
    """Stage this rank's boxes, flush ``flushes`` times, close.

    Returns (reports, bytes of the real writes per flush, bytes of the junk writes per flush).
    """
    import hzio  # noqa: PLC0415

    rank, size = comm.rank, comm.size
    writes = plan_writes(seed, case, size)
    kw = create_kwargs(case)
    ds = hzio.create(path, **kw, comm=comm, placement=case["placement"], aggregator_count=case["aggregator_count"],
                     aggregator_bytes=case["aggregator_bytes"], threads=1, partitions=case["partitions"])
    rng = np.random.default_rng([seed, 4, rank])
    reports, staged, junked = [], [], []
    rewrote = False  # the first write of a rank is always rewritten when the case asks for rewrites
    for flush in range(int(case["flushes"])):
        nbytes = njunk = 0
        # Node memory for every write of this flush that may go there (collective: once per flush).
        mine = [w for w in writes if w[0] == rank and w[1] == flush]
        room = sum(2 * _box_data(arrays, f, t, lo, hi).nbytes + 128 for _, _, f, t, lo, hi in mine)
        pool = hzio.shared_array(comm, room, np.uint8) if case["node_memory"] > 0 else None
        used = 0

        def in_node_memory(array):
            """A copy of `array` in node memory, with probability node_memory; else None."""
            nonlocal used
            if pool is None or rng.random() >= case["node_memory"]:
                return None
            at = (used + 63) // 64 * 64
            used = at + array.nbytes
            out = pool[at:used].view(array.dtype).reshape(array.shape)
            out[...] = array
            return out

        for _, _, f, t, lo, hi in mine:
            data = np.array(_box_data(arrays, f, t, lo, hi), copy=True)
            if case["rewrite"] > 0 and (not rewrote or rng.random() < case["rewrite"]):
                rewrote = True
                sub_lo = [int(rng.integers(l, h)) if rng.random() < 0.5 else l for l, h in zip(lo, hi)]
                sub_hi = [int(rng.integers(a + 1, h + 1)) if rng.random() < 0.5 else h for a, h in zip(sub_lo, hi)]
                part = tuple(slice(a - l, b - l) for a, b, l in zip(sub_lo, sub_hi, lo))
                junk = np.full_like(data[part], 7)
                shared_junk = in_node_memory(junk)
                if shared_junk is not None:
                    ds.write(shared_junk, offset=sub_lo, field=f, time=t, copy=False)
                else:
                    ds.write(junk, offset=sub_lo, field=f, time=t)
                njunk += junk.nbytes
            shared = in_node_memory(data)
            if shared is not None:
                data, borrow = shared, True
            else:
                borrow = rng.random() < case["borrow"]
            ds.write(data, offset=lo, field=f, time=t, copy=not borrow)
            if not borrow:
                data[...] = 3  # the staged copy must not see this
            nbytes += data.nbytes
        reports.append(_stable(ds.flush()))
        staged.append(nbytes)
        junked.append(njunk)
    ds.close()
    return reports, staged, junked


def write_one_process(path, seed, case, arrays, size):
    """The same boxes (in another order) with the one-process writer; returns its flush report."""
    import hzio  # noqa: PLC0415

    rng = np.random.default_rng([seed, 3])
    writes = plan_writes(seed, case, size)
    with hzio.create(path, **create_kwargs(case), threads=int(rng.choice([0, 1, 3]))) as ds:
        for i in rng.permutation(len(writes)):
            _, _, f, t, lo, hi = writes[i]
            ds.write(_box_data(arrays, f, t, lo, hi), offset=lo, field=f, time=t)
        report = _stable(ds.flush())
    return report


def main(argv) -> None:
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        args = json.loads(argv[1] if len(argv) > 1 else os.environ["HZIO_MPI_ARGS"])
        seed, case, out = int(args["seed"]), normalize_case(args["case"]), args["out"]
        arrays = build_arrays(seed, case)
        digest = hashlib.sha256(b"".join(a.tobytes() for a in arrays.values())).hexdigest()
        same_data = len(set(comm.allgather(digest))) == 1
        par, ser = os.path.join(out, "parallel.idx"), os.path.join(out, "serial.idx")
        reports, staged, junked = write_collectively(comm, par, seed, case, arrays)
        all_reports = comm.gather(reports, root=0)
        all_staged = comm.gather(staged, root=0)
        all_junk = comm.gather(junked, root=0)
        if comm.rank == 0:
            serial = write_one_process(ser, seed, case, arrays, comm.size)
            print(json.dumps({"parallel": par, "serial": ser, "size": comm.size, "same_data": same_data,
                              "reports": all_reports, "staged_bytes": all_staged, "junk_bytes": all_junk,
                              "serial_report": serial}),
                  flush=True)


if __name__ == "__main__":
    main(sys.argv)
