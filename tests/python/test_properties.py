"""Property tests of hzio alone (no OpenVisus needed).

Random arrays are written with hzio and read back; every expectation is
computed independently with numpy from the bitmask (:mod:`hz_expect`):
the level-``H`` grid has spacing ``s_H[a] = 2**#{K in (H, maxh] : B[K] == a}``
and starts at the first multiple of ``s_H`` that is ``>= lo``.  Covered:
``read(box, level)``, ``ds.level(h)[...]``, ``ds[...]`` against numpy
indexing, ``progressive``, merging of overlapping partial writes (also across
``r+`` sessions), reopening, and independence of fields and timesteps.
"""

from __future__ import annotations

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import numpy as np
import pytest

N_DATASETS = 24
SIZES = (1, 2, 3, 5, 8, 11, 16, 17, 24, 33)
DTYPES = he.SCALAR_DTYPES + he.VECTOR_DTYPES


def _random_dataset(rng, tmp_path, ndim=None):
    """Create, fill and close a random dataset; return (path, src, bitmask, params)."""
    ndim = ndim or int(rng.integers(2, 4))
    while True:
        shape = tuple(int(rng.choice(SIZES)) for _ in range(ndim))
        if 1 < np.prod(shape) <= 12000:
            break
    dtype = str(rng.choice(DTYPES))
    explicit = he.needs_explicit_bitmask(shape) or rng.random() < 0.5
    bitmask = he.random_bitmask(rng, shape, extra=int(rng.random() < 0.3)) if explicit else None
    maxh = he.max_level(bitmask or he.guess_bitmask(shape))
    bpb = None if rng.random() < 0.3 else int(rng.integers(max(1, maxh - 9), maxh + 1))
    params = dict(shape=shape, fields={"v": dtype}, bitmask=bitmask, bits_per_block=bpb,
                  blocks_per_file=None if rng.random() < 0.5 else int(rng.integers(1, 9)),
                  codec=str(rng.choice(["raw", "zip", "lz4"])),
                  layout=str(rng.choice(["hzorder", "rowmajor"])))
    print("dataset:", params)
    src = he.random_array(rng, shape, dtype)
    path = tmp_path / "p.idx"
    with hzio.create(str(path), **params) as ds:
        ds.write(src, field="v")
        actual = ds.bitmask
    assert he.covers(actual, shape), actual
    if bitmask is None and not he.needs_explicit_bitmask(shape):
        assert actual == he.guess_bitmask(shape), "default bitmask must equal OpenVisus' guess"
    return path, src, actual, params


def _box_slices(box):
    return tuple(slice(lo, hi) for lo, hi in zip(*box))


@pytest.mark.parametrize("index", range(N_DATASETS))
def test_read_box_level_matches_numpy_grid(tmp_path, seed, index):
    rng = np.random.default_rng([seed, index, 7])
    path, src, bitmask, params = _random_dataset(rng, tmp_path)
    maxh = he.max_level(bitmask)
    with hzio.open(str(path), mode="r") as ds:
        assert tuple(ds.grid_shape) == params["shape"]
        assert dict(ds.fields) == params["fields"]
        assert list(ds.times) == [0]
        assert ds.max_level == maxh
        assert ds.bits_per_block == (params["bits_per_block"] or min(maxh, 16))
        if params["blocks_per_file"] is not None:
            assert ds.blocks_per_file == params["blocks_per_file"]
        np.testing.assert_array_equal(ds.read(), src)
        np.testing.assert_array_equal(ds[...], src)
        checked = 0
        for _ in range(40):
            box = he.random_box(rng, src.shape[:len(params["shape"])])
            level = int(rng.integers(0, maxh + 1))
            if 0 in he.level_shape(bitmask, box, level):
                continue
            want = he.expected_level(src, bitmask, box, level)
            got = ds.read(box=box, level=level)
            assert got.dtype == src.dtype and got.shape == want.shape, (box, level)
            np.testing.assert_array_equal(got, want, err_msg=f"box={box} level={level}")
            lv = ds.level(level)  # indexed in the level's grid: the samples at multiples of its spacing
            lv_key = tuple(slice(-(-l // s), -(-h // s)) for l, h, s in zip(box[0], box[1], lv.spacing))
            np.testing.assert_array_equal(lv[lv_key], want)
            checked += 1
        assert checked > 0


def _random_key(rng, shape, allow_empty=False, vector=False):
    """A random numpy key over the spatial axes: ints, slices (steps >= 1), maybe ``...``."""
    key = []
    for n in shape:
        if rng.random() < 0.25:
            key.append(int(rng.integers(-n, n)))
            continue
        while True:
            start = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
            stop = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
            step = [None, 1, 2, 3, 5][int(rng.integers(5))]
            if allow_empty or len(range(*slice(start, stop, step).indices(n))):
                break
        key.append(slice(start, stop, step))
    if rng.random() < 0.3:  # trailing axes implied
        key = key[: int(rng.integers(1, len(key) + 1))]
    elif rng.random() < 0.3:  # an Ellipsis standing for full slices
        i = int(rng.integers(len(key)))
        j = len(key) if vector else int(rng.integers(i, len(key) + 1))
        key[i:j] = [Ellipsis]
    return tuple(key) if len(key) > 1 or rng.random() < 0.5 else key[0]


@pytest.mark.parametrize("shape,dtype", [((9, 14, 11), "int32"), ((13, 10), "float64"),
                                         ((6, 5, 7), "uint8[3]")])
def test_getitem_matches_numpy(tmp_path, rng, shape, dtype):
    src = he.random_array(rng, shape, dtype)
    path = tmp_path / "g.idx"
    with hzio.create(str(path), shape=shape, fields={"v": dtype}, bits_per_block=5) as ds:
        ds.write(src, field="v")
    with hzio.open(str(path)) as ds:
        for _ in range(150):
            key = _random_key(rng, shape, vector=he.split_dtype(dtype)[1] > 1)
            want = src[key]
            got = np.asarray(ds[key])
            assert got.shape == want.shape and got.dtype == want.dtype, key
            np.testing.assert_array_equal(got, want, err_msg=repr(key))
        bad_keys = [(shape[0],), (-shape[0] - 1,), (0, shape[1])]
        if he.split_dtype(dtype)[1] == 1:
            bad_keys.append((0,) * (len(shape) + 1))
        for bad in bad_keys:
            with pytest.raises((IndexError, hzio.Error)):
                ds[bad]


def test_getitem_exotic_keys_equal_numpy_or_raise(tmp_path, rng):
    """Empty ranges, negative steps, lists, None: numpy's answer or an error, never wrong data."""
    shape = (7, 9, 6)
    src = he.random_array(rng, shape, "int16")
    path = tmp_path / "e.idx"
    with hzio.create(str(path), shape=shape, fields={"v": "int16"}) as ds:
        ds.write(src, field="v")
    keys = [np.s_[3:3], np.s_[5:1], np.s_[::-1], np.s_[1, 7:2:-2, ::-3], np.s_[[0, 2]],
            np.s_[None, 1], np.s_[..., 2], np.s_[1:2, ..., -1], np.s_[:, 0:0, 1]]
    keys += [_random_key(rng, shape, allow_empty=True) for _ in range(30)]
    with hzio.open(str(path)) as ds:
        for key in keys:
            try:
                got = np.asarray(ds[key])
            except (IndexError, hzio.Error):
                continue
            want = src[key]
            assert got.shape == want.shape, key
            np.testing.assert_array_equal(got, want, err_msg=repr(key))


def test_level_view_takes_steps_in_its_own_grid(tmp_path, rng):
    path, src, bitmask, params = _random_dataset(rng, tmp_path, ndim=3)
    with hzio.open(str(path)) as ds:
        for level in (ds.max_level // 2, ds.max_level):
            want = he.expected_level(src, bitmask, ((0, 0, 0), src.shape[:3]), level)
            np.testing.assert_array_equal(ds.level(level)[::2, ..., ::-3], want[::2, ..., ::-3])


@pytest.mark.parametrize("index", range(6))
def test_progressive_coarse_to_fine(tmp_path, seed, index):
    rng = np.random.default_rng([seed, index, 11])
    path, src, bitmask, params = _random_dataset(rng, tmp_path)
    shape = params["shape"]
    with hzio.open(str(path)) as ds:
        for box in [None, he.random_box(rng, shape)]:
            real_box = box or ((0,) * len(shape), shape)
            steps = list(ds.progressive(box=box))
            levels = [lvl for lvl, _ in steps]
            assert levels and all(a < b for a, b in zip(levels, levels[1:])), levels
            assert levels[-1] == ds.max_level
            for level, arr in steps:
                want = he.expected_level(src, bitmask, real_box, level)
                if 0 in want.shape:  # no sample of this level in the box: empty or skipped
                    assert np.asarray(arr).size == 0, level
                    continue
                assert arr.shape == want.shape, (level, box)
                np.testing.assert_array_equal(arr, want)
            np.testing.assert_array_equal(steps[-1][1], ds.read(box=box))
            np.testing.assert_array_equal(steps[-1][1], src[_box_slices(real_box)])


def test_partial_writes_merge_like_numpy(tmp_path, rng):
    shape = (11, 17, 6)
    fields = [("t", "float32"), ("c", "uint16[2]")]
    times = [2, 5]
    expected = {(f, t): np.zeros(shape + ((2,) if f == "c" else ()), he.split_dtype(d)[0])
                for f, d in fields for t in times}
    path = tmp_path / "m.idx"

    def scribble(ds, count):
        for _ in range(count):
            f, d = fields[int(rng.integers(2))]
            t = times[int(rng.integers(2))]
            lo, hi = he.random_box(rng, shape)
            block = he.random_array(rng, tuple(h - l for l, h in zip(lo, hi)), d)
            ds.write(block, offset=lo, field=f, time=t)
            expected[(f, t)][_box_slices((lo, hi))] = block

    with hzio.create(str(path), shape=shape, fields=fields, times=times, bits_per_block=6,
                     blocks_per_file=3, codec="zip") as ds:
        scribble(ds, 6)
    with hzio.open(str(path), mode="r+") as ds:  # a second session merges into the files
        scribble(ds, 4)
    with hzio.open(str(path), mode="r") as ds:
        assert [n for n in ds.fields] == ["t", "c"] and list(ds.times) == times
        for (f, t), want in expected.items():
            np.testing.assert_array_equal(ds.read(field=f, time=t), want, err_msg=f"{f} t={t}")


def test_timesteps_and_fields_are_independent(tmp_path, rng):
    shape = (20, 9)
    times = [0, 4, 9]
    path = tmp_path / "t.idx"
    data = {t: he.random_array(rng, shape, "int64") for t in times[:2]}
    with hzio.create(str(path), shape=shape, fields={"a": "int64", "b": "int8"}, times=times) as ds:
        for t, arr in data.items():
            ds.write(arr, field="a", time=t)
        ds.write(np.full(shape, -3, np.int8), field="b", time=9)
    with hzio.open(str(path)) as ds:
        assert list(ds.times) == times
        for t, arr in data.items():
            np.testing.assert_array_equal(ds.read(field="a", time=t), arr)
            np.testing.assert_array_equal(ds.read(field="b", time=t), np.zeros(shape, np.int8))
        np.testing.assert_array_equal(ds.read(field="a", time=9), np.zeros(shape, np.int64))
        np.testing.assert_array_equal(ds.read(field="b", time=9), np.full(shape, -3, np.int8))
        np.testing.assert_array_equal(ds.read(), data[0])  # defaults: first field, first time


def test_reopen_is_identical_and_overwrite(tmp_path, rng):
    path, src, bitmask, params = _random_dataset(rng, tmp_path, ndim=3)
    with hzio.open(str(path)) as a, hzio.open(str(path)) as b:
        np.testing.assert_array_equal(a.read(), b.read())
        assert (a.bitmask, a.bits_per_block, a.blocks_per_file) == (b.bitmask, b.bits_per_block,
                                                                    b.blocks_per_file)
    with pytest.raises((hzio.Error, FileExistsError)):
        hzio.create(str(path), shape=(4, 4), fields={"w": "uint8"})
    with hzio.create(str(path), shape=(4, 4), fields={"w": "uint8"}, overwrite=True) as ds:
        ds.write(np.arange(16, dtype=np.uint8).reshape(4, 4), field="w")
    with hzio.open(str(path)) as ds:
        assert tuple(ds.grid_shape) == (4, 4) and dict(ds.fields) == {"w": "uint8"}
        np.testing.assert_array_equal(ds.read(), np.arange(16, dtype=np.uint8).reshape(4, 4))
