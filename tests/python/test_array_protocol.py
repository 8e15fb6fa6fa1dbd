"""Datasets, fields and level views behave as NumPy arrays: attributes, exact basic indexing (component
axis included), conversion, dtype spellings, values that do not fit, and argument mistakes that must
raise hzio errors. The oracle is NumPy applied to the array that was written."""

from __future__ import annotations

import hzio
import numpy as np
import pytest

GRIDS = [(6, 9, 5), (7, 12), (13,)]


def _make(tmp_path, grid, rng, times=(0,)):
    """A dataset with a scalar field ``s`` (float64) and a vector field ``v`` (int16[3]), random values."""
    path = str(tmp_path / f"a{len(grid)}.idx")
    truth = {}
    with hzio.create(path, shape=grid, fields={"s": "float64", "v": "int16[3]"}, times=times,
                     bits_per_block=4) as ds:
        for t in times:
            s = rng.standard_normal(grid)
            v = rng.integers(-999, 999, size=grid + (3,)).astype(np.int16)
            ds.write(s, time=t)
            ds.write(v, field="v", time=t)
            truth[t] = {"s": s, "v": v}
    return path, truth


def _random_key(rng, shape):
    """A random basic-indexing key: ints (negative too), slices with any step, an optional ellipsis."""
    key = []
    for n in shape:
        r = rng.random()
        if r < 0.25:
            key.append(int(rng.integers(-n, n)))
        elif r < 0.4:
            key.append(slice(None))
        else:
            a, b = (int(x) for x in rng.integers(-n - 2, n + 2, size=2))
            step = int(rng.choice([-3, -2, -1, 1, 1, 2, 3]))
            key.append(slice(a if rng.random() < 0.8 else None, b if rng.random() < 0.8 else None, step))
    if rng.random() < 0.3:  # replace a run of axes by an ellipsis
        i = int(rng.integers(0, len(key) + 1))
        j = int(rng.integers(i, len(key) + 1))
        key[i:j] = [Ellipsis]
    elif rng.random() < 0.3:  # fewer indices than axes
        key = key[: int(rng.integers(0, len(key) + 1))]
    return tuple(key)


def _check_random_keys(view, want, rng, count):
    """``count`` random keys: the view answers as NumPy does on ``want`` (values, shape, dtype, IndexError)."""
    for _ in range(count):
        key = _random_key(rng, want.shape)
        try:
            expected = want[key]
        except IndexError:
            with pytest.raises(IndexError):
                view[key]
            continue
        got = view[key]
        assert got.shape == expected.shape and got.dtype == expected.dtype, key
        assert np.array_equal(got, expected), key


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{len(g)}d")
def test_field_attributes_match_numpy(tmp_path, rng, grid):
    path, truth = _make(tmp_path, grid, rng)
    with hzio.open(path) as ds:
        for name in ("s", "v"):
            f = ds[name]
            want = truth[0][name]
            assert isinstance(f, hzio.Field) and f.name == name
            assert (f.shape, f.dtype, f.ndim, f.size, f.nbytes, len(f)) == (
                want.shape, want.dtype, want.ndim, want.size, want.nbytes, len(want))
            assert np.array_equal(np.asarray(f), want) and np.asarray(f).dtype == want.dtype
            assert np.array_equal(np.asarray(f, dtype=np.float32), want.astype(np.float32))
            assert all(np.array_equal(a, b) for a, b in zip(f, want, strict=True))
            assert np.array_equal(ds.field(name)[...], want)
        # the dataset itself is its first field
        s = truth[0]["s"]
        assert (ds.shape, ds.dtype, ds.ndim, ds.size, ds.nbytes, len(ds)) == (s.shape, s.dtype, s.ndim, s.size,
                                                                              s.nbytes, len(s))
        assert ds.grid_shape == grid and ds.grid_ndim == len(grid)
        assert np.array_equal(np.asarray(ds), s)
        assert "s" in ds and "v" in ds and "x" not in ds and 3 not in ds
        with pytest.raises(hzio.NotFoundError, match="no field 'x'"):
            ds["x"]


def test_vector_dataset_shape_matches_what_it_reads(tmp_path, rng):
    path = str(tmp_path / "w.idx")
    w = rng.standard_normal((8, 8, 8, 3)).astype(np.float32)
    with hzio.create(path, shape=(8, 8, 8), fields={"w": "float32[3]"}) as ds:
        ds.write(w)
    with hzio.open(path) as ds:
        assert ds.shape == ds[:].shape == np.asarray(ds).shape == (8, 8, 8, 3)
        assert np.array_equal(ds[..., 1], w[..., 1])  # the component axis, not x = 1
        assert np.array_equal(ds[2, ..., ::-2], w[2, ..., ::-2])


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{len(g)}d")
def test_basic_indexing_is_numpy_exact(tmp_path, rng, grid):
    path, truth = _make(tmp_path, grid, rng, times=(0, 3))
    with hzio.open(path) as ds:
        for t in (0, 3):
            for name in ("s", "v"):
                f, want = ds.field(name, time=t), truth[t][name]
                _check_random_keys(f, want, rng, 60)


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{len(g)}d")
def test_level_views_are_indexed_in_their_own_grid(tmp_path, rng, grid):
    path, truth = _make(tmp_path, grid, rng)
    with hzio.open(path) as ds:
        for level in range(ds.max_level + 1):
            for name in ("s", "v"):
                lv = ds[name].level(level)
                whole = ds.read(level=level, field=name)
                assert lv.shape == whole.shape == ds.level_shape(level, field=name) and lv.level == level
                # the level grid samples the full array at its spacing (the oracle is the written array)
                want = truth[0][name][tuple(slice(o, None, s) for o, s in zip(lv.origin, lv.spacing))]
                assert np.array_equal(whole, want)
                assert np.array_equal(np.asarray(lv), want) and len(lv) == len(want)
                _check_random_keys(lv, want, rng, 12)


def test_array_conversion_refuses_above_the_limit(tmp_path, rng, monkeypatch):
    path, truth = _make(tmp_path, (6, 9, 5), rng)
    with hzio.open(path) as ds:
        assert truth[0]["s"].nbytes > truth[0]["v"].nbytes
        monkeypatch.setattr(hzio.Field, "array_limit_bytes", truth[0]["s"].nbytes - 1)
        with pytest.raises(hzio.InvalidArgumentError, match="array_limit_bytes"):
            np.asarray(ds["s"])
        with pytest.raises(hzio.InvalidArgumentError, match="array_limit_bytes"):
            np.asarray(ds)
        assert np.array_equal(np.asarray(ds["v"]), truth[0]["v"])  # below the limit
        assert np.array_equal(ds["s"][...], truth[0]["s"])  # indexing reads on purpose


@pytest.mark.parametrize("spec", ["float32", "f4", "<f4", "=f4", "float64", "f8", "u1", "uint8", "i2", "<i2",
                                  "int64", "u8", "i4", np.float32, np.dtype("u2"), "B", "h", "d"])
def test_dtype_spellings_follow_numpy(tmp_path, spec):
    want = np.dtype(spec)
    assert hzio.parse_dtype(spec)[1] == want
    path = str(tmp_path / "d.idx")
    with hzio.create(path, shape=(4, 4), fields={"a": spec}) as ds:
        assert ds.dtype == want
        ds.write(np.arange(16).reshape(4, 4).astype(want))
    with hzio.open(path) as ds:
        assert ds["a"].dtype == want and np.array_equal(ds[...], np.arange(16).reshape(4, 4))


@pytest.mark.parametrize("spec,comps", [("float32[3]", 3), ("3*float32", 3), ("(3,)f4", 3), (np.dtype(("<f4", 2)), 2),
                                        ("f4[4]", 4)])
def test_vector_dtype_spellings(spec, comps):
    assert hzio.parse_dtype(spec) == (f"float32[{comps}]", np.dtype("float32"), comps)


@pytest.mark.parametrize("spec", [">f4", ">i2", "c8", "U3", "O", "float16", "bool", "float32[0]", "(2,2)f4",
                                  "(3,)f4[3]", 3.5])
def test_unsupported_dtypes_raise(spec):
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.parse_dtype(spec)


@pytest.mark.parametrize("dtype,value", [("float32", 1e40), ("float32", -np.float64(1e39)), ("uint8", 300),
                                         ("uint8", -1), ("int16", 40000), ("int32", 1.5), ("int32", 2.0),
                                         ("uint16", 2 ** 70), ("float64", 2 ** 70 + 1)])
def test_values_that_do_not_fit_raise(tmp_path, dtype, value):
    with hzio.create(str(tmp_path / "f.idx"), shape=(4, 4), fields={"a": dtype}) as ds:
        with pytest.raises(hzio.InvalidArgumentError):
            ds[0, 0] = value
        with pytest.raises(hzio.InvalidArgumentError):
            ds.write(np.full((4, 4), value))
        with pytest.raises(hzio.InvalidArgumentError):
            ds["a"][:2] = np.full((2, 4), value)


def test_values_that_fit_are_stored_as_numpy_converts_them(tmp_path):
    path = str(tmp_path / "f.idx")
    f64 = np.linspace(-1e30, 1e30, 16).reshape(4, 4)
    with hzio.create(path, shape=(4, 4), fields={"a": "float32", "b": "int16", "c": "float32"}) as ds:
        ds[...] = f64  # float64 within float32's range: rounded as NumPy rounds it
        ds["b"][1:3] = np.array([[-32768, 32767, 0, 5]] * 2, dtype=np.int64)
        ds["c"][0, 0] = 0.1
        ds["c"][1] = np.inf  # a non-finite value is kept as such
    with hzio.open(path) as ds:
        assert np.array_equal(ds[...], f64.astype(np.float32))
        assert ds["b"][1].tolist() == [-32768, 32767, 0, 5]
        assert ds["c"][0, 0] == np.float32(0.1) and np.all(np.isinf(ds["c"][1]))


def test_vector_assignment_needs_every_component(tmp_path):
    with hzio.create(str(tmp_path / "v.idx"), shape=(4, 4), fields={"v": "uint8[3]"}) as ds:
        ds["v"][1:3, :] = [1, 2, 3]
        with pytest.raises(hzio.InvalidArgumentError, match="all of its 3 components"):
            ds["v"][..., 1] = 7
        with pytest.raises(hzio.InvalidArgumentError, match="cannot assign"):
            ds["v"][0] = np.zeros((3, 3), np.uint8)
        ds.flush()
        assert ds["v"][2, 3].tolist() == [1, 2, 3] and ds["v"][0, 0].tolist() == [0, 0, 0]


def test_errors_speak_in_z_y_x_order(tmp_path):
    with hzio.create(str(tmp_path / "o.idx"), shape=(4, 8, 16), fields={"a": "uint8"}) as ds:
        with pytest.raises(hzio.InvalidArgumentError) as e:
            ds.read(((0, 0, 0), (5, 1, 1)))
        assert "[0:5, 0:1, 0:1)" in str(e.value) and "[0:4, 0:8, 0:16)" in str(e.value)
        with pytest.raises(hzio.InvalidArgumentError) as e:
            ds.write(np.zeros((1, 1, 20), np.uint8), offset=(0, 0, 0))
        assert "[0:1, 0:1, 0:20)" in str(e.value) and "[0:4, 0:8, 0:16)" in str(e.value)
        ds.write(np.zeros((4, 8, 16), np.uint8))


def _bad_calls(path, ok):
    """Wrong arguments of create, open, write and read: every one must raise an hzio.Error."""
    fields = {"a": "float32"}
    return {
        "create shape text": lambda: hzio.create(path, shape="64", fields=fields),
        "create shape float": lambda: hzio.create(path, shape=(4.5, 4), fields=fields),
        "create shape zero": lambda: hzio.create(path, shape=(0, 4), fields=fields),
        "create shape 4 axes": lambda: hzio.create(path, shape=(2, 2, 2, 2), fields=fields),
        "create shape None": lambda: hzio.create(path, shape=None, fields=fields),
        "create fields list of names": lambda: hzio.create(path, shape=(4, 4), fields=["a"]),
        "create fields text": lambda: hzio.create(path, shape=(4, 4), fields="a"),
        "create fields None": lambda: hzio.create(path, shape=(4, 4), fields=None),
        "create fields empty": lambda: hzio.create(path, shape=(4, 4), fields={}),
        "create field name int": lambda: hzio.create(path, shape=(4, 4), fields={1: "f4"}),
        "create field dtype": lambda: hzio.create(path, shape=(4, 4), fields={"a": "float13"}),
        "create field options": lambda: hzio.create(path, shape=(4, 4), fields=[("a", "f4", {"codex": "zip"})]),
        "create default value": lambda: hzio.create(path, shape=(4, 4), fields=[("a", "f4", {"default_value": "x"})]),
        "create codec": lambda: hzio.create(path, shape=(4, 4), fields=fields, codec="gzip9"),
        "create codec type": lambda: hzio.create(path, shape=(4, 4), fields=fields, codec=3),
        "create layout": lambda: hzio.create(path, shape=(4, 4), fields=fields, layout="zigzag"),
        "create bitmask": lambda: hzio.create(path, shape=(4, 4), fields=fields, bitmask="V0123"),
        "create bitmask type": lambda: hzio.create(path, shape=(4, 4), fields=fields, bitmask=5),
        "create bits_per_block": lambda: hzio.create(path, shape=(4, 4), fields=fields, bits_per_block=-2),
        "create bits_per_block text": lambda: hzio.create(path, shape=(4, 4), fields=fields, bits_per_block="8"),
        "create blocks_per_file": lambda: hzio.create(path, shape=(4, 4), fields=fields, blocks_per_file=1.5),
        "create times text": lambda: hzio.create(path, shape=(4, 4), fields=fields, times="012"),
        "create times negative": lambda: hzio.create(path, shape=(4, 4), fields=fields, times=[-1]),
        "create times float": lambda: hzio.create(path, shape=(4, 4), fields=fields, times=[0.5]),
        "create threads": lambda: hzio.create(path, shape=(4, 4), fields=fields, threads=-1),
        "create path None": lambda: hzio.create(None, shape=(4, 4), fields=fields),
        "create path empty": lambda: hzio.create("", shape=(4, 4), fields=fields),
        "create sub_block_bits": lambda: hzio.create(path, shape=(4, 4), fields=fields, sub_block_bits="x"),
        "create existing": lambda: hzio.create(ok, shape=(4, 4), fields=fields),
        "open path None": lambda: hzio.open(None),
        "open path int list": lambda: hzio.open([1, 2]),
        "open missing": lambda: hzio.open(path),
        "open mode": lambda: hzio.open(ok, mode="w"),
        "open threads": lambda: hzio.open(ok, threads="2"),
    }


def _bad_dataset_calls(ds):
    return {
        "write shape": lambda: ds.write(np.zeros((5, 4), np.float32)),
        "write ndim": lambda: ds.write(np.zeros((4,), np.float32)),
        "write text": lambda: ds.write("abc"),
        "write object": lambda: ds.write(np.array([[None] * 4] * 4)),
        "write complex": lambda: ds.write(np.zeros((4, 4), np.complex64)),
        "write offset": lambda: ds.write(np.zeros((2, 2), np.float32), offset=(3, 3)),
        "write offset length": lambda: ds.write(np.zeros((2, 2), np.float32), offset=(0,)),
        "write offset text": lambda: ds.write(np.zeros((2, 2), np.float32), offset="00"),
        "write field": lambda: ds.write(np.zeros((4, 4), np.float32), field="b"),
        "write field int": lambda: ds.write(np.zeros((4, 4), np.float32), field=0),
        "write time": lambda: ds.write(np.zeros((4, 4), np.float32), time="t"),
        "read box int": lambda: ds.read(box=3),
        "read box outside": lambda: ds.read(box=((0, 0), (5, 4))),
        "read box empty": lambda: ds.read(box=((2, 2), (2, 4))),
        "read box 3 coords": lambda: ds.read(box=((0, 0, 0), (1, 1, 1))),
        "read box floats": lambda: ds.read(box=((0.5, 0), (1, 1))),
        "read level text": lambda: ds.read(level="x"),
        "read level high": lambda: ds.read(level=99),
        "read field": lambda: ds.read(field="b"),
        "read time": lambda: ds.read(time=7),
        "read time text": lambda: ds.read(time="t"),
        "read out": lambda: ds.read(out=np.zeros((4, 4), np.float64)),
        "level view": lambda: ds.level(-1),
        "field view": lambda: ds.field("b"),
        "assign shape": lambda: ds.__setitem__((slice(0, 2), slice(0, 2)), np.zeros((3, 3))),
        "assign step": lambda: ds.__setitem__((slice(0, 4, 2), slice(None)), 1.0),
        "query field": lambda: ds.query("b", 0, 1),
        "progressive levels": lambda: list(ds.progressive(levels=[99])),
    }


def test_every_argument_mistake_raises_an_hzio_error(tmp_path):
    ok = str(tmp_path / "ok.idx")
    with hzio.create(ok, shape=(4, 4), fields={"a": "float32"}) as ds:
        ds.write(np.ones((4, 4), np.float32))
    failures = []
    for name, call in _bad_calls(str(tmp_path / "new" / "x.idx"), ok).items():
        try:
            call()
            failures.append(f"{name}: no error")
        except hzio.Error:
            pass
        except Exception as e:  # noqa: BLE001 - the point is to catch what is not an hzio.Error
            failures.append(f"{name}: {type(e).__name__}: {e}")
    with hzio.open(ok, mode="r+") as ds:
        for name, call in _bad_dataset_calls(ds).items():
            try:
                call()
                failures.append(f"{name}: no error")
            except hzio.Error:
                pass
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


def test_a_bitmask_too_short_is_refused_in_z_y_x_words(tmp_path):
    with pytest.raises(hzio.InvalidArgumentError) as e:
        hzio.create(str(tmp_path / "b.idx"), shape=(4, 8), fields={"a": "u1"}, bitmask="V0001")
    assert "(2, 8)" in str(e.value) and "(4, 8)" in str(e.value)  # y gets 2 samples of the 4 asked for


def test_blocks_per_file_minus_one_means_one_file_as_in_openvisus(tmp_path, openvisus):
    ov_path = str(tmp_path / "ov.idx")
    openvisus.CreateIdx(url=ov_path, dims=[64, 32], fields=[openvisus.Field("a", "uint8")], bitsperblock=6,
                        blocksperfile=-1)
    with hzio.create(str(tmp_path / "h.idx"), shape=(32, 64), fields={"a": "u1"}, bits_per_block=6,
                     blocks_per_file=-1) as ds, hzio.open(ov_path) as ov:
        assert ds.blocks_per_file == ov.blocks_per_file == ds.block_count == 32


def test_shape_may_be_one_integer_as_in_numpy(tmp_path):
    with hzio.create(str(tmp_path / "s.idx"), shape=64, fields={"a": "u1"}) as ds:
        assert ds.shape == (64,)


def test_bits_per_block_beyond_the_bitmask_is_clamped_as_openvisus_does(tmp_path, openvisus):
    ov_path = str(tmp_path / "ov.idx")
    openvisus.CreateIdx(url=ov_path, dims=[16, 8, 4], fields=[openvisus.Field("a", "float32")], bitsperblock=30)
    with hzio.open(ov_path) as ov_ds:
        ov_bits = ov_ds.bits_per_block
    with hzio.create(str(tmp_path / "h.idx"), shape=(4, 8, 16), fields={"a": "float32"}, bits_per_block=30) as ds:
        assert ds.bits_per_block == ov_bits == ds.max_level
        ds.write(np.arange(512, dtype=np.float32).reshape(4, 8, 16))
    with hzio.open(str(tmp_path / "h.idx")) as ds:
        assert ds.block_count == 1 and np.array_equal(ds[...], np.arange(512).reshape(4, 8, 16))
