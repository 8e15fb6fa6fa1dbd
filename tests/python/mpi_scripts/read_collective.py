"""Collective reads of known datasets at every rank, each rank checking its own answer with NumPy.

Run under mpiexec (``tests/python/test_collective_reads.py`` does)::

    mpiexec -n 3 python read_collective.py '{"out": "/tmp/d", "seed": 7, "serial": {...}}'

The JSON argument holds ``out`` (a directory), ``seed``, ``mode`` and ``serial``: a dataset written by
the one-process writer (``path`` and ``npy``, field name to the ``.npy`` file of its full array).

``mode="checks"`` (default): ranks ``0 .. N1-1`` (``N1 = max(1, size - 1)``) first write a second,
2-D dataset collectively over a sub-communicator (:func:`collective_case`). Then, for both datasets,
every rank opens the dataset over ``COMM_WORLD`` and reads its own random box at a random level with
``method`` auto, independent and two-phase (one rank asks for nothing, ``box=()``), slices ``ds[...]``
and ``ds.level(h)[...]`` collectively, and checks values and ``last_read_report`` against NumPy oracles
(:mod:`hz_expect`). Rank 0 prints one JSON line: ``{"checks": {name: count}, "failures": {name: [...]}}``
summed over ranks.

``mode="empty_slice"``: rank 0 slices ``ds[0:0]`` (an empty selection) while the others slice a
non-empty one, then every rank reads one box; rank 0 prints the same JSON line.

``mode="bad_arguments"``: for each kind of bad argument (unknown field, box outside the domain, level
past the finest, unknown method, bad index, wrong ``out``), the last rank passes it while the others read
a valid box: every rank must raise (none may wait for the others), and a valid collective read must
work after each; rank 0 prints the same JSON line.

Any exception aborts every rank (``comm.Abort``) so that no rank waits forever.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hz_expect as he  # noqa: E402
from abort_on_failure import aborting_every_rank  # noqa: E402

METHODS = ("auto", "independent", "two-phase")
ITERATIONS = 3


# ---------------------------------------------------------------------------------------------- oracles
def needed_blocks(bitmask, bpb, box, level):
    """Blocks holding a point of ``box`` of hz level ``<= level`` (an empty box needs none)."""
    if not box:
        return set()
    lo, hi = box
    pts = np.meshgrid(*[np.arange(a, b) for a, b in zip(lo, hi)], indexing="ij")
    hz = he.hz_address(bitmask, pts).ravel()
    lv = np.frexp(hz.astype(np.float64))[1]
    return set(np.unique(hz[lv <= level] >> bpb).tolist())


def file_name(block, bpf):
    return f"{block // bpf * bpf:04x}.bin"


def collective_case(seed):
    """The dataset written by N1 ranks: parameters, expected arrays and the slab each writer writes."""
    shape = (45, 37)
    fields = {"a": "int16", "b": "float64"}
    rng = np.random.default_rng([seed, 11])
    arrays = {f: he.random_array(rng, shape, dt) for f, dt in fields.items()}
    params = dict(shape=shape, fields=fields, bitmask=None, bits_per_block=5, blocks_per_file=3, codec="lz4",
                  layout="rowmajor")
    return params, arrays


def _slabs(n1, nz):
    cuts = np.linspace(0, nz, n1 + 1).astype(int)
    return [(int(cuts[r]), int(cuts[r + 1])) for r in range(n1)]


def write_by_n1(comm, path, seed):
    """Ranks ``0 .. N1-1`` write the collective case over a sub-communicator; returns expected arrays."""
    import hzio  # noqa: PLC0415
    from mpi4py import MPI  # noqa: PLC0415

    params, arrays = collective_case(seed)
    n1 = max(1, comm.size - 1)
    sub = comm.Split(0 if comm.rank < n1 else MPI.UNDEFINED, comm.rank)
    expected = {f: np.zeros_like(a) for f, a in arrays.items()}
    for r, (z0, z1) in enumerate(_slabs(n1, params["shape"][0])):
        for k, f in enumerate(arrays):
            if (r + k) % 3 != 2:  # some slabs left unwritten: their blocks are missing or hold 0
                expected[f][z0:z1] = arrays[f][z0:z1]
    if sub != MPI.COMM_NULL:
        with hzio.create(path, **params, comm=sub, overwrite=True, threads=1) as ds:
            z0, z1 = _slabs(n1, params["shape"][0])[sub.rank]
            for k, f in enumerate(arrays):
                if (sub.rank + k) % 3 != 2 and z1 > z0:
                    ds.write(np.ascontiguousarray(arrays[f][z0:z1]), offset=(z0, 0), field=f)
        sub.Free()
    comm.Barrier()
    return expected, n1


# ---------------------------------------------------------------------------------------------- checks
class Checks:
    def __init__(self):
        self.count = defaultdict(int)
        self.failures = defaultdict(list)

    def check(self, name, ok, detail):
        self.count[name] += 1
        if not ok:
            self.failures[name].append(detail)

    def equal(self, name, got, want, detail):
        ok = got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
        self.check(name, ok, f"{detail}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
                             + ("" if got.shape != want.shape else f", {int(np.sum(got != want))} samples differ"))


class Known:
    """What one dataset holds: arrays, geometry, present blocks and their stored sizes (serial listing)."""

    def __init__(self, name, path, arrays):
        import hzio  # noqa: PLC0415

        self.name, self.path, self.arrays = name, path, arrays
        with hzio.open(path) as ds:
            self.bitmask, self.bpb, self.bpf = ds.bitmask, ds.bits_per_block, ds.blocks_per_file
            self.maxh = ds.max_level
            self.shape, self.fields = ds.grid_shape, list(ds.fields)
            self.present, self.sizes = {}, {}
            for f in self.fields:
                rows = ds.blocks(f)
                self.present[f] = set(rows["block"][rows["present"]].tolist())
                self.sizes[f] = dict(zip(rows["block"].tolist(), rows["size"].tolist()))
        folder = os.path.splitext(path)[0]
        self.existing = {n for n in os.listdir(folder) if n.endswith(".bin")}

    def files(self, blocks):
        return {file_name(b, self.bpf) for b in blocks} & self.existing


def request(known, seed, d, m, i, r, size):
    """Rank ``r``'s request in iteration ``i``: (field, box or (), level); every rank can compute all."""
    rng = np.random.default_rng([seed, 5, d, m, i, r])
    field = known.fields[int(rng.integers(len(known.fields)))]
    level = int(rng.integers(0, known.maxh + 1))
    box = he.random_box(rng, known.shape)
    if i == 0 and r == size - 1:
        box = ()
    return field, box, level


def expected_read(known, field, box, level):
    arr = known.arrays[field]
    if not box:
        return np.empty((0,) * len(known.shape) + arr.shape[len(known.shape):], dtype=arr.dtype)
    return he.expected_level(arr, known.bitmask, box, level)


def check_reads(comm, known, d, seed, checks):
    import hzio  # noqa: PLC0415
    from mpi4py import MPI  # noqa: PLC0415
    rank, size = comm.rank, comm.size
    # parallel-io.md "Reads": auto picks two-phase only across nodes (ranks of one node share the page cache).
    one_node = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size() == size
    for m, method in enumerate(METHODS):
        for i in range(ITERATIONS):
            reqs = [request(known, seed, d, m, i, r, size) for r in range(size)]
            field, box, level = reqs[rank]
            need = [needed_blocks(known.bitmask, known.bpb, b, lv) for _, b, lv in reqs]
            with hzio.open(known.path, comm=comm) as ds:
                got = ds.read(box=box, level=level, field=field, method=method)
                rep = dict(ds.last_read_report)
            tag = f"{known.name} {method} iteration {i} rank {rank}: field {field} box {box} level {level}"
            checks.equal("values", got, expected_read(known, field, box, level), tag)
            if not box:
                checks.check("empty request", got.size == 0 and rep["blocks_missing"] == rep["min_bytes"] == 0,
                             f"{tag}: {rep}")
            wanted = {(reqs[r][0], b) for r in range(size) for b in need[r]}
            asked = sum(len(n) for n in need)
            rule = "two-phase" if size > 1 and not one_node and 2 * asked >= 3 * len(wanted) else "independent"
            want_method = rule if method == "auto" else method
            checks.check("method reported", rep["method"] == want_method,
                         f"{tag}: method {rep['method']!r}, want {want_method!r} "
                         f"(blocks asked {asked}, distinct {len(wanted)})")
            mine = need[rank]
            present = mine & known.present[field]
            checks.check("own missing blocks and min_bytes",
                         (rep["blocks_missing"], rep["min_bytes"]) ==
                         (len(mine - present), sum(known.sizes[field][b] for b in present)), f"{tag}: {rep}")
            if rep["method"] == "independent":
                checks.check("independent counts",
                             (rep["blocks_read"], rep["files_opened"]) == (len(present), len(known.files(mine))),
                             f"{tag}: {rep}, want blocks_read {len(present)} files_opened {len(known.files(mine))}")
            totals = comm.allreduce(np.array([rep["blocks_read"], rep["files_opened"]], dtype=np.int64))
            if rep["method"] == "two-phase":
                distinct = {(f, b) for f, b in wanted if b in known.present[f]}
                files = known.files({b for _, b in wanted})
                checks.check("two-phase reads each block once",
                             totals.tolist() == [len(distinct), len(files)],
                             f"{tag}: blocks_read, files_opened summed over ranks {totals.tolist()}, want "
                             f"{[len(distinct), len(files)]}")


def random_key(rng, shape):
    key = []
    for n in shape:
        if rng.random() < 0.25:
            key.append(int(rng.integers(-n, n)))
            continue
        step = int(rng.choice([1, 1, 2, 3, -1, -2]))
        a = int(rng.integers(0, n))
        b = int(rng.integers(a + 1, n + 1))
        key.append(slice(a, b, step) if step > 0 else slice(b - 1, a - 1 if a else None, step))
    return tuple(key)


def check_slicing(comm, known, d, seed, checks):
    import hzio  # noqa: PLC0415

    rank = comm.rank
    for i in range(2):
        rng = np.random.default_rng([seed, 6, d, i, rank])
        field = known.fields[int(rng.integers(len(known.fields)))]
        key = random_key(rng, known.shape)
        level = int(rng.integers(0, known.maxh + 1))
        box = he.random_box(rng, known.shape)
        with hzio.open(known.path, comm=comm) as ds:
            view = ds if field == known.fields[0] else ds.field(field)
            got = view[key]
            checks.equal("collective slicing", np.asarray(got), known.arrays[field][key],
                         f"{known.name} rank {rank} ds[{key}] field {field}")
            lv = ds.level(level, field=field)  # indexed in the level's grid: samples at multiples of its spacing
            got = lv[tuple(slice(-(-a // s), -(-b // s)) for a, b, s in zip(*box, lv.spacing))]
            checks.equal("collective level slicing", got, expected_read(known, field, box, level),
                         f"{known.name} rank {rank} ds.level({level})[{box}] field {field}")


def check_auto_without_overlap(comm, known, checks):
    """One rank asks for one block (level 0 of one point), the others for nothing: no request overlaps."""
    import hzio  # noqa: PLC0415

    box = ((0,) * len(known.shape), (1,) * len(known.shape)) if comm.rank == 0 else ()
    with hzio.open(known.path, comm=comm) as ds:
        got = ds.read(box=box, level=0, method="auto")
        rep = dict(ds.last_read_report)
    checks.equal("values", got, expected_read(known, known.fields[0], box, 0), f"single block rank {comm.rank}")
    checks.check("auto without overlap is independent", rep["method"] == "independent",
                 f"{comm.size} ranks, rank 0 asks 1 block, the others nothing: auto ran {rep['method']!r} "
                 "(parallel-io.md: two-phase only when requested blocks >= 1.5 x distinct blocks)")


def check_large_two_phase(comm, out, seed, checks):
    """A dataset of 9 MiB with an unwritten region: every rank reads a large box of it two-phase (the
    blocks it receives are assembled window by window) and gets NumPy's answer, defaults included."""
    import hzio  # noqa: PLC0415

    shape = (72, 128, 256)
    rng = np.random.default_rng([seed, 91])
    src = rng.standard_normal(shape).astype(np.float32)
    src[32:64] = -2.5  # never written (whole blocks): missing blocks read as the default value
    path = os.path.join(out, "large.idx")
    if comm.rank == 0:
        fields = [("f", "float32", {"default_value": -2.5})]
        with hzio.create(path, shape=shape, fields=fields, bits_per_block=14) as ds:
            ds.write(src[:32])
            ds.write(src[64:], offset=(64, 0, 0))
    comm.Barrier()
    box = ((comm.rank % 2, 0, 0), shape)  # overlapping requests, each at least 8 MiB
    with hzio.open(path, comm=comm) as ds:
        got = ds.read(box=box, method="two-phase")
        rep = dict(ds.last_read_report)
    want = src[comm.rank % 2:]
    checks.check("large two-phase reads assembled in windows",
                 rep["method"] == "two-phase" and rep["assembly"] == "windows" and rep["blocks_missing"] > 0
                 and got.shape == want.shape and np.array_equal(got, want),
                 f"rank {comm.rank} box {box}: {rep}, "
                 f"{int(np.sum(got != want)) if got.shape == want.shape else got.shape} samples differ")


def empty_slice(comm, known, checks):
    import hzio  # noqa: PLC0415

    arr = known.arrays[known.fields[0]]
    key = (slice(0, 0),) if comm.rank == 0 else (slice(1, 4),)
    with hzio.open(known.path, comm=comm) as ds:
        got = ds[key]
        checks.equal("empty selection", np.asarray(got), arr[key], f"rank {comm.rank} ds[{key}]")
        box = ((0,) * len(known.shape), tuple(known.shape))
        got = ds.read(box=box, method="independent")
        checks.equal("read after an empty selection", got, arr, f"rank {comm.rank}")


def bad_arguments(comm, known, checks):
    import hzio  # noqa: PLC0415

    arr = known.arrays[known.fields[0]]
    full = ((0,) * len(known.shape), tuple(known.shape))
    outside = ((0,) * len(known.shape), tuple(n + 5 for n in known.shape))
    bad = comm.rank == comm.size - 1
    cases = {
        "unknown field": lambda ds: ds.read(box=full, field="no such field" if bad else None),
        "box outside the domain": lambda ds: ds.read(box=outside if bad else full),
        "level past the finest": lambda ds: ds.read(box=full, level=ds.max_level + 3 if bad else None),
        "unknown method": lambda ds: ds.read(box=full, method="sideways" if bad else "auto"),
        "bad index": lambda ds: ds[(slice(0, 2),) * (len(known.shape) + 2)] if bad else ds[0:2],
        "wrong out": lambda ds: ds.read(box=full, out=np.empty(3, dtype=arr.dtype) if bad else None),
    }
    with hzio.open(known.path, comm=comm) as ds:
        for name, read in cases.items():
            try:
                read(ds)
                raised = None
            except (hzio.Error, ValueError, IndexError, TypeError) as e:
                raised = e
            checks.check(f"every rank raises: {name}", raised is not None, f"rank {comm.rank}: no error")
            got = ds.read(box=full, method="independent")
            checks.equal(f"read after: {name}", got, arr, f"rank {comm.rank}")


def main(argv):
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        import hzio  # noqa: PLC0415

        args = json.loads(argv[1] if len(argv) > 1 else os.environ["HZIO_MPI_ARGS"])
        seed, out, mode = int(args["seed"]), args["out"], args.get("mode", "checks")
        ser = args["serial"]
        serial = Known("serial", ser["path"], {f: np.load(p) for f, p in ser["npy"].items()})
        checks = Checks()
        if mode == "empty_slice":
            empty_slice(comm, serial, checks)
        elif mode == "bad_arguments":
            bad_arguments(comm, serial, checks)
        else:
            path = os.path.join(out, "by_n1.idx")
            arrays, n1 = write_by_n1(comm, path, seed)
            by_n1 = Known(f"written by {n1} ranks", path, arrays)
            for d, known in enumerate((serial, by_n1)):
                check_reads(comm, known, d, seed, checks)
                check_slicing(comm, known, d, seed, checks)
            check_auto_without_overlap(comm, serial, checks)
            check_large_two_phase(comm, out, seed, checks)
            with hzio.open(path) as ds:
                for f, want in arrays.items():
                    checks.equal("one-process read of the N1-rank dataset", ds.read(field=f), want, f"field {f}")
        counts = comm.gather(dict(checks.count), root=0)
        failures = comm.gather(dict(checks.failures), root=0)
        if comm.rank == 0:
            total_c, total_f = defaultdict(int), defaultdict(list)
            for c, f in zip(counts, failures):
                for k, v in c.items():
                    total_c[k] += v
                for k, v in f.items():
                    total_f[k] += v
            print(json.dumps({"size": comm.size, "checks": total_c, "failures": total_f}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
