"""``hzio convert`` from HDF5, NetCDF, Zarr v2/v3, .npy and raw input, ``hzio export`` to Zarr and NetCDF, the
progress bars and the refusal to overwrite, run in-process through ``hzio.cli.main`` (and under mpiexec).

Oracles: the NumPy arrays written into the inputs (read back through the public ``ds.read``); for exports,
the same arrays sliced at the level's spacing and ``ds.read`` of the box and level, read back with zarr,
netCDF4 and h5py; for parallel converts, the bytes of every file of a one-process convert; for memory,
the peak resident size the kernel reports for the converting process (``os.wait4``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import hzio
import netCDF4
import numpy as np
import pytest
import zarr
from hzio import _cli_convert
from hzio._slabs import hz_boxes
from hzio.cli import main
from mpi_launch import MPIEXEC, launcher_flags


def convert(*args, capsys=None):
    """Run ``hzio convert ARGS`` in this process; return (status, stdout, stderr)."""
    status = main(["convert", *map(str, args)])
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return status, out, err


def assert_fails(capsys, argv, *needles):
    """``hzio ARGV`` exits 2 with one ``hzio: error:`` line naming every needle (no traceback)."""
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("hzio: error:") and err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def read_all(path, field=None, time=None):
    with hzio.open(path) as ds:
        return ds.read(field=field, time=time)


# ---------------------------------------------------------------- the boxes convert writes
@pytest.mark.parametrize("shape, bitmask", [((37, 45, 61), None), ((5, 300), None), ((1000,), None),
                                            ((8, 8, 8), "V222111000")])
def test_hz_boxes_cover_every_sample_once_in_hz_order_and_within_the_bound(tmp_path, shape, bitmask):
    with hzio.create(tmp_path / "b.idx", shape=shape, fields={"v": "uint8"}, bitmask=bitmask) as ds:
        mask = ds.bitmask
    for max_bytes in (1, 7, 64, 1000, 1 << 30):
        boxes = hz_boxes(mask, shape, 2, max_bytes)
        count = np.zeros(shape, np.int32)
        for lo, hi in boxes:
            count[tuple(slice(a, b) for a, b in zip(lo, hi))] += 1
            assert 2 * int(np.prod([b - a for a, b in zip(lo, hi)])) <= max(2, max_bytes)
        assert (count == 1).all()
        # HZ order: the first samples of the boxes, as hz addresses of the full-resolution grid, increase.
        firsts = [lo for lo, _ in boxes]
        assert firsts == sorted(firsts, key=lambda p: _hz_key(mask, p))


def _hz_key(bitmask, point):
    digits = [int(c) for c in bitmask[1:]]
    ndim = len(point)
    bits = [0] * ndim
    for d in digits:
        bits[ndim - 1 - d] += 1
    key = 0
    for d in digits:  # the first digit is the most significant bit of its axis
        a = ndim - 1 - d
        bits[a] -= 1
        key = (key << 1) | ((point[a] >> bits[a]) & 1)
    return key


# ---------------------------------------------------------------- inputs
def test_npy_in_many_boxes_round_trips_in_1d_2d_and_3d(tmp_path, rng, capsys):
    for shape in [(1000,), (33, 70), (19, 23, 37)]:
        array = rng.integers(0, 60000, shape).astype(np.uint16)
        np.save(tmp_path / "in.npy", array)
        out = tmp_path / f"out{len(shape)}.idx"
        status, stdout, _ = convert(tmp_path / "in.npy", out, "--slab-bytes", 300, "--codec", "lz4", capsys=capsys)
        assert status == 0 and "wrote" in stdout
        np.testing.assert_array_equal(read_all(out), array)


def test_one_process_commits_when_the_shared_coarse_blocks_grow(tmp_path, rng, capsys, monkeypatch):
    commits = []
    real = hzio.Dataset.flush
    monkeypatch.setattr(hzio.Dataset, "flush", lambda ds: commits.append(1) or real(ds))
    monkeypatch.setattr(_cli_convert, "COMMIT_BYTES", 1)
    array = rng.integers(0, 255, (32, 32, 32)).astype(np.uint8)
    np.save(tmp_path / "in.npy", array)
    # boxes of 4 KiB, each sharing a block of 2^8 bytes: 8 boxes share 2 KiB, under the 4 KiB that commit
    assert convert(tmp_path / "in.npy", tmp_path / "o.idx", "--slab-bytes", "4K", "--bits-per-block", 8,
                   "--json", capsys=capsys)[0] == 0
    assert len(commits) == 0
    assert convert(tmp_path / "in.npy", tmp_path / "o.idx", "--slab-bytes", 512, "--bits-per-block", 8,
                   "--overwrite", capsys=capsys)[0] == 0
    assert len(commits) == 64 // 3  # 64 boxes: after every third, 768 shared bytes pass the 512
    np.testing.assert_array_equal(read_all(tmp_path / "o.idx"), array)


def test_raw_vector_input_round_trips(tmp_path, rng, capsys):
    array = rng.random((6, 11, 3)).astype(np.float64)
    array.tofile(tmp_path / "in.raw")
    assert convert(tmp_path / "in.raw", tmp_path / "o.idx", "--shape", "6,11", "--dtype", "float64[3]",
                   "--slab-bytes", 100, capsys=capsys)[0] == 0
    np.testing.assert_array_equal(read_all(tmp_path / "o.idx"), array)


def test_hdf5_chunked_compressed_datasets_in_a_group_become_fields(tmp_path, rng, capsys):
    temp = rng.standard_normal((21, 34, 17)).astype(np.float32)
    count = rng.integers(-5000, 5000, (21, 34, 17)).astype(np.int16)
    with h5py.File(tmp_path / "in.h5", "w") as f:
        g = f.create_group("sim/step")
        g.create_dataset("temp", data=temp, chunks=(4, 8, 8), compression="gzip", shuffle=True)
        g.create_dataset("count", data=count, chunks=(7, 34, 17), compression="lzf")
        f.create_dataset("other", data=np.zeros((2, 2)))
    status, out, _ = convert(tmp_path / "in.h5", tmp_path / "o.idx", "--variables",
                             "/sim/step/temp,sim/step/count=n", "--slab-bytes", "4K", "--json", capsys=capsys)
    assert status == 0
    result = json.loads(out)
    assert result["fields"] == {"temp": "float32", "n": "int16"} and result["format"] == "hdf5"
    assert result["boxes"] > 8
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.fields == {"temp": "float32", "n": "int16"} and ds.times == [0]
        np.testing.assert_array_equal(ds.read(field="temp"), temp)
        np.testing.assert_array_equal(ds.read(field="n"), count)


def test_hdf5_time_axis_by_number_and_vector_components(tmp_path, rng, capsys):
    wind = rng.standard_normal((3, 9, 10, 2)).astype(np.float32)  # time, y, x, component
    with h5py.File(tmp_path / "w.hdf5", "w") as f:
        f.create_dataset("wind", data=wind, chunks=(1, 4, 5, 2))
    assert convert(tmp_path / "w.hdf5", tmp_path / "o.idx", "--time-dim", 0, "--dtype", "float32[2]",
                   "--slab-bytes", 256, capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.grid_shape == (9, 10) and ds.fields == {"wind": "float32[2]"} and ds.times == [0, 1, 2]
        for t in range(3):
            np.testing.assert_array_equal(ds.read(time=t), wind[t])


def _netcdf(path, rng, times, fmt="NETCDF4"):
    temp = rng.standard_normal((len(times), 6, 13, 9)).astype(np.float32)
    salt = rng.integers(0, 255, (len(times), 6, 13, 9)).astype(np.uint8 if fmt == "NETCDF4" else np.int16)
    with netCDF4.Dataset(path, "w", format=fmt) as d:
        for name, n in zip(("time", "z", "y", "x"), (None, 6, 13, 9)):
            d.createDimension(name, n)
        kind = np.asarray(times).dtype
        d.createVariable("time", "i4" if kind.kind == "i" and fmt != "NETCDF4" else kind, ("time",))[:] = times
        d.createVariable("temp", "f4", ("time", "z", "y", "x"))[:] = temp
        d.createVariable("salt", salt.dtype, ("time", "z", "y", "x"), fill_value=7)[:] = salt
        d.createVariable("lonely", "f8", ("y",))[:] = np.arange(13)
    return temp, salt


@pytest.mark.parametrize("times, expected", [([0, 6, 12], [0, 6, 12]), ([0.0, 1.5, 3.0], [0, 1, 2]),
                                             ([5, 5, 6], [0, 1, 2]), ([-1, 0, 1], [0, 1, 2])])
def test_netcdf_variables_become_fields_and_time_values_timesteps(tmp_path, rng, capsys, times, expected):
    temp, salt = _netcdf(tmp_path / "in.nc", rng, times)
    assert convert(tmp_path / "in.nc", tmp_path / "o.idx", "--variables", "temp,salt", "--time-dim", "time",
                   "--slab-bytes", "2K", capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.times == expected and ds.fields == {"temp": "float32", "salt": "uint8"}
        for i, t in enumerate(expected):
            np.testing.assert_array_equal(ds.read(field="temp", time=t), temp[i])
            np.testing.assert_array_equal(ds.read(field="salt", time=t), salt[i])


def test_netcdf_classic_file_with_big_endian_data_converts_to_little_endian(tmp_path, rng, capsys):
    temp, salt = _netcdf(tmp_path / "c.nc", rng, [1, 2], fmt="NETCDF3_CLASSIC")  # classic files are big-endian
    assert convert(tmp_path / "c.nc", tmp_path / "o.idx", "--variables", "salt", "--time-dim", "time",
                   capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.fields == {"salt": "int16"} and ds.times == [1, 2]
        np.testing.assert_array_equal(ds.read(time=2), salt[1])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_arrays_with_dimension_names_and_a_time_coordinate(tmp_path, rng, capsys, zarr_format):
    u = rng.standard_normal((2, 12, 20)).astype(">f8" if zarr_format == 2 else "<f8")  # v2 may store big-endian
    v = rng.integers(0, 1 << 40, (2, 12, 20)).astype(np.int64)
    g = zarr.open_group(tmp_path / "in.zarr", mode="w", zarr_format=zarr_format)
    dims = ["t", "y", "x"]
    named = {"dimension_names": dims} if zarr_format == 3 else {"attributes": {"_ARRAY_DIMENSIONS": dims}}
    sub = g.create_group("ocean")
    for name, data, chunks in (("u", u, (1, 5, 7)), ("v", v, (2, 12, 20))):
        sub.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks, **named)[...] = data
    t_named = {"dimension_names": ["t"]} if zarr_format == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["t"]}}
    sub.create_array("t", shape=(2,), dtype="i4", **t_named)[...] = [10, 20]
    assert convert(tmp_path / "in.zarr", tmp_path / "o.idx", "--variables", "ocean/u,ocean/v", "--time-dim", "t",
                   "--slab-bytes", 999, capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.fields == {"u": "float64", "v": "int64"} and ds.times == [10, 20]
        np.testing.assert_array_equal(ds.read(field="u", time=20), u[1])
        np.testing.assert_array_equal(ds.read(field="v", time=10), v[0])


def test_a_lone_zarr_array_needs_no_variables(tmp_path, rng, capsys):
    a = rng.integers(0, 100, (17, 9)).astype(np.uint32)
    zarr.create_array(tmp_path / "lone.zarr", shape=a.shape, dtype=a.dtype, chunks=(4, 4))[...] = a
    assert convert(tmp_path / "lone.zarr", tmp_path / "o.idx", capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "o.idx") as ds:
        assert ds.fields == {"lone": "uint32"}
        np.testing.assert_array_equal(ds.read(), a)


# ---------------------------------------------------------------- bad inputs
@pytest.fixture
def h5_input(tmp_path):
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        f["a"] = np.zeros((4, 5, 6), np.float32)
        f["b"] = np.zeros((4, 5, 7), np.float32)
        f["four"] = np.zeros((2, 3, 4, 5), np.float32)
        f["complex"] = np.zeros((4, 5), np.complex64)
        f["flags"] = np.zeros((4, 5), bool)
        f["half"] = np.zeros((4, 5), np.float16)
    return tmp_path / "bad.h5"


@pytest.mark.parametrize("options, needles", [
    ([], ["6 variables", "--variables"]),
    (["--variables", "nope"], ["no variable 'nope'", "a, b"]),
    (["--variables", "a,b"], ["share their shape", "(4, 5, 6)", "(4, 5, 7)"]),
    (["--variables", "four"], ["1 to 3 spatial axes", "--time-dim"]),
    (["--variables", "complex"], ["complex64", "float32 or float64"]),
    (["--variables", "flags"], ["bool", "--dtype uint8"]),
    (["--variables", "half"], ["float16", "--dtype float32"]),
    (["--variables", "a", "--dtype", "int16"], ["float32 values", "--dtype int16"]),
    (["--variables", "a", "--time-dim", "time"], ["no dimension 'time'"]),
    (["--variables", "a", "--dtype", "float32[3]"], ["3 components", "(4, 5, 6)"]),
    (["--variables", "a", "--shape", "4,5,6"], ["--shape is only for headerless"]),
    (["--variables", "a,a=b", "--field", "x"], ["--field names the field of a single variable"]),
    (["--variables", "a,g/a"], ["same field"]),
    (["--variables", "a", "--slab-bytes", "lots"], ["--slab-bytes expects a size"]),
])
def test_bad_hdf5_inputs_fail_with_one_clear_line(tmp_path, capsys, h5_input, options, needles):
    assert_fails(capsys, ["convert", h5_input, tmp_path / "o.idx", *options], *needles)
    assert not (tmp_path / "o.idx").exists()


def test_other_bad_inputs_fail_with_one_clear_line(tmp_path, capsys):
    assert_fails(capsys, ["convert", tmp_path / "missing.npy", tmp_path / "o.idx"], "No such file")
    (tmp_path / "fake.h5").write_bytes(b"not an hdf5 file at all")
    assert_fails(capsys, ["convert", tmp_path / "fake.h5", tmp_path / "o.idx"], "is not a h5 file")
    (tmp_path / "folder").mkdir()
    assert_fails(capsys, ["convert", tmp_path / "folder", tmp_path / "o.idx"], "not a Zarr store")
    np.save(tmp_path / "f.npy", np.asfortranarray(np.zeros((3, 4))))
    assert_fails(capsys, ["convert", tmp_path / "f.npy", tmp_path / "o.idx"], "Fortran order")
    np.save(tmp_path / "s.npy", np.zeros((2, 3, 4, 5)))
    assert_fails(capsys, ["convert", tmp_path / "s.npy", tmp_path / "o.idx"], "1 to 3 spatial axes")
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    assert_fails(capsys, ["convert", tmp_path / "e.npy", tmp_path / "o.idx"], "no samples")
    assert not (tmp_path / "o.idx").exists()


# ---------------------------------------------------------------- export
@pytest.fixture
def dataset(tmp_path, rng):
    """A 3-D dataset: float32 ``t`` and uint8[3] ``rgb`` at timesteps 0 and 4; (path, {(field, time): array})."""
    arrays = {}
    path = tmp_path / "src.idx"
    with hzio.create(path, shape=(20, 24, 40), fields={"t": "float32", "rgb": "uint8[3]"}, times=[0, 4],
                     codec="zip") as ds:
        for time in (0, 4):
            arrays["t", time] = rng.standard_normal((20, 24, 40)).astype(np.float32)
            arrays["rgb", time] = rng.integers(0, 255, (20, 24, 40, 3)).astype(np.uint8)
            ds.write(arrays["t", time], field="t", time=time)
            ds.write(arrays["rgb", time], field="rgb", time=time)
    return path, arrays


def _exported(path, fmt):
    """{name: array} of an export, read with zarr, netCDF4 (NetCDF) and h5py (NetCDF-4 is HDF5)."""
    if fmt == "zarr":
        g = zarr.open_group(path, mode="r")
        return {name: np.asarray(a[...]) for name, a in g.arrays()}, dict(g.attrs)
    with netCDF4.Dataset(path) as d:
        d.set_auto_mask(False)
        out = {name: np.asarray(v[...]) for name, v in d.variables.items()}
        dims = {name: v.dimensions for name, v in d.variables.items()}
    with h5py.File(path) as f:
        for name in ("t", "rgb"):
            if name in f:
                np.testing.assert_array_equal(f[name][...], out[name])
    return out, dims


@pytest.mark.parametrize("output, extra", [("o.zarr", []), ("o2.zarr", ["--zarr-format", "2"]), ("o.nc", [])])
def test_export_box_at_level_equals_numpy_and_hzio_read(dataset, tmp_path, capsys, output, extra):
    path, arrays = dataset
    with hzio.open(path) as ds:
        level = ds.max_level - 3
        spacing, origin = ds.level(level).spacing, ds.level(level).origin
        box = ((2, 3, 5), (19, 24, 33))
        expected = {(f, t): ds.read(box, level=level, field=f, time=t) for f in ("t", "rgb") for t in (0, 4)}
    status = main(["export", str(path), str(tmp_path / output), "--box", "2:19,3:,5:33", "--level", str(level),
                   "--slab-bytes", "1K", *extra])
    assert status == 0, capsys.readouterr().err
    got, meta = _exported(tmp_path / output, "netcdf" if output.endswith(".nc") else "zarr")
    assert got["time"].tolist() == [0, 4]
    firsts = [-(-(lo - o) // s) * s + o for lo, o, s in zip(box[0], origin, spacing)]
    for name, first, s, hi in zip("zyx", firsts, spacing, box[1]):
        assert got[name].tolist() == list(range(first, hi, s))
    sel = tuple(slice(f, h, s) for f, h, s in zip(firsts, box[1], spacing))
    for (f, t), want in expected.items():
        i = [0, 4].index(t)
        np.testing.assert_array_equal(got[f][i], want)
        np.testing.assert_array_equal(got[f][i], arrays[f, t][sel])  # the array originally written
    if output.endswith(".nc"):
        assert meta["t"] == ("time", "z", "y", "x") and meta["rgb"] == ("time", "z", "y", "x", "component")
    else:
        assert meta["hzio_level"] == level and meta["hzio_box"] == [[2, 3, 5], [19, 24, 33]]


def test_export_of_some_fields_and_timesteps_at_full_resolution(dataset, tmp_path, capsys):
    path, arrays = dataset
    assert main(["export", str(path), str(tmp_path / "o.nc"), "--fields", "t", "--times", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["fields"] == ["t"] and result["times"] == [4] and result["shape"] == [20, 24, 40]
    got, _ = _exported(tmp_path / "o.nc", "netcdf")
    assert "rgb" not in got
    np.testing.assert_array_equal(got["t"], arrays["t", 4][None])


@pytest.mark.parametrize("suffix", [".zarr", ".nc"])
def test_a_2d_export_converts_back_to_the_same_dataset(tmp_path, rng, capsys, suffix):
    arrays = {t: rng.integers(-9, 9, (30, 41)).astype(np.int32) for t in (3, 8)}
    with hzio.create(tmp_path / "a.idx", shape=(30, 41), fields={"p": "int32"}, times=[3, 8]) as ds:
        for t, a in arrays.items():
            ds.write(a, time=t)
    assert main(["export", str(tmp_path / "a.idx"), str(tmp_path / f"e{suffix}"), "--slab-bytes", "500"]) == 0
    assert convert(tmp_path / f"e{suffix}", tmp_path / "b.idx", "--variables", "p", "--time-dim", "time",
                   capsys=capsys)[0] == 0
    with hzio.open(tmp_path / "b.idx") as ds:
        assert ds.grid_shape == (30, 41) and ds.fields == {"p": "int32"} and ds.times == [3, 8]
        for t, a in arrays.items():
            np.testing.assert_array_equal(ds.read(time=t), a)


@pytest.mark.parametrize("argv, needles", [
    (["--fields", "nope"], ["no field 'nope'"]), (["--times", "3"], ["no timestep 3"]),
    (["--times", "x"], ["integers"]), (["--level", "99"], ["--level 99"]), (["--box", "0:99,:,:"], ["outside"]),
    (["--box", "1:2,1:2,1:2", "--level", "3"], ["no sample of level 3"])])
def test_export_rejects_bad_options_and_leaves_nothing(dataset, tmp_path, capsys, argv, needles):
    assert_fails(capsys, ["export", dataset[0], tmp_path / "o.zarr", *argv], *needles)
    assert sorted(os.listdir(tmp_path)) == ["src", "src.idx"]  # no output, no temporary left


def test_export_needs_a_known_suffix_or_format(dataset, tmp_path, capsys):
    assert_fails(capsys, ["export", dataset[0], tmp_path / "o.bin"], "--format")
    assert main(["export", str(dataset[0]), str(tmp_path / "o.bin"), "--format", "netcdf", "--no-progress"]) == 0
    with netCDF4.Dataset(tmp_path / "o.bin") as d:
        assert set(d.variables) >= {"t", "rgb"}


# ---------------------------------------------------------------- overwriting
def test_every_verb_that_writes_a_file_refuses_to_overwrite(dataset, tmp_path, capsys):
    path, arrays = dataset
    np.save(tmp_path / "in.npy", np.zeros((4, 4), np.uint8))
    outputs = {"convert": (["convert", tmp_path / "in.npy", tmp_path / "c.idx"], tmp_path / "c.idx"),
               "read": (["read", path, "-o", tmp_path / "r.npy", "-q"], tmp_path / "r.npy"),
               "query": (["query", path, "--range", "0", "1", "--out", tmp_path / "q.npz"], tmp_path / "q.npz"),
               "export zarr": (["export", path, tmp_path / "e.zarr"], tmp_path / "e.zarr"),
               "export nc": (["export", path, tmp_path / "e.nc"], tmp_path / "e.nc")}
    for name, (argv, out) in outputs.items():
        assert main([str(a) for a in argv]) == 0, name
        capsys.readouterr()
        before = os.stat(out).st_mtime_ns
        assert_fails(capsys, argv, "--overwrite", str(out))
        assert os.stat(out).st_mtime_ns == before, name
        assert main([str(a) for a in argv] + ["--overwrite"]) == 0, name
        capsys.readouterr()
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), arrays["t", 0])
    (tmp_path / "plain").mkdir()
    assert_fails(capsys, ["export", path, tmp_path / "plain", "--format", "zarr", "--overwrite"], "not a Zarr store")
    assert_fails(capsys, ["read", path, "-o", tmp_path / "r.npy", "--box", "0:99,:,:", "--overwrite"], "outside")
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), arrays["t", 0])  # a failed read keeps the old file
    assert not [n for n in os.listdir(tmp_path) if "hzio-tmp" in n]


# ---------------------------------------------------------------- read in slabs, progress bars
def test_read_of_a_large_box_goes_in_slabs_and_equals_numpy(dataset, tmp_path, capsys, monkeypatch):
    from hzio import _cli_inspect
    path, arrays = dataset
    monkeypatch.setattr(_cli_inspect, "READ_SLAB_BYTES", 2 * 24 * 40 * 3)  # two planes of rgb per slab
    assert main(["read", str(path), "-o", str(tmp_path / "a"), "--field", "rgb", "--time", "4", "--progress"]) == 0
    captured = capsys.readouterr()
    assert "summed over 10 slab reads" in captured.out and "read: 100%" in captured.err
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), arrays["rgb", 4])


def test_progress_goes_to_stderr_and_json_stays_parseable(dataset, tmp_path, capsys):
    path, _ = dataset
    np.save(tmp_path / "in.npy", np.arange(4096, dtype=np.float32).reshape(16, 16, 16))
    runs = [["convert", tmp_path / "in.npy", tmp_path / "c.idx", "--slab-bytes", 2048],
            ["export", path, tmp_path / "e.zarr"], ["verify", path], ["dump", path], ["index", path]]
    for argv in runs:
        assert main([str(a) for a in argv] + ["--progress", "--json"]) == 0, argv
        out, err = capsys.readouterr()
        assert isinstance(json.loads(out), dict)
        assert "100%" in err and "|" in err, (argv, err)
        assert main([str(a) for a in argv] + ["--json", "--overwrite" if argv[0] in ("convert", "export") else
                                              "--json"]) == 0
        assert capsys.readouterr().err == ""  # not a terminal: no bar


def test_progress_without_tqdm_is_a_usage_error_only_when_asked_for(tmp_path, capsys, monkeypatch):
    import importlib.util

    from hzio import _progress
    real = importlib.util.find_spec
    monkeypatch.setattr(_progress.importlib.util, "find_spec", lambda name: None if name == "tqdm" else real(name))
    np.save(tmp_path / "in.npy", np.zeros((4, 4), np.uint8))
    assert_fails(capsys, ["convert", tmp_path / "in.npy", tmp_path / "o.idx", "--progress"], "pip install tqdm")
    assert main(["convert", str(tmp_path / "in.npy"), str(tmp_path / "o.idx")]) == 0


# ---------------------------------------------------------------- MPI
def _mpi_convert(nprocs, args, timeout=240):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [MPIEXEC, "-n", str(nprocs), *launcher_flags(), sys.executable, "-m", "hzio", "convert", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def _files(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


@pytest.mark.parametrize("nprocs", [1, 3])
def test_convert_under_mpiexec_writes_the_files_of_one_process(tmp_path, rng, nprocs):
    if MPIEXEC is None or not getattr(hzio._core, "with_mpi", False):
        pytest.fail("this test needs mpiexec and hzio built with MPI (scripts/bootstrap.sh builds both)")
    _netcdf(tmp_path / "in.nc", rng, [3, 7, 9])
    options = ["--variables", "temp,salt", "--time-dim", "time", "--slab-bytes", 600, "--bits-per-block", 6,
               "--blocks-per-file", 4, "--codec", "zip"]
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    assert main(["convert", str(tmp_path / "in.nc"), str(tmp_path / "one" / "o.idx"), *map(str, options)]) == 0
    proc = _mpi_convert(nprocs, [tmp_path / "in.nc", tmp_path / "many" / "o.idx", *options, "--json"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # rank 0 alone prints
    assert result["ranks"] == nprocs and result["boxes"] > 3 * nprocs
    one, many = _files(tmp_path / "one"), _files(tmp_path / "many")
    assert len(one) > 20 and one.keys() == many.keys()
    for name in one:
        assert one[name] == many[name], name


@pytest.mark.parametrize("space", ["global", "local"])
def test_convert_under_mpiexec_with_partitions(tmp_path, rng, space):
    """Global index space: the files of one process; local: a mosaic that reads as the source."""
    if MPIEXEC is None or not getattr(hzio._core, "with_mpi", False):
        pytest.fail("this test needs mpiexec and hzio built with MPI (scripts/bootstrap.sh builds both)")
    src = rng.standard_normal((13, 22, 17)).astype(np.float32)
    np.save(tmp_path / "in.npy", src)
    options = ["--slab-bytes", 2000, "--bits-per-block", 6, "--blocks-per-file", 4]
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    assert main(["convert", str(tmp_path / "in.npy"), str(tmp_path / "one" / "o.idx"), *map(str, options)]) == 0
    proc = _mpi_convert(3, [tmp_path / "in.npy", tmp_path / "many" / "o.idx", *options, "--partitions", 4,
                            "--index-space", space, "--json"])
    assert proc.returncode == 0, proc.stderr
    if space == "global":
        one, many = _files(tmp_path / "one"), _files(tmp_path / "many")
        assert len(one) > 10 and one.keys() == many.keys()
        assert all(one[name] == many[name] for name in one)
    else:
        assert json.loads(proc.stdout)["output"].endswith("o.midx")
        with hzio.open(str(tmp_path / "many" / "o.idx")) as ds:
            np.testing.assert_array_equal(ds.read(), src)
    assert main(["convert", str(tmp_path / "in.npy"), str(tmp_path / "x.idx"), "--partitions", "2"]) == 2


def test_a_bad_input_under_mpiexec_fails_on_every_rank_without_hanging(tmp_path, rng):
    if MPIEXEC is None or not getattr(hzio._core, "with_mpi", False):
        pytest.fail("this test needs mpiexec and hzio built with MPI (scripts/bootstrap.sh builds both)")
    _netcdf(tmp_path / "in.nc", rng, [0, 1])
    proc = _mpi_convert(3, [tmp_path / "in.nc", tmp_path / "o.idx", "--variables", "temp,nope"], timeout=120)
    assert proc.returncode == 2 and "no variable 'nope'" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- memory
def test_a_2_gib_input_converts_in_under_512_mib_of_resident_memory(tmp_path):
    shape = (512, 1024, 1024)  # uint32: 2 GiB; sample (z, y, x) holds its C-order index
    source = np.lib.format.open_memmap(tmp_path / "big.npy", mode="w+", dtype=np.uint32, shape=shape)
    plane = shape[1] * shape[2]
    for z in range(0, shape[0], 32):
        source[z:z + 32] = np.arange(z * plane, (z + 32) * plane, dtype=np.uint32).reshape(32, *shape[1:])
    source.flush()
    del source
    # The peak is measured by a small Python in between: a child started from this process (by vfork and
    # exec) would also be charged this process's own peak, which filling the input made 2 GiB.
    measure = ("import json, resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, "
               "text=True); print(json.dumps([p.returncode, p.stdout, p.stderr, "
               "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "hzio", "convert",
                           str(tmp_path / "big.npy"), str(tmp_path / "big.idx")], capture_output=True, text=True,
                          timeout=600)
    seconds = time.monotonic() - start
    status, out, err, peak_kib = json.loads(proc.stdout)
    peak_mib = peak_kib / 1024  # ru_maxrss is in KiB on Linux
    print(f"2 GiB convert: peak RSS {peak_mib:.0f} MiB, {seconds:.1f} s")
    assert status == 0, err
    assert peak_mib < 512, (peak_mib, out)
    os.remove(tmp_path / "big.npy")
    with hzio.open(tmp_path / "big.idx") as ds:
        view = ds.level(ds.max_level - 6)
        z, y, x = np.meshgrid(*(np.arange(n) * s + o for n, s, o in zip(view.shape, view.spacing, view.origin)),
                              indexing="ij")
        np.testing.assert_array_equal(view[...], (z * plane + y * shape[2] + x).astype(np.uint32))
        box = ((300, 17, 900), (333, 1024, 1024))
        z, y, x = np.mgrid[300:333, 17:1024, 900:1024]
        np.testing.assert_array_equal(ds.read(box), (z * plane + y * shape[2] + x).astype(np.uint32))
    shutil.rmtree(tmp_path / "big")  # 2 GiB that pytest would otherwise keep for a few runs
