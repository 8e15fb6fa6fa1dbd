"""The xarray backend (engine "hzio": open_dataset, levels, open_datatree, chunks) and the dask helpers
(to_dask on a LocalCluster of worker processes, from_dask with several workers). The oracle is NumPy
applied to the arrays written, and reads through hzio's own NumPy interface for coarse levels."""

from __future__ import annotations

import json
import pickle

import hzio
import numpy as np
import pytest

xr = pytest.importorskip("xarray")
da = pytest.importorskip("dask.array")

TIMES = (0, 2, 5)


@pytest.fixture
def written(tmp_path, rng):
    """A 3-D dataset with a scalar, a vector and an int field over three timesteps, and the arrays written."""
    path = str(tmp_path / "x.idx")
    shape = (12, 10, 17)
    truth = {}
    with hzio.create(path, shape=shape, times=TIMES, bits_per_block=5,
                     fields={"t": "float32", "w": "float64[3]", "n": "int16"}) as ds:
        for time in TIMES:
            arrays = {"t": rng.standard_normal(shape).astype(np.float32),
                      "w": rng.standard_normal(shape + (3,)),
                      "n": rng.integers(-500, 500, shape).astype(np.int16)}
            for name, a in arrays.items():
                ds.write(a, field=name, time=time)
            truth[time] = arrays
    return path, truth


def _stack(truth, name):
    return np.stack([truth[t][name] for t in TIMES])


def test_engine_is_registered_and_guesses_idx_files(written):
    path, _ = written
    from xarray.backends import list_engines
    assert "hzio" in list_engines()
    entry = list_engines()["hzio"]
    assert entry.guess_can_open(path) and not entry.guess_can_open("x.nc")
    xds = xr.open_dataset(path)  # found by guess_can_open, no engine named
    assert set(xds.data_vars) == {"t", "w", "n"}
    xds.close()


def test_open_dataset_is_lazy_and_matches_numpy(written, rng):
    path, truth = written
    with xr.open_dataset(path, engine="hzio") as xds:
        assert xds["t"].dims == ("time", "z", "y", "x") and xds["w"].dims == ("time", "z", "y", "x", "component")
        assert xds["time"].values.tolist() == list(TIMES)
        assert xds["x"].values.tolist() == list(range(17))
        assert xds.attrs["bitmask"].startswith("V") and xds.attrs["max_level"] > 0
        assert json.loads(xds.attrs["codecs"]) == {"t": "raw", "w": "raw", "n": "raw"}
        for name in ("t", "w", "n"):
            var = xds[name]
            assert not var.variable._in_memory
            want = _stack(truth, name)
            assert var.shape == want.shape and var.dtype == want.dtype
            np.testing.assert_array_equal(var.values, want)
        # outer indexing: integer lists per axis, slices with steps, scalars
        ix = {"time": [2, 0], "z": rng.permutation(12)[:5], "y": slice(1, 9, 3), "x": [16, 0, 3, 3]}
        want = _stack(truth, "w")[np.ix_([2, 0], ix["z"], np.arange(1, 9, 3), [16, 0, 3, 3])]
        np.testing.assert_array_equal(xds["w"].isel(ix).values, want)
        np.testing.assert_array_equal(xds["n"].isel(time=1, z=4, x=slice(None, None, -2)).values,
                                      truth[2]["n"][4, :, ::-2])
        np.testing.assert_array_equal(xds["t"].sel(time=5, x=3).values, truth[5]["t"][:, :, 3])
        assert xds["w"].isel(time=[], x=[1, 2]).values.shape == (0, 12, 10, 2, 3)  # nothing read, shape kept


def test_indexing_reads_only_what_is_indexed(written, monkeypatch):
    path, truth = written
    boxes = []
    read = hzio.Dataset.read

    def recording_read(self, box=None, **kwargs):
        boxes.append((box, kwargs.get("level"), kwargs.get("time")))
        return read(self, box, **kwargs)

    monkeypatch.setattr(hzio.Dataset, "read", recording_read)
    with xr.open_dataset(path, engine="hzio") as xds:
        assert boxes == []  # opening reads no sample
        var = xds["t"].isel(time=1, z=3, y=slice(0, 2), x=[4, 1])
        assert boxes == []  # nor does indexing, until the values are asked for
        np.testing.assert_array_equal(var.values, truth[2]["t"][3, :2][:, [4, 1]])
    assert boxes == [(((3, 0, 1), (4, 2, 5)), None, 2)]


def test_coarse_level_matches_hzio_read(written):
    path, truth = written
    with hzio.open(path) as ds:
        level = ds.max_level - 3
        want = ds.read(level=level, field="w", time=2)
    with xr.open_dataset(path, engine="hzio", level=level) as xds:
        assert xds.attrs["level"] == level
        np.testing.assert_array_equal(xds["w"].sel(time=2).values, want)
        # coordinates are full-resolution sample positions of the level's grid
        np.testing.assert_array_equal(truth[2]["w"][np.ix_(xds["z"].values, xds["y"].values, xds["x"].values)], want)


def test_physical_coordinates_come_from_the_idx(tmp_path):
    path = str(tmp_path / "p.idx")
    with hzio.create(path, shape=(4, 8), fields={"a": "uint8"}) as ds:
        ds.write(np.arange(32, dtype=np.uint8).reshape(4, 8))
    with open(path, "a") as f:  # x from -1 to 1, y from 10 to 12 (per axis "lo hi", x first)
        f.write("(physic_box)\n-1 1 10 12\n")
    with xr.open_dataset(path, engine="hzio") as xds:
        np.testing.assert_allclose(xds["x"].values, -1 + np.arange(8) * 2 / 8)
        np.testing.assert_allclose(xds["y"].values, 10 + np.arange(4) * 2 / 4)
        assert float(xds["a"].sel(time=0, y=10.5, x=0.0)) == 8 * 1 + 4


def test_datatree_has_one_group_per_halving(written):
    path, truth = written
    tree = xr.open_datatree(path, engine="hzio")
    try:
        meta = json.loads(tree.attrs["multiscales"])[0]
        assert [a["name"] for a in meta["axes"]] == ["time", "z", "y", "x"]
        groups = [d["path"] for d in meta["datasets"]]
        assert groups == [str(i) for i in range(len(groups))] and len(groups) >= 3
        np.testing.assert_array_equal(tree["0"]["t"].values, _stack(truth, "t"))
        prev = prev_scale = None
        with hzio.open(path) as ds:
            for d in meta["datasets"]:
                node = tree[d["path"]]
                np.testing.assert_array_equal(node["n"].sel(time=5).values,
                                              ds.read(level=d["level"], field="n", time=5))
                sizes = np.array([node.sizes[a] for a in "zyx"])
                if prev is not None and prev_scale is not None:  # every axis halves, until it has one sample
                    assert np.all((sizes == -(-prev // 2)) | (prev == 1)), (prev, sizes)
                    scale = d["coordinateTransformations"][0]["scale"][1:]
                    assert all(s == 2 * p for s, p, n in zip(scale, prev_scale, prev) if n > 1), (scale, prev_scale)
                prev, prev_scale = sizes, d["coordinateTransformations"][0]["scale"][1:]
    finally:
        tree.close()


def test_chunks_follow_the_block_structure(written):
    path, truth = written
    with xr.open_dataset(path, engine="hzio", chunks={}) as xds:
        var = xds["t"]
        assert var.chunks is not None and var.chunks[0] == (1, 1, 1)
        with hzio.open(path) as ds:
            chars = ds.bitmask[1:][-ds.bits_per_block:]
        block = [1 << chars.count(d) for d in "210"]  # per z, y, x
        assert [c[0] for c in var.chunks[1:]] == [min(b, n) for b, n in zip(block, (12, 10, 17))]
        np.testing.assert_array_equal(var.values, _stack(truth, "t"))


def test_to_dask_matches_numpy_and_pickles(written):
    path, truth = written
    a = hzio.to_dask(path, field="w")
    assert a.shape == (3, 12, 10, 17, 3) and a.dtype == np.float64
    np.testing.assert_array_equal(a.compute(), _stack(truth, "w"))
    one = hzio.to_dask(path, field="n", time=2, chunks=(5, 5, 5))
    np.testing.assert_array_equal(one[3:11, ::2].compute(), truth[2]["n"][3:11, ::2])
    again = pickle.loads(pickle.dumps(one))
    np.testing.assert_array_equal(again.compute(), truth[2]["n"])
    with hzio.open(path) as ds:
        level = ds.max_level - 3
        want = ds.read(level=level, field="t", time=5)
    np.testing.assert_array_equal(hzio.to_dask(path, field="t", time=5, level=level).compute(), want)
    with pytest.raises(hzio.NotFoundError):
        hzio.to_dask(path, field="nope")
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.to_dask(path, field="t", time=7)


def test_from_dask_without_a_cluster(tmp_path):
    path = str(tmp_path / "local.idx")
    src = np.arange(16 * 16, dtype=np.int16).reshape(16, 16)
    hzio.create(path, shape=(16, 16), fields={"b": "int16"}).close()
    hzio.from_dask(da.from_array(src, chunks=5), path, field="b")
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds[...], src)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as c, distributed.Client(c) as client:
        yield client


def test_to_dask_on_a_cluster_of_processes(written, cluster):
    path, truth = written
    a = hzio.to_dask(path, field="t", chunks=(1, 4, 5, 6))
    got = cluster.compute(a).result()
    np.testing.assert_array_equal(got, _stack(truth, "t"))
    pids = set(cluster.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2  # two worker processes, each opened the dataset itself
    with xr.open_dataset(path, engine="hzio", chunks={"time": 1}) as xds:
        mean = cluster.compute(xds["w"].mean(dim=("z", "y", "x"))).result()
        w = _stack(truth, "w")
        # Dask sums chunk by chunk, NumPy pairwise: the rounding differs by about eps x the mean of |w|,
        # which is far from relative to a mean that cancels to almost 0.
        np.testing.assert_allclose(mean.values, w.mean(axis=(1, 2, 3)), rtol=1e-12,
                                   atol=1e-12 * np.abs(w).mean(axis=(1, 2, 3)).max())


def test_from_dask_with_several_workers(tmp_path, cluster, rng):
    path = str(tmp_path / "out.idx")
    src = rng.standard_normal((20, 18, 16)).astype(np.float32)
    with hzio.create(path, shape=src.shape, fields={"a": "float32", "b": "int16"}, times=[0, 1],
                     bits_per_block=6):
        pass
    hzio.from_dask(da.from_array(src, chunks=(7, 9, 5)), path, field="a", time=1)
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(field="a", time=1), src)
        np.testing.assert_array_equal(ds.read(field="a", time=0), np.zeros_like(src))
    with pytest.raises(hzio.InvalidArgumentError, match="shape"):
        hzio.from_dask(da.zeros((4, 4, 4), dtype=np.int16), path, field="b")
