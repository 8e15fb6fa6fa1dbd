"""Reads touch only what they need, block statistics are exact, value-range queries equal a NumPy scan.

Every expectation is computed with NumPy from the bitmask alone (:mod:`hz_expect`), never by hzio:

* the blocks a read of box ``B`` at level ``H`` needs are the distinct ``hz >> bits_per_block`` of the
  points of ``B`` whose hz level is ``<= H``; their files are ``block // blocks_per_file`` (interleave 0)
  named ``%04x.bin`` after their first block;
* the statistics of a block are min, max and count over the points of the dataset shape whose hz
  address falls in the block (padding excluded, unwritten samples holding the default value);
* a query answer is ``np.argwhere((arr >= lo) & (arr <= hi))`` on the level grid of the box, mapped to
  sample coordinates ``first + index * spacing``.

Datasets are random (2-D and 3-D, non-power-of-two shapes, several bits_per_block and blocks_per_file,
codecs and layouts) and partly written, so some blocks and some data files never exist. About 15 s.
``HZIO_TEST_SEED`` reproduces a run.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import numpy as np
import pytest

DEFAULT = 7  # default value of the partly written fields: fits every dtype, differs from 0
SIZES = {2: (5, 9, 12, 13, 17, 21, 30, 37, 45), 3: (3, 5, 7, 9, 12, 13, 17, 20)}


# ---------------------------------------------------------------------------------------------- oracles
def hz_level(hz):
    """Resolution level of hz addresses: 0 for address 0, else its bit length."""
    return np.frexp(np.asarray(hz, dtype=np.float64))[1].astype(np.int64)


def box_points(box):
    lo, hi = box
    return np.meshgrid(*[np.arange(a, b) for a, b in zip(lo, hi)], indexing="ij")


def needed_blocks(bitmask, bpb, box, level, min_level=0):
    """Blocks holding a point of ``box`` whose hz level lies in ``[min_level, level]``."""
    hz = he.hz_address(bitmask, box_points(box)).ravel()
    lv = hz_level(hz)
    return set(np.unique(hz[(lv >= min_level) & (lv <= level)] >> bpb).tolist())


def file_name(block, bpf):
    return f"{block // bpf * bpf:04x}.bin"


def table_bytes(nfields, bpf):
    """File header plus block header table (format.md "Data files")."""
    return 40 + 40 * nfields * bpf


def sidecar_bytes(components, bpf, g):
    """Size of a version 2 statistics sidecar (format.md "Statistics sidecar", "Bytes").

    Per entry ``2**g`` checksums of 8 bytes, one range record for the block plus ``2**g`` part records
    when ``g > 0`` (no part records when ``g == 0``), then the sidecar's own 8-byte checksum.
    """
    n = len(components)
    parts = 2 ** g if g else 0
    return 48 + 8 * ((n + 1) // 2) + sum(bpf * ((1 + parts) * (8 + 16 * c) + 8 * 2 ** g) for c in components) + 8


def _outward(v, down):
    """The double nearest to the integer or float ``v`` on the safe side (format.md: rounded outward)."""
    if isinstance(v, float) or isinstance(v, np.floating):
        return float(v)
    d = float(v)
    if down and int(d) > int(v):
        d = float(np.nextafter(d, -np.inf))
    if not down and int(d) < int(v):
        d = float(np.nextafter(d, np.inf))
    return d


def block_stats(src, ndim, bitmask, bpb, parts_bits=0):
    """``{block: (count, min[ncomp], max[ncomp])}`` over the real samples of every block of ``src``.

    With ``parts_bits > 0`` the key is ``(block, part)``: part ``p`` of an HZ-ordered block holds the
    block indices ``[p * L, (p + 1) * L)``, ``L = 2 ** (bpb - parts_bits)``.
    """
    shape = src.shape[:ndim]
    hz = he.hz_address(bitmask, np.indices(shape)).ravel()
    keys = hz >> bpb
    if parts_bits:
        keys = keys * (1 << parts_bits) + ((hz & ((1 << bpb) - 1)) >> (bpb - parts_bits))
    vals = src.reshape(hz.size, -1)
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
    out = {}
    for k, a, n in zip(uniq.tolist(), first.tolist(), counts.tolist()):
        chunk = vals[a:a + n]
        mins, maxs = [], []
        for c in range(chunk.shape[1]):
            col = chunk[:, c]
            if col.dtype.kind == "f":
                col = col[~np.isnan(col)]
                mins.append(float(col.min()) if col.size else np.inf)
                maxs.append(float(col.max()) if col.size else -np.inf)
            else:
                mins.append(_outward(col.min().item(), True))
                maxs.append(_outward(col.max().item(), False))
        key = (k >> parts_bits, k & ((1 << parts_bits) - 1)) if parts_bits else k
        out[key] = (n, mins, maxs)
    return out


def grid_coords(bitmask, box, level, index):
    """Sample coordinates of level-grid indices (``origin + index * spacing``, origin 0 here)."""
    sl = he.level_slices(bitmask, box, level)
    return np.asarray(index, dtype=np.int64) * [s.step for s in sl] + [s.start for s in sl]


# ---------------------------------------------------------------------------------------------- datasets
@dataclass
class Written:
    path: Path
    shape: tuple
    bitmask: str
    bpb: int
    bpf: int
    fields: dict                 # name -> dtype text
    src: dict                    # name -> expected full-resolution array
    boxes: dict = dc_field(default_factory=dict)  # name -> written boxes

    @property
    def folder(self):
        return self.path.with_suffix("")

    def existing_files(self):
        return {p.name for p in self.folder.glob("*.bin")}


def _random_box_within(rng, shape, frac):
    lo, hi = [], []
    for n in shape:
        side = int(rng.integers(1, max(1, int(n * frac)) + 1))
        a = int(rng.integers(0, n - side + 1))
        lo.append(a)
        hi.append(a + side)
    return tuple(lo), tuple(hi)


def make_dataset(rng, tmp_path, ndim, dtypes=("float32",), name="d", boxes=(1, 4), frac=0.6, codec=None,
                 layout=None, bpb=None, bpf=None, shape=None, nan=False):
    """Create a dataset of random shape and block geometry, write a few random boxes per field, close."""
    shape = shape or tuple(int(rng.choice(SIZES[ndim])) for _ in range(ndim))
    bitmask = he.random_bitmask(rng, shape, extra=int(rng.random() < 0.3)) if rng.random() < 0.5 else None
    maxh = he.max_level(bitmask or he.guess_bitmask(shape))
    bpb = bpb if bpb is not None else int(rng.integers(max(1, maxh - 9), max(2, min(maxh, 8)) + 1))
    bpf = bpf if bpf is not None else int(rng.choice([1, 2, 3, 4, 8]))
    fields = {f"f{i}": str(dt) for i, dt in enumerate(dtypes)}
    spec = [(n, dt, {"default_value": DEFAULT}) for n, dt in fields.items()]
    params = dict(shape=shape, fields=spec, bitmask=bitmask, bits_per_block=bpb, blocks_per_file=bpf,
                  codec=codec or str(rng.choice(["raw", "zip", "lz4"])),
                  layout=layout or str(rng.choice(["hzorder", "rowmajor"])))
    print(f"dataset {name}: {params}")
    path = tmp_path / f"{name}.idx"
    src, written = {}, {}
    with hzio.create(str(path), **params) as ds:
        for n, dt in fields.items():
            base, comps = he.split_dtype(dt)
            src[n] = np.full(shape + ((comps,) if comps > 1 else ()), DEFAULT, dtype=base)
            written[n] = []
            for _ in range(int(rng.integers(boxes[0], boxes[1] + 1))):
                box = _random_box_within(rng, shape, frac)
                data = he.random_array(rng, [h - l for l, h in zip(*box)], dt)
                if nan and base.startswith("float"):
                    data.reshape(-1)[rng.random(data.size) < 0.05] = np.nan
                ds.write(data, offset=box[0], field=n)
                src[n][tuple(slice(l, h) for l, h in zip(*box))] = data
                written[n].append(box)
        actual = (ds.bitmask, ds.bits_per_block, ds.blocks_per_file)
    assert actual[1:] == (bpb, bpf) and (bitmask is None or actual[0] == bitmask)
    return Written(path, shape, actual[0], bpb, bpf, fields, src, written)


def make_dataset_with_holes(rng, tmp_path, ndim, **kw):
    """``make_dataset`` redrawn until the first field has missing blocks and a data file was never written."""
    for attempt in range(30):
        w = make_dataset(rng, tmp_path, ndim, name=f"d{attempt}", **kw)
        rows = blocks_of(w, "f0")
        names = {Path(str(f)).name for f in rows["file"]}
        if not rows["present"].all() and names - w.existing_files():
            return w
    raise AssertionError("no random dataset with missing blocks and files in 30 attempts")


def blocks_of(w, field):
    with hzio.open(str(w.path)) as ds:  # its own handle: listing blocks caches header tables
        return ds.blocks(field)


def assert_same_listing(got, want):
    """Equal ``ds.blocks()`` listings, column by column (NaN statistics compare equal)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    for name in got.dtype.names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"column {name}")


def full_box(shape):
    return (0,) * len(shape), tuple(shape)


# ---------------------------------------------------------------------------------------------- 1. reads
def _check_read_report(w, rep, blocks, present, sizes):
    """The report of a read that needed ``blocks`` on a freshly opened dataset."""
    files = {file_name(b, w.bpf) for b in blocks} & w.existing_files()
    got_present = blocks & present
    assert rep["blocks_read"] == len(got_present), rep
    assert rep["blocks_read"] + rep["blocks_missing"] == len(blocks), rep
    assert rep["files_opened"] == len(files), (rep, sorted(files))
    min_bytes = sum(sizes[b] for b in got_present)
    assert rep["min_bytes"] == min_bytes, rep
    overhead = sum(table_bytes(len(w.fields), w.bpf) + os.path.getsize(w.folder / (f + ".hzstats")) for f in files)
    assert min_bytes <= rep["bytes_read"] <= min_bytes + overhead, (rep, overhead)


@pytest.mark.parametrize("index", range(8))
def test_read_touches_exactly_the_blocks_and_files_it_needs(tmp_path, rng, index):
    w = make_dataset_with_holes(rng, tmp_path, 2 + index % 2,
                                dtypes=("float32", str(rng.choice(["uint8", "int16", "float64"]))))
    maxh = he.max_level(w.bitmask)
    listing = {f: blocks_of(w, f) for f in w.fields}
    files_expected = {file_name(int(b["block"]), w.bpf) for b in listing["f0"]}
    for b in listing["f0"]:  # the oracle's file naming is the one hzio uses
        assert Path(str(b["file"])).name == file_name(int(b["block"]), w.bpf)
    assert w.existing_files() <= files_expected
    for k in range(14):
        fld = f"f{k % 2}"
        b = listing[fld]
        present = set(b["block"][b["present"]].tolist())
        sizes = dict(zip(b["block"].tolist(), b["size"].tolist()))
        box = he.random_box(rng, w.shape) if k else full_box(w.shape)
        level = int(rng.integers(0, maxh + 1)) if k else maxh
        blocks = needed_blocks(w.bitmask, w.bpb, box, level)
        with hzio.open(str(w.path)) as ds:
            got = ds.read(box=box, level=level, field=fld)
            rep = dict(ds.last_read_report)
        np.testing.assert_array_equal(got, he.expected_level(w.src[fld], w.bitmask, box, level))
        _check_read_report(w, rep, blocks, present, sizes)


def test_large_reads_streamed_by_the_prefetch_thread_are_exact(tmp_path, rng):
    """Reads of 32 MiB and more stream their blocks through a helper thread; results and counts unchanged."""
    shape = (160, 256, 256)  # 40 MiB of float32
    src = rng.standard_normal(shape, dtype=np.float32)
    path = str(tmp_path / "large.idx")
    with hzio.create(path, shape=shape, fields={"f": "float32"}) as ds:
        ds.write(src)
        ds.write(np.full((40, 256, 256), -1, np.float32), offset=(60, 0, 0))  # a later write wins
    src[60:100] = -1
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(), src)
        rep = dict(ds.last_read_report)
        assert rep["bytes_read"] >= rep["min_bytes"] >= src.nbytes, rep
        box = ((3, 17, 5), (150, 250, 201))
        np.testing.assert_array_equal(ds.read(box=box), src[3:150, 17:250, 5:201])


@pytest.mark.parametrize("shape,dtype,layout,bpb,default,gap_misses_blocks", [
    ((128, 256, 520), "float32", "hzorder", 14, -7.5, True),    # 65 MiB, blocks of 64 KiB
    ((4100, 4096), "float32", "rowmajor", None, 0, True),       # 2-D, row-major blocks (placed by the general copy)
    ((67, 130, 245), "float64", "hzorder", 12, 0, False),       # odd sizes, blocks much smaller than a window
    ((40, 100, 700), "float32[3]", "hzorder", 16, 2.25, False), # 12-byte samples, a thin z axis
    ((48, 96, 400), "float64[2]", "hzorder", 15, -1, False),    # 16-byte samples
    ((300, 170, 170), "uint8", "hzorder", 10, 3, True),         # 1-byte samples
])
def test_large_reads_assembled_window_by_window_are_exact(tmp_path, rng, shape, dtype, layout, bpb, default,
                                                          gap_misses_blocks):
    """Outputs of 8 MiB and more whose blocks are in the page cache (just written) are assembled window
    by window; planes never written read as the field's default value (their finest blocks are missing,
    or merged with the default), and sub-boxes and coarse levels stay exact. Small reads keep placing
    block by block."""
    src = he.random_array(rng, shape, dtype)
    path = str(tmp_path / "windows.idx")
    h0, h1 = shape[0] // 3, shape[0] // 3 + shape[0] // 4
    fields = [("f", dtype, {"default_value": default})]
    with hzio.create(path, shape=shape, fields=fields, layout=layout, bits_per_block=bpb) as ds:
        ds.write(src[:h0])
        ds.write(src[h1:], offset=(h1,) + (0,) * (len(shape) - 1))
    src[h0:h1] = default
    with hzio.open(path) as ds:
        got = ds.read()
        rep = dict(ds.last_read_report)
        np.testing.assert_array_equal(got, src)
        assert rep["assembly"] == "windows" and (rep["blocks_missing"] > 0) == gap_misses_blocks, rep
        block_bytes = (1 << ds.bits_per_block) * src.itemsize * (src.shape[-1] if src.ndim > len(shape) else 1)
        assert rep["min_bytes"] == rep["blocks_read"] * block_bytes < rep["bytes_read"], rep  # + header tables
        assert got.ctypes.data % 4096 == 0  # new large outputs start on a page
        # ... and their memory is kept for the next large read once they are freed, but not before:
        # a view keeps it alive, and a second read gets other memory meanwhile.
        view, at = got[1:], got.ctypes.data
        del got
        again = ds.read()
        assert again.ctypes.data != at
        np.testing.assert_array_equal(view, src[1:])
        np.testing.assert_array_equal(again, src)
        del view
        again.view(np.uint8)[...] = 0xA5  # a sample a later read into this memory missed would show
        del again
        # Reused memory is already mapped: the next read takes (almost) no page faults, where a fresh
        # array of this size takes one per 2 MiB huge page at least (one per 4 KiB page without them).
        # One thread, whose window buffer the first read made, so that only the output could fault.
        with hzio.open(path, threads=1) as one:
            np.testing.assert_array_equal(one.read(), src)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            got = one.read()
            assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults < got.nbytes >> 22
            np.testing.assert_array_equal(got, src)
        lo = tuple(n // 7 for n in shape)
        hi = tuple(n - n // 9 for n in shape)
        sub = ds.read(box=(lo, hi))
        np.testing.assert_array_equal(sub, src[tuple(slice(l, h) for l, h in zip(lo, hi))])
        assert ds.last_read_report["assembly"] == ("windows" if sub.nbytes >= 8 << 20 else "blocks")
        out = np.empty_like(src)  # a caller's array, not on a cache line: same result
        ds.read(out=out)
        np.testing.assert_array_equal(out, src)
        for level in (ds.max_level - 1, ds.max_level - 2, ds.max_level - 5):
            want = he.expected_level(src, ds.bitmask, full_box(shape), level)
            got = ds.read(level=level)
            np.testing.assert_array_equal(got, want)
            assert ds.last_read_report["assembly"] == ("windows" if got.nbytes >= 8 << 20 else "blocks")
        small = ((0,) * len(shape), tuple(min(n, 9) for n in shape))
        np.testing.assert_array_equal(ds.read(box=small), src[tuple(slice(0, h) for h in small[1])])
        assert ds.last_read_report["assembly"] == "blocks"
        # Progressive steps keep the coarser levels they placed before; large steps are windowed too.
        for level, arr in ds.progressive():
            np.testing.assert_array_equal(arr, he.expected_level(src, ds.bitmask, full_box(shape), level))
        assert level == ds.max_level and ds.last_read_report["assembly"] == "windows", ds.last_read_report
    # Evicted from the page cache, the blocks are streamed from the disk in the order windows use them.
    for name in os.listdir(tmp_path):
        fd = os.open(tmp_path / name, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(), src)
        assert ds.last_read_report["assembly"] == "windows"


def test_a_data_file_that_shrinks_under_a_reader_fails_the_read_with_its_name(tmp_path, rng):
    """Blocks read from the disk are loaded before any worker touches them: a data file cut short after
    the dataset mapped it gives a CorruptError naming the file, not a crash in a page fault."""
    shape = (64, 256, 256)  # 16 MiB of float32 in 4 data files
    path = str(tmp_path / "shrinks.idx")
    with hzio.create(path, shape=shape, fields={"f": "float32"}, blocks_per_file=64) as ds:
        ds.write(rng.standard_normal(shape, dtype=np.float32))
    victim = sorted(p for p in os.listdir(tmp_path / "shrinks") if p.endswith(".bin"))[-1]
    with hzio.open(path) as ds:
        ds.read()  # maps every data file and caches its header table
        os.truncate(tmp_path / "shrinks" / victim, os.path.getsize(tmp_path / "shrinks" / victim) // 2)
        for name in os.listdir(tmp_path / "shrinks"):
            fd = os.open(tmp_path / "shrinks" / name, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        with pytest.raises(hzio.CorruptError, match=victim):
            ds.read()


def test_level_grid_is_the_points_of_hz_level_at_most_h(rng):
    """The two oracles agree: the level-H grid of a box is its points of hz level <= H."""
    for ndim in (2, 3):
        shape = tuple(int(rng.choice(SIZES[ndim])) for _ in range(ndim))
        bitmask = he.random_bitmask(rng, shape, extra=1)
        for _ in range(10):
            box = he.random_box(rng, shape)
            level = int(rng.integers(0, he.max_level(bitmask) + 1))
            pts = box_points(box)
            keep = hz_level(he.hz_address(bitmask, pts)) <= level
            want = np.zeros(keep.shape, bool)
            grid = he.level_slices(bitmask, box, level)
            want[tuple(slice(s.start - l, None, s.step) for s, l in zip(grid, box[0]))] = True
            np.testing.assert_array_equal(keep, want, err_msg=f"{bitmask} {box} level {level}")


@pytest.mark.parametrize("index", range(6))
def test_progressive_reads_every_block_once(tmp_path, rng, index):
    w = make_dataset_with_holes(rng, tmp_path, 2 + index % 2, dtypes=("int16",))
    maxh = he.max_level(w.bitmask)
    b = blocks_of(w, "f0")
    present = set(b["block"][b["present"]].tolist())
    for k in range(3):
        box = he.random_box(rng, w.shape) if k else full_box(w.shape)
        if k == 2:
            levels = sorted(set(rng.choice(maxh + 1, size=int(rng.integers(1, maxh + 2)), replace=True).tolist()))
        else:
            levels = list(range(maxh, -1, -len(w.shape)))[::-1]
        with hzio.open(str(w.path)) as ds:
            steps = [(lv, arr.copy(), dict(ds.last_read_report)) for lv, arr in ds.progressive(box=box, levels=levels)]
        assert [s[0] for s in steps] == levels
        prev, block0_read = -1, False
        for lv, arr, rep in steps:
            np.testing.assert_array_equal(arr, he.expected_level(w.src["f0"], w.bitmask, box, lv),
                                          err_msg=f"level {lv}")
            with hzio.open(str(w.path)) as ds:
                np.testing.assert_array_equal(arr, ds.read(box=box, level=lv))
            new = needed_blocks(w.bitmask, w.bpb, box, lv, min_level=prev + 1)
            want_read = (new & present) - ({0} if block0_read else set())
            assert rep["blocks_read"] == len(want_read), (lv, rep, sorted(want_read))
            assert rep["blocks_missing"] == len(new - present), (lv, rep)
            block0_read |= 0 in want_read
            prev = lv
        whole = needed_blocks(w.bitmask, w.bpb, box, levels[-1])
        assert sum(s[2]["blocks_read"] for s in steps) == len(whole & present), "a block was read twice"
        files = {file_name(x, w.bpf) for x in whole} & w.existing_files()
        assert sum(s[2]["files_opened"] for s in steps) == len(files)


def test_progressive_counts_a_missing_block_0_only_in_steps_whose_levels_are_in_the_box(tmp_path):
    """read-path.md step 4: a step plans block 0 only if a sample of its *new* levels lies in the box.

    16 x 16, bpb 4: only samples off the level-4 grid are written, so block 0 is missing. The box is the
    single point (0, 0), of level 0: only the first step needs block 0.
    """
    path = tmp_path / "b0.idx"
    with hzio.create(str(path), shape=(16, 16), fields={"v": "uint8"}, bitmask="V01010101", bits_per_block=4,
                     blocks_per_file=2) as ds:
        ds.write(np.full((2, 2), 9, np.uint8), offset=(1, 1))
    with hzio.open(str(path)) as ds:
        assert 0 not in ds.blocks()["block"][ds.blocks()["present"]]
        steps = [(lv, arr.tolist(), ds.last_read_report["blocks_missing"])
                 for lv, arr in ds.progressive(box=((0, 0), (1, 1)), levels=[0, 2, 4, 8])]
    assert [s[1] for s in steps] == [[[0]]] * 4
    assert [s[2] for s in steps] == [1, 0, 0, 0], steps


# ---------------------------------------------------------------------------------------------- 2. statistics
def _assert_stats_exact(w, fld, rows, parts_bits=0):
    want = block_stats(w.src[fld], len(w.shape), w.bitmask, w.bpb)
    written = set()
    for box in w.boxes[fld]:
        written |= needed_blocks(w.bitmask, w.bpb, box, he.max_level(w.bitmask))
    present = rows[rows["present"]]
    assert set(present["block"].tolist()) == written, "present blocks are not the blocks of the written boxes"
    assert present["stats_known"].all()
    assert not rows[~rows["present"]]["count"].any()
    comps = he.split_dtype(w.fields[fld])[1]
    for r in present:
        n, mn, mx = want[int(r["block"])]
        got_mn, got_mx = np.atleast_1d(r["min"]).tolist(), np.atleast_1d(r["max"]).tolist()
        assert (int(r["count"]), got_mn, got_mx) == (n, mn, mx), f"block {r['block']} of {fld}"
        assert len(got_mn) == comps


@pytest.mark.parametrize("dtype", he.SCALAR_DTYPES + ("int16[2]", "float32[3]"))
def test_block_statistics_equal_numpy_over_real_samples(tmp_path, rng, dtype):
    w = make_dataset(rng, tmp_path, 2 + int(rng.integers(2)), dtypes=(dtype,), nan=True)
    _assert_stats_exact(w, "f0", blocks_of(w, "f0"))
    with hzio.open(str(w.path)) as ds:
        np.testing.assert_array_equal(ds.read(), w.src["f0"])
    comps = [he.split_dtype(dtype)[1]]
    for p in w.folder.glob("*.bin"):
        assert (w.folder / (p.name + ".hzstats")).stat().st_size == sidecar_bytes(comps, w.bpf, 0), p


def _query_matches_numpy(w, fld, lo, hi, box, level, component=None):
    with hzio.open(str(w.path)) as ds:
        arr = he.expected_level(w.src[fld], w.bitmask, box, level)
        test = arr if component is None else arr[..., component]
        test = test.astype(np.float64)
        mask = (test >= lo) & (test <= hi)
        coords, values = ds.query(fld, lo, hi, box=box, level=level, component=component)
        rep = dict(ds.last_read_report)
        want = grid_coords(w.bitmask, box, level, np.argwhere(mask)).reshape(-1, len(w.shape))
        np.testing.assert_array_equal(coords, want)
        np.testing.assert_array_equal(values, arr[mask])
        np.testing.assert_array_equal(ds.query(fld, lo, hi, box=box, level=level, component=component, mask=True), mask)
    return rep


def test_sub_block_statistics_via_index_keep_queries_exact(tmp_path, rng):
    """hzio.index(path, sub_block_bits=g) rewrites the sidecars with parts, and raw blocks are then read
    only in the parts whose range may match."""
    shape = (24, 20, 17)
    z, y, x = np.indices(shape)
    smooth = np.sqrt((z - 6.0) ** 2 + (y - 5.0) ** 2 + (x - 4.0) ** 2).astype(np.float32)
    path = tmp_path / "parts.idx"
    bitmask = he.random_bitmask(rng, shape)
    bpb, bpf = 8, 4
    with hzio.create(str(path), shape=shape, fields={"f0": "float32"}, bitmask=bitmask, bits_per_block=bpb,
                     blocks_per_file=bpf, codec="raw", layout="hzorder") as ds:
        ds.write(smooth)
    w = Written(path, shape, bitmask, bpb, bpf, {"f0": "float32"}, {"f0": smooth}, {"f0": [full_box(shape)]})
    maxh = he.max_level(bitmask)
    before = blocks_of(w, "f0")
    for g in (0, 3, 8):
        if g:
            res = hzio.index(str(w.path), sub_block_bits=g)
            assert res["files"] == len(w.existing_files())
        for p in w.folder.glob("*.bin"):
            assert (w.folder / (p.name + ".hzstats")).stat().st_size == sidecar_bytes([1], bpf, g), p
        assert_same_listing(blocks_of(w, "f0"), before)  # whole-block statistics do not change
        parts = {}
        for (b, _), (n, mn, mx) in block_stats(smooth, 3, bitmask, bpb, parts_bits=g or 1).items():
            parts.setdefault(b, []).append((n, mn[0], mx[0]))
        if not g:
            parts = {b: [(sum(p[0] for p in v), min(p[1] for p in v), max(p[2] for p in v))] for b, v in parts.items()}
        part_bytes = 4 << (bpb - g)
        for k in range(7):
            box = he.random_box(rng, shape) if k else full_box(shape)
            level = int(rng.integers(0, maxh + 1)) if k else maxh
            lo = float(rng.uniform(0, 25))
            hi = lo + float(rng.uniform(0, 3))
            rep = _query_matches_numpy(w, "f0", lo, hi, box, level)
            cands = needed_blocks(bitmask, bpb, box, level)
            hit = {b: sum(1 for n, mn, mx in parts[b] if n and mx >= lo and mn <= hi) for b in cands}
            assert rep["blocks_skipped"] == sum(1 for v in hit.values() if not v), (g, rep)
            assert rep["blocks_read"] == sum(1 for v in hit.values() if v), (g, rep)
            files = {file_name(b, bpf) for b in cands}
            overhead = sum(table_bytes(1, bpf) + os.path.getsize(w.folder / (f + ".hzstats")) for f in files)
            assert rep["bytes_read"] == overhead + part_bytes * sum(hit.values()), (g, rep)
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.index(str(w.path), sub_block_bits=bpb + 1)


@pytest.fixture
def indexed(tmp_path, rng):
    """A partly written 3-D dataset with a vector and a scalar field, and its original listings."""
    w = make_dataset(rng, tmp_path, 3, dtypes=("float32", "uint8[3]"), bpf=2, bpb=5, shape=(13, 17, 9))
    assert len(w.existing_files()) >= 2
    return w, {f: blocks_of(w, f) for f in w.fields}


def _file_with_present_blocks(w, listing, pick):
    names = sorted({Path(str(r["file"])).name for r in listing["f0"] if r["present"]})
    return names[pick]


def _full_queries_exact(w, stats_known):
    lvl = he.max_level(w.bitmask)
    for fld, comp in (("f0", None), ("f1", 2)):
        vals = w.src[fld] if comp is None else w.src[fld][..., comp]
        lo, hi = np.quantile(vals.astype(np.float64), [0.4, 0.45])
        rep = _query_matches_numpy(w, fld, float(lo), float(hi), full_box(w.shape), lvl, component=comp)
        if not stats_known:  # nothing rules a block out: every present block is read
            rows = blocks_of(w, fld)
            assert (rep["blocks_skipped"], rep["blocks_read"]) == (0, int(rows["present"].sum())), rep


def test_without_sidecars_statistics_are_unknown_and_index_restores_them(indexed):
    w, original = indexed
    sidecars = {p.name: p.read_bytes() for p in w.folder.glob("*.hzstats")}
    assert sorted(sidecars) == sorted(f + ".hzstats" for f in w.existing_files())
    for p in w.folder.glob("*.hzstats"):
        p.unlink()
    for fld in w.fields:
        rows = blocks_of(w, fld)
        assert not rows[rows["present"]]["stats_known"].any()
        assert np.isnan(rows[rows["present"]]["min"]).all()
    _full_queries_exact(w, stats_known=False)
    res = hzio.index(str(w.path))
    assert res["files"] == len(w.existing_files())
    assert res["blocks"] == sum(int(original[f]["present"].sum()) for f in w.fields)
    for fld in w.fields:
        assert_same_listing(blocks_of(w, fld), original[fld])
        _assert_stats_exact(w, fld, blocks_of(w, fld))
    for name, data in sidecars.items():
        assert (w.folder / name).read_bytes() == data, f"hzio.index wrote {name} differently from the writer"
    _full_queries_exact(w, stats_known=True)


@pytest.mark.parametrize("keep", [0, 20, 47, 60, -1])
def test_truncated_sidecar_is_corrupt_error_naming_it(indexed, keep):
    w, listing = indexed
    victim = w.folder / (_file_with_present_blocks(w, listing, -1) + ".hzstats")
    data = victim.read_bytes()
    victim.write_bytes(data[:keep if keep >= 0 else len(data) + keep])
    with hzio.open(str(w.path)) as ds:
        with pytest.raises(hzio.CorruptError, match=re.escape(str(victim))):
            ds.blocks("f0")
    with hzio.open(str(w.path)) as ds:
        with pytest.raises(hzio.CorruptError, match=re.escape(str(victim))):
            ds.query("f0", -1e30, 1e30)
    with hzio.open(str(w.path)) as ds:  # reads check checksums, so they need the sidecar too
        with pytest.raises(hzio.CorruptError, match=re.escape(str(victim))):
            ds.read(field="f0")
    with hzio.open(str(w.path), verify=False) as ds:  # unless told not to
        np.testing.assert_array_equal(ds.read(field="f0"), w.src["f0"])


def test_sidecar_of_another_data_file_version_is_ignored(indexed):
    w, original = indexed
    victim = _file_with_present_blocks(w, original, 0)
    with open(w.folder / victim, "ab") as f:
        f.write(b"\0")
    for fld in w.fields:
        rows = blocks_of(w, fld)
        mine = np.array([Path(str(p)).name == victim for p in rows["file"]])
        assert not rows[mine & rows["present"]]["stats_known"].any()
        assert_same_listing(rows[~mine], original[fld][~mine])
        with hzio.open(str(w.path)) as ds:
            np.testing.assert_array_equal(ds.read(field=fld), w.src[fld])
    _full_queries_exact(w, stats_known=True)


def test_openvisus_reads_dataset_with_sidecars_exactly(openvisus, tmp_path, rng):
    import ov_helpers as oh  # noqa: PLC0415

    w = make_dataset(rng, tmp_path, 3, dtypes=("float32", "uint8"), codec="zip", layout="hzorder")
    with hzio.open(str(w.path)) as ds:
        bits = min(2, ds.bits_per_block)  # parts cannot be finer than samples
    hzio.index(str(w.path), sub_block_bits=bits)
    assert list(w.folder.glob("*.hzstats"))
    db = oh.ov_open(str(w.path))
    with hzio.open(str(w.path)) as ds:
        for fld in w.fields:
            got = oh.ov_read(None, fld, None, db=db)
            # OpenVisus fills missing blocks byte-wise with the default (ov_helpers): compare them for
            # the 1-byte field only, and the written samples of every field
            written = np.full(w.shape, w.src[fld].itemsize == 1)
            for box in w.boxes[fld]:
                written[tuple(slice(l, h) for l, h in zip(*box))] = True
            np.testing.assert_array_equal(got[written], w.src[fld][written], err_msg=fld)
            np.testing.assert_array_equal(ds.read(field=fld)[written], got[written])


# ---------------------------------------------------------------------------------------------- 3. queries
def _ranges(rng, arr, comp):
    vals = (arr if comp is None else arr[..., comp]).astype(np.float64)
    finite = vals[~np.isnan(vals)]
    a, b = float(finite.min()), float(finite.max())
    q = np.quantile(finite, sorted(rng.uniform(0, 1, 2)))
    return [("random", float(q[0]), float(q[1])), ("nothing", b + abs(b) + 1, b + abs(b) + 2),
            ("everything", a, b), ("default only", DEFAULT, DEFAULT),
            ("one value", float(rng.choice(finite)), None)]


@pytest.mark.parametrize("index", range(8))
def test_query_equals_numpy_scan(tmp_path, rng, index):
    ndim = 2 + index % 2
    dtype = ["float32", "int16", "uint8", "float64", "uint64", "int64", "float32[3]", "int8"][index]
    w = make_dataset_with_holes(rng, tmp_path, ndim, dtypes=(dtype,), nan=True)
    comps = he.split_dtype(dtype)[1]
    maxh = he.max_level(w.bitmask)
    rows = blocks_of(w, "f0")
    present = set(rows["block"][rows["present"]].tolist())
    stats = block_stats(w.src["f0"], ndim, w.bitmask, w.bpb)
    kinds = set()
    for k in range(12):
        box = he.random_box(rng, w.shape) if k % 3 else full_box(w.shape)
        level = int(rng.integers(0, maxh + 1)) if k % 4 else maxh
        comp = int(rng.integers(comps)) if comps > 1 else None
        cands = needed_blocks(w.bitmask, w.bpb, box, level)
        for kind, lo, hi in _ranges(rng, w.src["f0"], comp):
            hi = lo if hi is None else hi
            rep = _query_matches_numpy(w, "f0", lo, hi, box, level, component=comp)
            c = comp or 0
            ruled_out = {b for b in cands & present if stats[b][2][c] < lo or stats[b][1][c] > hi}
            assert rep["blocks_skipped"] == len(ruled_out), (kind, rep)
            assert rep["blocks_read"] + rep["blocks_skipped"] + len(cands - present) == len(cands), (kind, rep)
            kinds.add(kind)
    if comps > 1:
        with hzio.open(str(w.path)) as ds:
            with pytest.raises(hzio.InvalidArgumentError):
                ds.query("f0", 0, 1)
            with pytest.raises(hzio.InvalidArgumentError):
                ds.query("f0", 0, 1, component=comps)
    with hzio.open(str(w.path)) as ds:
        with pytest.raises(hzio.InvalidArgumentError):
            ds.query("f0", 2, 1, component=0 if comps > 1 else None)


def test_default_value_of_missing_blocks_matches_only_their_range(tmp_path, rng):
    for attempt in range(30):  # redrawn until some block is missing (one random box may cover them all)
        w = make_dataset(rng, tmp_path, 3, dtypes=("int16",), name=f"d{attempt}", boxes=(1, 1), frac=0.4)
        if not blocks_of(w, "f0")["present"].all():
            break
    assert not blocks_of(w, "f0")["present"].all(), "the dataset needs missing blocks"
    _query_matches_numpy(w, "f0", DEFAULT, DEFAULT, full_box(w.shape), he.max_level(w.bitmask))
    _query_matches_numpy(w, "f0", DEFAULT + 0.5, 1e9, full_box(w.shape), he.max_level(w.bitmask))


QUERY_UNDER_A_LIMIT = r"""
import json, resource, sys
import hzio
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
out = {}
with hzio.open(sys.argv[2]) as ds:  # row-major blocks: the scan's other path
    try:
        ds.query("f", -1, 1)
        out["rowmajor"] = "answered"
    except hzio.IoError as e:
        out["rowmajor"] = str(e)
with hzio.open(sys.argv[1]) as ds:
    try:
        ds.query("f", -1, 1)
        out["whole"] = "answered"
    except hzio.IoError as e:
        out["whole"] = str(e)
    coords, values = ds.query("f", -1, 1, box=((0, 0, 0), (64, 256, 256)))
    want = np.argwhere(np.ones((64, 256, 256), bool))
    out["slab"] = bool(np.array_equal(coords, want)) and bool((values == 0).all())
    mask = ds.query("f", -1, 1, mask=True)
    out["mask"] = [list(mask.shape), bool(mask.all())]
print(json.dumps(out))
"""


def test_a_query_matching_more_than_memory_fails_naming_its_size(tmp_path):
    """What a query returns is decided by the data: a dataset never written, whose default value 0 is in
    range, matches all its 2^25 samples. Under a 3 GiB address-space limit (a budget of half of it,
    docs/design/read-path.md "Queries") the whole query fails with an out-of-memory error naming the
    count, instead of growing until the kernel ends the process; a slab within the budget and a mask of
    the whole answer, checked against NumPy."""
    path, rowmajor = tmp_path / "never.idx", tmp_path / "never_rowmajor.idx"
    hzio.create(str(path), shape=(512, 256, 256), fields={"f": "float32"}).close()
    hzio.create(str(rowmajor), shape=(512, 256, 256), fields={"f": "float32"}, layout="rowmajor").close()
    # Few malloc arenas: on a many-core machine each thread's arena reserves address space under the limit.
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    proc = subprocess.run([sys.executable, "-c", QUERY_UNDER_A_LIMIT, str(path), str(rowmajor)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    for case in ("whole", "rowmajor"):
        m = re.match(r"out of memory: the query matches more than (\d+) samples", out[case])
        assert m, out
        # Stopped before the 2^25 matches of the whole answer, and above the slab's 2^22 that fit.
        assert 1 << 22 < int(m.group(1)) < 1 << 25, out
        assert "smaller box" in out[case] and "mask" in out[case], out
    assert out["slab"] is True
    assert out["mask"] == [[512, 256, 256], True]


def test_query_skips_blocks_away_from_a_sphere_front(tmp_path, rng):
    shape = (32, 30, 29)
    z, y, x = np.indices(shape)
    r = np.sqrt((z - 10.5) ** 2 + (y - 12.0) ** 2 + (x - 9.0) ** 2).astype(np.float32)
    field = np.tanh(r - 6.0).astype(np.float32)  # smooth, -1 inside, +1 outside, a front at r = 6
    path = tmp_path / "sphere.idx"
    with hzio.create(str(path), shape=shape, fields={"f0": "float32"}, bits_per_block=9, blocks_per_file=4,
                     codec="zip") as ds:
        ds.write(field[:, :, :24], offset=(0, 0, 0))  # x >= 24 never written: default 0 there
        bitmask = ds.bitmask
    src = np.zeros(shape, np.float32)
    src[:, :, :24] = field[:, :, :24]
    w = Written(path, shape, bitmask, 9, 4, {"f0": "float32"}, {"f0": src}, {"f0": [((0, 0, 0), (32, 30, 24))]})
    rows = blocks_of(w, "f0")
    present = set(rows["block"][rows["present"]].tolist())
    for lo, hi in ((-0.2, 0.2), (0.5, 0.9), (-0.01, 0.01)):
        rep = _query_matches_numpy(w, "f0", lo, hi, full_box(shape), he.max_level(bitmask))
        cands = needed_blocks(bitmask, 9, full_box(shape), he.max_level(bitmask))
        print(lo, hi, rep)
        assert rep["blocks_skipped"] > 0, rep
        assert rep["blocks_read"] + rep["blocks_skipped"] + len(cands - present) == len(cands), rep


def test_default_statistics_have_parts_of_4096_samples_and_read_less_than_per_block(tmp_path):
    """Without sub_block_bits, 2**16-sample blocks keep statistics for 16 parts; a thin-shell query
    then reads fewer bytes than with statistics per block only, and both answers equal NumPy."""
    shape = (64, 64, 64)
    z, y, x = np.indices(shape)
    field = np.tanh(np.sqrt((z - 30.5) ** 2 + (y - 25.0) ** 2 + (x - 33.0) ** 2) - 20.0).astype(np.float32)
    want = np.argwhere((field >= -0.05) & (field <= 0.05))
    read = {}
    for name, sub in (("default", None), ("per-block", 0)):
        path = str(tmp_path / f"{name}.idx")
        with hzio.create(path, shape=shape, fields={"f": "float32"}, sub_block_bits=sub) as ds:
            assert ds.bits_per_block == 16
            ds.write(field)
        text = Path(path).read_text()
        assert f"sub_block_bits={4 if sub is None else 0}" in text, text
        with hzio.open(path) as ds:
            coords, values = ds.query("f", -0.05, 0.05)
            read[name] = dict(ds.last_read_report)["bytes_read"]
        np.testing.assert_array_equal(coords, want)
        np.testing.assert_array_equal(values, field[tuple(want.T)])
    assert read["default"] < read["per-block"], read


def _sidecar_sub_block_bits(sidecar):
    return int(np.frombuffer(Path(sidecar).read_bytes()[24:28], "<u4")[0])  # docs/format.md "Statistics sidecar"


def test_index_keeps_the_dataset_sub_block_bits_or_picks_parts_of_4096_samples(tmp_path, rng):
    """hzio.index() without sub_block_bits uses the sub-block bits of the (hzio stats) key; for a dataset without
    the key (written elsewhere) it picks parts of 4096 samples, as hzio.create does."""
    path = tmp_path / "sub_blocks.idx"
    with hzio.create(str(path), shape=(64, 64, 64), fields={"f": "float32"}, sub_block_bits=2) as ds:
        ds.write(rng.standard_normal((64, 64, 64), dtype=np.float32))
    sidecars = sorted(tmp_path.rglob("*.hzstats"))
    assert sidecars and all(_sidecar_sub_block_bits(s) == 2 for s in sidecars)
    hzio.index(str(path))
    assert all(_sidecar_sub_block_bits(s) == 2 for s in sidecars)
    text = path.read_text()
    assert "(hzio stats)\nv1 sub_block_bits=2\n" in text
    path.write_text(text.replace("(hzio stats)\nv1 sub_block_bits=2\n", ""))  # as another tool writes it
    hzio.index(str(path))
    assert all(_sidecar_sub_block_bits(s) == 4 for s in sidecars)  # 2**16-sample blocks: 16 parts of 4096
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.index(str(path), sub_block_bits=-1)
