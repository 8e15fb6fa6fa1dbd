"""Partitions in local index space: one IDX dataset per partition and a ``.midx`` mosaic, written
collectively, read back as one dataset by hzio and by OpenVisus, reopened, misused, and killed mid-write.

Each case runs ``mpi_scripts/write_local.py`` under ``mpiexec`` at 2, 4 or 8 ranks (oversubscribed) with
2, 4 or 8 partitions: random fields of several dtypes (a vector one and an integer one among them) and
two timesteps, cut into random bisections whose boxes straddle the partition planes, with random owners
(some ranks idle, some boxes left out), then the mosaic reopened with ``comm`` and ``mode="r+"`` for a
third timestep. One ``mpiexec`` run per case serves every test of that case. The oracles are independent
of hzio: NumPy (the arrays the script wrote, ``hz_expect.expected_level`` for levels, a NumPy scan for
queries), the partition boxes computed here from the bitmask's partition template, the ``.midx`` and
part ``.idx`` texts read with regular expressions, and OpenVisus (the mosaic's ``output=noBlend()`` and
each part's ``.idx``). Further runs reopen a mosaic at another rank count, write a timestep into some
partitions only, try collective misuse, and kill a rank during a local-index-space write
(``mpi_scripts/write_then_die.py``).

Notes
-----
The whole module is skipped when ``mpiexec`` or mpi4py is missing or hzio was built without MPI; the
OpenVisus tests are skipped without OpenVisus. About 20 s on two cores. ``HZIO_TEST_SEED`` reproduces a
run (the seed is printed).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import mpi_launch
import numpy as np
import ov_helpers as oh
import pytest
import test_parallel_write as tpw  # run_mpi, write_then_die, the script loader
from hzio.mosaic import MosaicDataset

mpi_launch.skip_module_without_mpi()

SCRIPTS = mpi_launch.SCRIPTS
write_local = tpw._load("write_local")
write_then_die = tpw.write_then_die

# A bitmask with a spare x character first: half of the 8 partitions lie outside the domain (no part).
SPARE_BITMASK = "V00211020102202112"
CASES = {  # name: (ranks, case of write_local.py)
    "zip-2ranks-p2": (2, dict(
        shape=[40, 33, 17], fields=[["t", "float32"], ["c", "uint8[3]"], ["i", "int16"]], partitions=2,
        codec="zip", bits_per_block=8, blocks_per_file=4, holes=0.2, idle_ranks=1, append_time=2)),
    "raw-2ranks-p4-vector-first": (2, dict(
        shape=[23, 30, 19], fields=[["c", "uint8[3]"], ["i", "int32"]], partitions=4, codec="raw",
        bits_per_block=7, blocks_per_file=2, placement="uniform", append_time=2)),
    "lz4-4ranks-p2": (4, dict(
        shape=[31, 44, 20], fields=[["i", "int16"], ["c", "uint8[3]"], ["f", "float64"]], partitions=2,
        codec="lz4", bits_per_block=9, blocks_per_file=2, holes=0.2, idle_ranks=1, append_time=2)),
    "zip-2d-4ranks-p4": (4, dict(
        shape=[45, 37], fields=[["i", "int32"], ["c", "uint8[3]", {"codec": "raw"}]], partitions=4,
        codec="zip", bits_per_block=6, blocks_per_file=3, holes=0.1, append_time=2)),
    "raw-8ranks-p2": (8, dict(
        shape=[24, 20, 33], fields=[["u", "uint16"], ["c", "uint8[3]"]], partitions=2, codec="raw",
        bits_per_block=8, blocks_per_file=4, idle_ranks=2, holes=0.1, append_time=2)),
    "zip-8ranks-p4": (8, dict(
        shape=[40, 33, 17], fields=[["t", "float32"], ["c", "uint8[3]"], ["i", "int8", {"codec": "lz4"}]],
        partitions=4, codec="zip", bits_per_block=8, blocks_per_file=4, idle_ranks=1, append_time=2)),
    "raw-8ranks-p8-spare-bitmask": (8, dict(
        shape=[37, 29, 26], fields=[["i", "int32"], ["c", "uint8[3]", {"codec": "lz4"}]], partitions=8,
        codec="raw", bitmask=SPARE_BITMASK, bits_per_block=7, blocks_per_file=4, idle_ranks=1, holes=0.1,
        append_time=2)),
}
KILLS = [  # (ranks, victim, fraction of the timestep-0 flush time after which the victim dies, partitions)
    (3, 1, 0.5, 2),
    (4, 2, 0.3, 4),
    (4, 0, 0.9, 2),
]

cases = pytest.mark.parametrize("name", list(CASES))


# ---------------------------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """``local_run(seed, name)`` -> (case, result JSON, out folder); one mpiexec run per key."""
    runs = {}

    def get(seed, name):
        if (seed, name) not in runs:
            nprocs, case = CASES[name]
            out = tmp_path_factory.mktemp(name)
            run = tpw.run_mpi(nprocs, SCRIPTS / "write_local.py", {"out": str(out), "seed": seed, "case": case})
            lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
            runs[(seed, name)] = (run, json.loads(lines[-1]) if run.returncode == 0 and lines else None, out)
            print(f"{name}: {run.seconds:.1f} s")
        run, result, out = runs[(seed, name)]
        if result is None:
            pytest.fail(f"write_local.py failed\n{run.describe()}")
        return write_local.normalize_case(CASES[name][1]), result, out

    return get


def _expected(seed, name, case):
    """``{(field, time): array}`` the mosaic must hold after the case's run."""
    nprocs = CASES[name][0]
    return write_local.expected_arrays(seed, case, [(nprocs, case["times"]), (nprocs, [case["append_time"]])])


def _midx(local_run, seed, name):
    return local_run(seed, name)[1]["midx"]


def _bitmask(case):
    """The bitmask the mosaic must have: the case's, else OpenVisus's default for the shape."""
    return case["bitmask"] or he.guess_bitmask(case["shape"])


# ---------------------------------------------------------------------------------------------- oracles
def partition_boxes(bitmask, shape, partitions):
    """``{partition: (lo, hi)}`` of the partitions that reach the domain, ``[z, y, x]``.

    The template is the bitmask's first log2(R) characters: partition p's bits, most significant
    first, are one bit each of the axis its character names (that axis's most significant bit left),
    and a partition spans 2 to the number of that axis's characters after the template.
    """
    k, ndim = partitions.bit_length() - 1, len(shape)
    size = he.spacing(bitmask, k, ndim)
    out = {}
    for p in range(partitions):
        q = [0] * ndim  # partition coordinate per numpy axis
        for j, ch in enumerate(bitmask[1:k + 1]):
            axis = ndim - 1 - int(ch)
            q[axis] = 2 * q[axis] + ((p >> (k - 1 - j)) & 1)
        lo = tuple(c * s for c, s in zip(q, size))
        if all(a < n for a, n in zip(lo, shape)):
            out[p] = (lo, tuple(min(a + s, n) for a, s, n in zip(lo, size, shape)))
    return out


def _sl(box):
    return tuple(slice(a, b) for a, b in zip(*box))


def _grid_coords(bitmask, box, level, mask):
    """Sample coordinates (``[z, y, x]``, C order) of the ``True`` cells of a level grid inside ``box``."""
    sl = he.level_slices(bitmask, box, level)
    return np.argwhere(mask).astype(np.int64) * [s.step for s in sl] + [s.start for s in sl]


def _parse_midx(text):
    """The ``.midx``'s head attributes and its parts as ``[(partition, file, offset x first)]``."""
    head = dict(re.findall(r"(\w+)='([^']*)'", text.split(">", 1)[0]))
    parts = [(int(p), f, tuple(int(v) for v in off.split()))
             for f, off, p in re.findall(r'url="file://\$\(CurrentFileDirectory\)/([^"]+)"[^>]*offset="([^"]*)"'
                                         r'[^>]*hzio_partition="(\d+)"', text)]
    return head, parts


def _idx_key(text, key):
    return text.split(f"({key})\n", 1)[1].split("\n", 1)[0].strip()


def _levels(rng, case, bitmask):
    """Levels to read: one below the partition template (synthesised), the template's, and random others."""
    k, top = case["partitions"].bit_length() - 1, len(bitmask) - 1
    return sorted({int(rng.integers(0, k)), k, int(rng.integers(k, top + 1)), int(rng.integers(0, top + 1)), top})


# ---------------------------------------------------------------------------------------------- hzio reads
@cases
def test_mosaic_reads_back_equal_to_numpy_at_every_level(local_run, seed, rng, tmp_path, name):
    case, result, _ = local_run(seed, name)
    expected = _expected(seed, name, case)
    bitmask = _bitmask(case)
    assert result["types"] == ["ParallelMosaic", "ParallelMosaic"]
    assert not Path(result["path"]).exists(), "a local-index-space create wrote an .idx at its path"
    with hzio.create(str(tmp_path / "plain.idx"), case["shape"], {"x": "uint8"}, overwrite=True) as plain:
        plain_bitmask = plain.bitmask
    for path in (result["path"], result["midx"]):
        with hzio.open(path) as ds:
            assert isinstance(ds, MosaicDataset)
            assert ds.grid_shape == case["shape"]
            assert ds.fields == write_local.dtypes(case)
            assert ds.times == write_local.all_times(case)
            assert ds.bitmask == bitmask and ds.max_level == len(bitmask) - 1
            if case["bitmask"] is None:
                assert ds.bitmask == plain_bitmask, "the mosaic's bitmask is not the one of a plain create"
            first = case["fields"][0]
            comps = he.split_dtype(first[1])[1]
            assert ds.shape == case["shape"] + ((comps,) if comps > 1 else ())
            for (f, t), want in expected.items():
                got = ds.read(field=f, time=t)
                assert got.dtype == want.dtype and got.shape == want.shape, (f, t)
                np.testing.assert_array_equal(got, want, err_msg=f"{path}: field {f} time {t}")
        if path == result["path"]:
            continue
        with hzio.open(path) as ds:  # levels and boxes, once
            for (f, t), want in expected.items():
                for level in _levels(rng, case, bitmask):
                    box = he.random_box(rng, case["shape"]) if rng.random() < 0.7 else None
                    full = box or ((0,) * len(case["shape"]), case["shape"])
                    exp = he.expected_level(want, bitmask, full, level)
                    assert ds.level_shape(level, box, field=f) == exp.shape, (f, level, box)
                    np.testing.assert_array_equal(ds.read(box, level=level, field=f, time=t), exp,
                                                  err_msg=f"field {f} time {t} level {level} box {box}")
                    buf = np.full(exp.shape, 1, exp.dtype)
                    assert ds.read(box, level=level, field=f, time=t, out=buf) is buf
                    np.testing.assert_array_equal(buf, exp)


@cases
def test_mosaic_slicing_equals_numpy(local_run, seed, rng, name):
    case, _, _ = local_run(seed, name)
    expected = _expected(seed, name, case)
    want = expected[(case["fields"][0][0], case["times"][0])]
    with hzio.open(_midx(local_run, seed, name)) as ds:
        for _ in range(12):
            key = []
            for n in case["shape"]:
                r = rng.random()
                if r < 0.2:
                    key.append(int(rng.integers(-n, n)))
                elif r < 0.35:
                    key.append(slice(None))
                else:
                    a, b = sorted(int(v) for v in rng.integers(0, n + 1, size=2))
                    key.append(slice(a, b, int(rng.integers(1, 4))))
            key = tuple(key)
            np.testing.assert_array_equal(ds[key], want[key], err_msg=f"ds[{key}]")
        np.testing.assert_array_equal(ds[...], want)
        np.testing.assert_array_equal(ds[..., -1], want[..., -1])


@cases
def test_mosaic_queries_equal_a_numpy_scan(local_run, seed, rng, name):
    case, _, _ = local_run(seed, name)
    expected = _expected(seed, name, case)
    bitmask = _bitmask(case)
    k = case["partitions"].bit_length() - 1
    with hzio.open(_midx(local_run, seed, name)) as ds:
        for (f, t), src in expected.items():
            comps = he.split_dtype(write_local.dtypes(case)[f])[1]
            for level in (int(rng.integers(0, k + 1)), len(bitmask) - 1, int(rng.integers(k, len(bitmask)))):
                box = he.random_box(rng, case["shape"]) if rng.random() < 0.6 else None
                full = box or ((0,) * len(case["shape"]), case["shape"])
                arr = he.expected_level(src, bitmask, full, level)
                component = int(rng.integers(comps)) if comps > 1 else None
                test = (arr if component is None else arr[..., component]).astype(np.float64)
                if test.size == 0:
                    continue
                lo, hi = sorted(float(v) for v in rng.choice(test.ravel(), size=2))
                mask = (test >= lo) & (test <= hi)
                coords, values = ds.query(f, lo, hi, time=t, box=box, level=level, component=component)
                what = f"field {f} time {t} level {level} box {box} range [{lo}, {hi}]"
                np.testing.assert_array_equal(coords, _grid_coords(bitmask, full, level, mask), err_msg=what)
                np.testing.assert_array_equal(values, arr[mask], err_msg=what)
                got = ds.query(f, lo, hi, time=t, box=box, level=level, component=component, mask=True)
                assert got.dtype == bool
                np.testing.assert_array_equal(got, mask, err_msg=what + " (mask)")


@cases
def test_mosaic_blocks_are_each_parts_table(local_run, seed, name):
    """Each part has blocks of a (field, timestep) exactly when a written box reaches it."""
    case, result, _ = local_run(seed, name)
    nprocs = CASES[name][0]
    parts = partition_boxes(_bitmask(case), case["shape"], case["partitions"])
    reached = {}
    for times in (case["times"], [case["append_time"]]):
        for _, f, t, lo, hi in write_local.plan_writes(seed, case, nprocs, times):
            reached.setdefault((f, t), set()).update(p for p, b in parts.items() if _overlap((lo, hi), b))
    with hzio.open(result["midx"]) as ds:
        assert [p for p, _, _ in ds.parts] == sorted(parts)
        for p, offset, part in ds.parts:
            assert offset == parts[p][0] and part.grid_shape == tuple(b - a for a, b in zip(*parts[p]))
        for f in write_local.dtypes(case):
            for t in write_local.all_times(case):
                tables = ds.blocks(f, time=t)
                assert [p for p, _ in tables] == sorted(parts)
                for p, table in tables:
                    assert bool(table["present"].any()) == (p in reached.get((f, t), ())), (f, t, p)


def _overlap(a, b):
    return all(max(x, y) < min(u, v) for x, u, y, v in zip(*a, *b))


# ---------------------------------------------------------------------------------------------- files
@cases
def test_midx_places_every_partition_at_its_offset(local_run, seed, name):
    case, result, out = local_run(seed, name)
    bitmask, R, ndim = _bitmask(case), case["partitions"], len(case["shape"])
    k = R.bit_length() - 1
    parts = partition_boxes(bitmask, case["shape"], R)
    text = Path(result["midx"]).read_text()
    head, listed = _parse_midx(text)
    assert head["typename"] == "IdxMultipleDataset" and head["mosaic"] == "true"
    assert int(head["hzio_ndim"]) == ndim
    assert [int(v) for v in head["hzio_dims"].split()] == list(reversed(case["shape"]))
    assert head["hzio_bitmask"] == bitmask and int(head["hzio_partitions"]) == R
    assert [p for p, _, _ in listed] == sorted(parts), "the parts are not the partitions reaching the domain"
    if case["bitmask"] == SPARE_BITMASK:
        assert len(parts) < R, "the spare bitmask should leave partitions outside the domain"
    for p, file, offset in listed:
        lo, hi = parts[p]
        assert offset == tuple(reversed(lo)), f"partition {p}"
        assert file == f"local_p{p}.idx" and (out / f"local_p{p}").is_dir()
        idx = (out / file).read_text()
        assert _idx_key(idx, "bits") == "V" + bitmask[k + 1:]
        box = [int(v) for v in _idx_key(idx, "box").split()]
        assert box[: 2 * ndim] == [v for a, b in zip(reversed(lo), reversed(hi)) for v in (0, b - a - 1)]
    assert sorted(p.name for p in out.glob("*.idx")) == sorted(f for _, f, _ in listed)


@cases
def test_write_reports_add_up_to_the_parts_writes(local_run, seed, name):
    case, result, out = local_run(seed, name)
    nprocs = CASES[name][0]
    parts = partition_boxes(_bitmask(case), case["shape"], case["partitions"])
    assert result["same_reports"], "ranks returned different reports for the same flush"
    straddling = 0  # boxes across a partition plane, over both writes: one write's random cuts may all
    # fall on the planes (seed 3412318636 cut the appended timestep of every field at the plane)
    for i, times in enumerate([case["times"], [case["append_time"]]]):
        rep = result["reports"][i]
        writes = write_local.plan_writes(seed, case, nprocs, times)
        staged = [0] * nprocs
        touched = set()
        for rank, f, _, lo, hi in writes:
            base, comps = he.split_dtype(write_local.dtypes(case)[f])
            staged[rank] += int(np.prod([b - a for a, b in zip(lo, hi)])) * np.dtype(base).itemsize * comps
            hit = {p for p, box in parts.items() if _overlap((lo, hi), box)}
            touched |= hit
            straddling += len(hit) > 1
        assert result["staged_bytes"][i] == staged
        assert rep["ranks"] == nprocs and rep["bytes"] == sum(staged)
        assert rep["index_space"] == "local" and rep["partitions"] == case["partitions"]
        assert rep["levels"] == [] and rep["merge"]["files"] == 0
        groups = rep["groups"]
        assert sum(g["ranks"] for g in groups) == nprocs
        named = [p for g in groups for p in g["partitions"]]
        assert len(named) == len(set(named)) and touched <= set(named) <= set(range(case["partitions"]))
        assert all(g["partition"] in g["partitions"] for g in groups)
        assert rep["files"] == sum(g["files"] for g in groups)
        assert rep["aggregators"] == sum(g["aggregators"] for g in groups)
        assert rep["messages"] == sum(g["messages"] for g in groups) + rep["moved_messages"]
        for g in groups:
            if g["files"]:
                assert 1 <= g["aggregators"] <= g["ranks"], g
        bins = [b for t in times for b in out.glob(f"local_p*/time_{t:04d}/*.bin")]
        assert rep["files"] == len(bins), f"flush {i}: {rep['files']} files reported, {len(bins)} written"
        with hzio.open(result["midx"]) as ds:
            present = sum(int(table["size"][table["present"]].sum()) for f in write_local.dtypes(case)
                          for t in times for _, table in ds.blocks(f, time=t))
        assert rep["file_bytes"] == present
    assert straddling, "no box straddles a partition plane: the case tests nothing of the cuts"


# ---------------------------------------------------------------------------------------------- OpenVisus
def _thin(case, lo, hi):
    """True for a part OpenVisus's mosaic may read at a coarser resolution than its own.

    Its ``IdxMultipleDataset::createDownQuery`` asks a part for the mosaic's resolution (the mosaic's
    own default bitmask, from its box) lowered by log2(domain volume / part volume), rounded down. That
    reaches the part's finest level (the whole bitmask's minus log2(R)) for parts of about 1/R of the
    domain, not for the thin clipped parts of a non-power-of-two shape.
    """
    k = case["partitions"].bit_length() - 1
    ratio = math.prod(case["shape"]) / math.prod(b - a for a, b in zip(lo, hi))
    ov_top = len(he.guess_bitmask(case["shape"])) - 1
    return ov_top - int(math.log2(ratio)) < len(_bitmask(case)) - 1 - k


@cases
def test_openvisus_reads_each_part_at_its_offset(openvisus, local_run, seed, name):
    case, result, out = local_run(seed, name)
    expected = _expected(seed, name, case)
    _, listed = _parse_midx(Path(result["midx"]).read_text())
    for p, file, offset in listed:
        db = oh.ov_open(out / file)
        lo = tuple(reversed(offset))
        info = oh.ov_info(out / file)
        assert info["times"] == write_local.all_times(case)
        hi = tuple(a + n for a, n in zip(lo, info["shape"]))
        for (f, t), want in expected.items():
            np.testing.assert_array_equal(oh.ov_read(None, f, t, db=db), want[_sl((lo, hi))],
                                          err_msg=f"OpenVisus, part {p} ({file}), field {f} time {t}")


@cases
def test_openvisus_reads_the_mosaic_whole(openvisus, local_run, seed, name):
    case, result, _ = local_run(seed, name)
    expected = _expected(seed, name, case)
    parts = partition_boxes(_bitmask(case), case["shape"], case["partitions"])
    db = openvisus.LoadDataset(result["midx"])
    assert [int(t) for t in db.getTimesteps()] == write_local.all_times(case)
    first = case["fields"][0][0]
    under_read = []
    for t in write_local.all_times(case):
        got = np.asarray(db.read(field="output=noBlend()", time=t))
        want = expected[(first, t)]
        assert got.shape == want.shape and got.dtype == want.dtype
        for p, box in parts.items():
            if np.array_equal(got[_sl(box)], want[_sl(box)]):
                continue
            bad = int((got[_sl(box)] != want[_sl(box)]).sum())
            assert _thin(case, *box), f"OpenVisus noBlend, time {t}, partition {p} {box}: {bad} samples differ"
            under_read.append(f"time {t} partition {p} {box}: {bad} samples")
    if under_read:
        pytest.xfail("OpenVisus's mosaic reads thin clipped parts at a coarser resolution (its volume "
                     "heuristic for a part's resolution): " + "; ".join(under_read))


# ---------------------------------------------------------------------------------------------- reopen
def test_mosaic_reopened_at_another_rank_count(local_run, seed, tmp_path):
    """The 2-rank mosaic of 4 partitions, reopened at 8 ranks (other groups) for a fourth timestep."""
    name = "raw-2ranks-p4-vector-first"
    case, result, out = local_run(seed, name)
    shutil.copytree(out, tmp_path / "copy")
    later = dict(CASES[name][1], append_time=3)
    run = tpw.run_mpi(8, SCRIPTS / "write_local.py",
                      {"out": str(tmp_path / "copy"), "seed": seed, "case": later, "stage": "append"})
    assert run.returncode == 0, run.describe()
    rep = json.loads([ln for ln in run.stdout.splitlines() if ln.startswith("{")][-1])["reports"][0]
    assert rep["ranks"] == 8 and rep["index_space"] == "local" and rep["partitions"] == 4
    expected = _expected(seed, name, case)
    fourth = write_local.expected_arrays(seed, write_local.normalize_case(later), [(8, [3])])
    expected.update({k: v for k, v in fourth.items() if k[1] == 3})
    with hzio.open(str(tmp_path / "copy" / "local.idx")) as ds:
        assert ds.times == [0, 1, 2, 3]
        for (f, t), want in expected.items():
            np.testing.assert_array_equal(ds.read(field=f, time=t), want, err_msg=f"field {f} time {t}")
    if oh.have_openvisus():
        db = oh.ov_open(tmp_path / "copy" / "local.midx")
        np.testing.assert_array_equal(np.asarray(db.read(field="output=noBlend()", time=3)),
                                      expected[(case["fields"][0][0], 3)])


def test_timestep_added_to_some_partitions_only_is_readable(tmp_path, seed):
    """A collective write of a new timestep whose boxes all lie in partition 0: the timestep exists,
    the written boxes read back and the rest of the domain is 0, as in one dataset."""
    case = dict(shape=[16, 24, 20], fields=[["i", "int16"]], partitions=2, times=[0], append_time=1,
                append_region=[[0, 0, 0], [16, 24, 8]])
    run = tpw.run_mpi(2, SCRIPTS / "write_local.py", {"out": str(tmp_path), "seed": seed, "case": case})
    assert run.returncode == 0, run.describe()
    norm = write_local.normalize_case(case)
    assert partition_boxes(he.guess_bitmask(norm["shape"]), norm["shape"], 2)[0] == ((0, 0, 0), (16, 24, 16))
    expected = write_local.expected_arrays(seed, norm, [(2, [0]), (2, [1])])
    with hzio.open(str(tmp_path / "local.idx")) as ds:
        per_part = {p: part.times for p, _, part in ds.parts}
        assert ds.times == [0, 1], f"timestep 1 was written collectively but is not listed; the parts list {per_part}"
        np.testing.assert_array_equal(ds.read(field="i", time=1), expected[("i", 1)])


# ---------------------------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def collective_misuse(tmp_path_factory):
    out = tmp_path_factory.mktemp("misuse")
    run = tpw.run_mpi(2, SCRIPTS / "write_local.py", {"out": str(out), "stage": "bad_input"}, timeout=40)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    if run.returncode != 0 or not lines:
        pytest.fail(f"write_local.py bad_input failed\n{run.describe()}")
    return json.loads(lines[-1])


MISUSE = {  # check of write_local.bad_input: (error type, words of its message)
    "partitions_1": ("InvalidArgumentError", "partitions > 1"),
    "partitions_3": ("InvalidArgumentError", "power of two"),
    "bogus_space": ("InvalidArgumentError", "bogus"),
    "template_too_long": ("InvalidArgumentError", "bitmask"),
    "exists": ("InvalidArgumentError", "exists"),
    "collective_open_for_reading": ("UnsupportedError", "m.midx"),
    "other_partition_count": ("InvalidArgumentError", "partitions"),
    "write_outside": ("InvalidArgumentError", "not inside"),
    "read_through_writer": ("UnsupportedError", "without comm"),
    "query_through_writer": ("UnsupportedError", "without comm"),
    "missing_part": ("NotFoundError", "m_p1.idx"),
    "malformed": ("FormatError", "hzio_ndim"),
}


@pytest.mark.parametrize("check", list(MISUSE))
def test_collective_misuse_raises_the_same_hzio_error_on_every_rank(collective_misuse, check):
    kind, words = MISUSE[check]
    got, message, agreed = collective_misuse[check]
    assert (got, agreed) == (kind, True), f"{check}: {got} ({message}), same on every rank: {agreed}"
    assert words in message, message


def test_local_index_space_needs_comm_and_partitions(tmp_path):
    kw = dict(shape=(8, 8), fields={"v": "int8"})
    with pytest.raises(hzio.InvalidArgumentError, match="comm"):
        hzio.create(str(tmp_path / "a.idx"), **kw, index_space="local")
    with pytest.raises(hzio.InvalidArgumentError, match="comm"):
        hzio.create(str(tmp_path / "a.idx"), **kw, partitions=2, index_space="local")
    with pytest.raises(hzio.InvalidArgumentError, match="bogus"):
        hzio.create(str(tmp_path / "a.idx"), **kw, index_space="bogus")
    assert not list(tmp_path.iterdir()), "a refused create left files"


@pytest.fixture
def mosaic_copy(local_run, seed, tmp_path):
    """A writable copy of the 2-rank, 2-partition mosaic: its folder."""
    _, _, out = local_run(seed, "zip-2ranks-p2")
    shutil.copytree(out, tmp_path / "m")
    return tmp_path / "m"


def test_mosaic_is_written_collectively_only(mosaic_copy):
    for path in ("local.midx", "local.idx"):
        with pytest.raises(hzio.UnsupportedError, match="comm"):
            hzio.open(str(mosaic_copy / path), mode="r+")


def _edit(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


MALFORMED = {  # name: (edit of the .midx text, words the error must hold)
    "empty": (lambda s: "", "<dataset>"),
    "not xml": (lambda s: "(version)\n6\n", "<dataset>"),
    "no hzio attributes": (lambda s: re.sub(r" hzio_\w+='[^']*'", "", s), "hzio_ndim"),
    "dims of another rank": (lambda s: re.sub(r"hzio_dims='(\d+) (\d+) (\d+)'", r"hzio_dims='\1 \2'", s), "hzio_dims"),
    "partitions not a power of two": (lambda s: s.replace("hzio_partitions='2'", "hzio_partitions='3'"),
                                      "hzio_partitions"),
    "part outside the folder": (lambda s: s.replace("local_p1.idx", "../local_p1.idx"), "url"),
    "offset not an integer": (lambda s: re.sub(r'offset="(\d+) ', r'offset="x ', s, count=1), "offset"),
    "partition listed twice": (lambda s: s.replace('hzio_partition="1"', 'hzio_partition="0"'), "partition"),
    "no parts": (lambda s: re.sub(r"\t<dataset url[^\n]*\n", "", s), "no parts"),
    # A mosaic that parses but contradicts itself: reading it must fail, not return wrong samples.
    "bitmask not a bitmask": (lambda s: re.sub(r"hzio_bitmask='V\d+'", "hzio_bitmask='Vxyz'", s), "bitmask"),
    "bitmask too short for the dims": (lambda s: re.sub(r"hzio_bitmask='V\d+'", "hzio_bitmask='V012'", s),
                                       "bitmask"),
    "offset off the partition grid": (lambda s: s.replace('offset="16 0 0"', 'offset="15 0 0"'), "offset"),
    "offset outside the domain": (lambda s: s.replace('offset="16 0 0"', 'offset="80 0 0"'), "offset"),
    "dims larger than the parts": (lambda s: re.sub(r"hzio_dims='(\d+) ", r"hzio_dims='90 ", s), "dims"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_midx_is_a_format_error(mosaic_copy, case):
    edit, words = MALFORMED[case]
    midx = mosaic_copy / "local.midx"
    assert 'offset="16 0 0"' in midx.read_text()  # the edits below assume the 2-partition mosaic's layout
    midx.write_text(edit(midx.read_text()))
    with pytest.raises(hzio.FormatError) as err:
        with hzio.open(str(midx)) as ds:
            ds.read(field="t", time=0)
    assert words in str(err.value), str(err.value)


def test_mosaic_missing_a_part_is_not_found(mosaic_copy):
    (mosaic_copy / "local_p1.idx").unlink()
    with pytest.raises(hzio.NotFoundError, match="local_p1.idx"):
        hzio.open(str(mosaic_copy / "local.midx"))
    with pytest.raises(hzio.NotFoundError, match="local_p1.idx"):
        hzio.open(str(mosaic_copy / "local.idx"))


def test_mosaic_with_a_damaged_part_is_a_format_error(mosaic_copy):
    (mosaic_copy / "local_p1.idx").write_text("(version)\n6\n(box)\n0 x\n")
    with pytest.raises(hzio.FormatError, match="local_p1.idx"):
        hzio.open(str(mosaic_copy / "local.midx"))


# ---------------------------------------------------------------------------------------------- kills
@pytest.mark.parametrize("nprocs,victim,fraction,partitions", KILLS,
                         ids=[f"{n}ranks-rank{v}-{fr}-partitions{p}" for n, v, fr, p in KILLS])
def test_rank_killed_during_local_write_keeps_committed_timesteps(tmp_path, seed, nprocs, victim, fraction,
                                                                  partitions):
    run = tpw.run_mpi(nprocs, SCRIPTS / "write_then_die.py",
                      {"out": str(tmp_path), "seed": seed, "mode": "in_flush", "victim": victim,
                       "fraction": fraction, "partitions": partitions, "index_space": "local"})
    assert run.returncode != 0, f"the job survived the loss of rank {victim}\n{run.describe()}"
    assert (tmp_path / "t0.json").exists(), f"the run died before committing timestep 0\n{run.describe()}"
    assert (tmp_path / "killed.midx").exists() and not (tmp_path / "killed.idx").exists()
    returned = (tmp_path / "flush_returned").exists()
    arrays = write_then_die.build_arrays(seed)
    with hzio.open(str(tmp_path / "killed.idx")) as ds:
        per_part = {p: part.times for p, _, part in ds.parts}
        print(f"victim's flush returned: {returned}; timesteps per part: {per_part}")
        assert ds.times in ([0], [0, 1]), ds.times
        assert all(t in ([0], [0, 1]) for t in per_part.values()), per_part
        if ds.times == [0]:
            assert not returned, "the victim's flush returned but timestep 1 is not committed in every part"
            with pytest.raises(hzio.NotFoundError):
                ds.read(time=1)
        for f, _, _ in write_then_die.FIELDS:
            for t in ds.times:
                np.testing.assert_array_equal(ds.read(field=f, time=t), arrays[(f, t)], err_msg=f"field {f} time {t}")
    if oh.have_openvisus():
        _, listed = _parse_midx((tmp_path / "killed.midx").read_text())
        for p, file, offset in listed:
            lo = tuple(reversed(offset))
            db = oh.ov_open(tmp_path / file)
            hi = tuple(a + n for a, n in zip(lo, oh.ov_info(tmp_path / file)["shape"]))
            for f, _, _ in write_then_die.FIELDS:
                np.testing.assert_array_equal(oh.ov_read(None, f, 0, db=db), arrays[(f, 0)][_sl((lo, hi))],
                                              err_msg=f"OpenVisus part {p} field {f} time 0")


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_describes_a_mosaic_and_refuses_it_where_a_verb_takes_one_dataset(mosaic_copy, tmp_path):
    """``hzio info`` lists the parts at the offsets the .midx gives (regex on its text); the verbs that take one
    IDX dataset exit with status 2 and name the parts, never a traceback."""
    from hzio.cli import main

    midx = str(mosaic_copy / "local.midx")
    text = Path(midx).read_text()
    offsets = {int(p): tuple(int(v) for v in off.split()) for off, p in
               re.findall(r'offset="([\d ]+)" hzio_partition="(\d+)"', text)}
    out = subprocess.run([sys.executable, "-m", "hzio", "info", midx, "--json"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["index_space"] == "local"
    assert {p["partition"]: tuple(p["offset"][::-1]) for p in info["parts"]} == offsets  # [z, y, x] vs x first
    for verb in (["verify"], ["dump"], ["index"], ["read", "-o", str(tmp_path / "x.npy")]):
        assert main([verb[0], midx, *verb[1:]]) == 2
