"""``hzio serve`` (hzio._serve.Server in a daemon thread, and the ``hzio serve`` command): the dataset
descriptions, slices of every axis at every level, block statistics, the dataset's files with byte ranges
(and nothing else), remote reads through them, a dataset that grows while served, errors, concurrency and
the command line.

Oracles: the NumPy arrays written (strided NumPy slicing for coarse levels, with the spacing derived from
the bitmask in the .idx on disk), and the bytes of the files on disk. The server's answers are never the
reference. Servers listen on 127.0.0.1 and stop at the end of their ``with`` block (or by --exit-after).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import hzio
import hzio._serve as serve_module
import numpy as np
import pytest
from hzio._serve import Server

SHAPE = (20, 36, 28)  # [z, y, x]: not powers of two, so that the levels' boxes are padded
IMG_SHAPE = (40, 56)  # [y, x]
SPIKE_SHAPE = (64, 64, 64)
OUTLIER = 1.0e6
AXES = {"z": (0, 1, 2), "y": (1, 0, 2), "x": (2, 0, 1)}  # plane axis, row axis, column axis ([z, y, x])
HEADER_KEYS = {"level", "axis", "plane", "index", "field", "time", "component", "dtype", "width", "height",
               "u0", "v0", "du", "dv"}
TIMEOUT = 60  # seconds; only to avoid hanging on a broken server, never asserted on


@dataclass
class Data:
    """The module's datasets: their paths, the arrays written, the digests of every file, the server."""

    root: Path
    paths: dict[str, Path]  # dataset name -> .idx
    arrays: dict[tuple[str, str, int], np.ndarray]  # (dataset, field, time) -> what was written
    digests: dict[str, str]
    secret: Path
    server: Server


def digests(root: Path) -> dict[str, str]:
    """sha256 of every regular file under ``root`` (symlinks are not followed), by relative path."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def bitmask_on_disk(idx: Path) -> str:
    """The bitmask as the .idx file says it (its ``(bits)`` section)."""
    return idx.read_text().split("(bits)", 1)[1].split()[0]


def spacing(bitmask: str, level: int) -> list[int]:
    """[sz, sy, sx] between the samples of ``level``: 2 to the number of finer bits of each axis.

    Bit character 0 is x, 1 is y, 2 is z ([z, y, x] index 2 - c); 2-D datasets have spacing 1 in z."""
    s = [1, 1, 1]
    for c in bitmask[1 + level:]:
        s[2 - int(c)] *= 2
    return s


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A 3-D dataset of five fields (two timesteps of one), a 2-D one and a 64^3 one with one huge outlier,
    side by side in ``www/`` (with a stray file there, and a symlink to a secret outside ``www/``), served."""
    root = tmp_path_factory.mktemp("serve")
    www = root / "www"
    www.mkdir()
    rng = np.random.default_rng(5150)
    n = math.prod(SHAPE)
    arrays = {
        ("vol", "temp", 0): rng.standard_normal(SHAPE).astype(np.float32),
        ("vol", "temp", 3): (rng.standard_normal(SHAPE) * 10 + 100).astype(np.float32),
        ("vol", "wind", 0): rng.standard_normal(SHAPE + (3,)).astype(np.float32),
        ("vol", "mass", 0): rng.random(SHAPE) * 1e3 - 10,
        ("vol", "id", 0): (2**40 + rng.permutation(n)).reshape(SHAPE).astype(np.int64),
        ("vol", "count", 0): rng.integers(-30000, 30000, SHAPE, dtype=np.int16),
        ("img", "g", 0): rng.standard_normal(IMG_SHAPE).astype(np.float32),
        ("img", "uv", 0): rng.standard_normal(IMG_SHAPE + (2,)).astype(np.float32),
    }
    spike = rng.standard_normal(SPIKE_SHAPE).astype(np.float32)
    spike[37, 11, 50] = OUTLIER
    arrays[("spike", "s", 0)] = spike
    paths = {name: www / f"{name}.idx" for name in ("vol", "img", "spike")}
    with hzio.create(paths["vol"], shape=SHAPE, times=[0, 3], bits_per_block=10,
                     fields={"temp": "float32", "wind": "float32[3]", "mass": "float64", "id": "int64",
                             "count": "int16"}) as ds:
        for (name, f, t), a in arrays.items():
            if name == "vol":
                ds.write(a, field=f, time=t)
    with hzio.create(paths["img"], shape=IMG_SHAPE, fields={"g": "float32", "uv": "float32[2]"},
                     bits_per_block=8) as ds:
        ds.write(arrays[("img", "g", 0)], field="g")
        ds.write(arrays[("img", "uv", 0)], field="uv")
    with hzio.create(paths["spike"], shape=SPIKE_SHAPE, fields={"s": "float32"}, bits_per_block=10) as ds:
        ds.write(spike)
    secret = root / "secret.txt"
    secret.write_text("TOP-SECRET-NOT-SERVED")
    (www / "notes.txt").write_text("STRAY-FILE-NOT-SERVED")
    (www / "vol" / "escape").symlink_to(secret)
    (www / "vol" / "stray.bin").write_bytes(b"STRAY-DATA-NOT-SERVED")
    before = digests(root)
    with Server([str(p) for p in paths.values()], port=0) as server:
        yield Data(root, paths, arrays, before, secret, server)


# ------------------------------------------------------------------------------------------------ helpers
def request(server: Server, path: str, headers: dict[str, str] | None = None,
            timeout: float = TIMEOUT) -> tuple[int, dict[str, str], bytes]:
    """GET ``path`` exactly as written (no normalisation of ``..``): status, headers, body."""
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def get_json(server: Server, path: str, status: int = 200):
    code, _, body = request(server, path)
    assert code == status, (path, code, body[:300])
    return json.loads(body)


def get_slice(server: Server, name: str, timeout: float = TIMEOUT, **params) -> tuple[dict, np.ndarray]:
    """A slice's header and samples, checking the framing (padding, dtype, exact length)."""
    code, headers, body = request(server, f"/api/datasets/{name}/slice?{urlencode(params)}", timeout=timeout)
    assert code == 200, (name, params, code, body[:300])
    assert headers["content-type"].startswith("application/octet-stream")
    (n,) = struct.unpack("<I", body[:4])
    assert (4 + n) % 8 == 0, n
    header = json.loads(body[4:4 + n].decode())
    assert set(header) == HEADER_KEYS, header
    dtype = np.dtype("<" + {"float32": "f4", "float64": "f8"}[header["dtype"]])
    assert len(body) == 4 + n + header["height"] * header["width"] * dtype.itemsize, header
    return header, np.frombuffer(body[4 + n:], dtype).reshape(header["height"], header["width"])


def pick(a: np.ndarray, components: int, component) -> np.ndarray:
    """The scalar array a slice of ``component`` shows (a component, or the magnitude)."""
    if components == 1:
        return a
    if component == "magnitude":
        return np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=-1))
    return a[..., int(component)]


def check_slice(server: Server, name: str, a: np.ndarray, bitmask: str, *, axis: str, index: int, level: int,
                box: tuple[int, int, int, int] | None = None, field: str | None = None, time: int = 0,
                component=0, components: int = 1, float64: bool = False, tol: float = 0.0) -> dict:
    """Ask for a slice and compare it with strided NumPy slicing of ``a`` (the written array)."""
    params = {"axis": axis, "index": index, "level": level, "time": time, "component": component}
    if field is not None:
        params["field"] = field
    if box is not None:
        params.update(zip(("u0", "u1", "v0", "v1"), box))
    header, got = get_slice(server, name, **params)
    scalar = pick(a, components, component)
    a3 = scalar[None] if scalar.ndim == 2 else scalar
    s = spacing(bitmask, level)
    ax, rows, cols = AXES[axis]
    plane = index - index % s[ax]
    m = np.moveaxis(a3, (ax, rows, cols), (0, 1, 2))[plane]
    u0, u1, v0, v1 = box if box is not None else (0, m.shape[1], 0, m.shape[0])
    u_first, v_first = -(-u0 // s[cols]) * s[cols], -(-v0 // s[rows]) * s[rows]
    want = m[v_first:v1:s[rows], u_first:u1:s[cols]]
    assert header == {"level": level, "axis": axis, "plane": plane, "index": index, "field": header["field"],
                      "time": time, "component": component if components > 1 else 0,
                      "dtype": "float64" if float64 else "float32", "width": want.shape[1],
                      "height": want.shape[0], "u0": u_first, "v0": v_first, "du": s[cols], "dv": s[rows]}
    if field is not None:
        assert header["field"] == field
    if tol:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        assert np.array_equal(got.astype(np.float64), want.astype(np.float64))  # nothing rounded on the way
    return header


# --------------------------------------------------------------------------------------------- descriptions
def test_descriptions_match_the_written_datasets(data):
    """/api/datasets and /api/datasets/<name> say the shapes, fields, times, bitmask and level spacing."""
    server = data.server
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.url), server.url
    listed = get_json(server, "/api/datasets")
    assert [d["name"] for d in listed] == ["vol", "img", "spike"]
    for name, shape, fields, times in (
            ("vol", list(SHAPE), [("temp", "float32", 1), ("wind", "float32[3]", 3), ("mass", "float64", 1),
                                  ("id", "int64", 1), ("count", "int16", 1)], [0, 3]),
            ("img", [1, *IMG_SHAPE], [("g", "float32", 1), ("uv", "float32[2]", 2)], [0]),
            ("spike", list(SPIKE_SHAPE), [("s", "float32", 1)], [0])):
        info = get_json(server, f"/api/datasets/{name}")
        assert info == next(d for d in listed if d["name"] == name)
        bitmask = bitmask_on_disk(data.paths[name])
        assert info["name"] == name and info["file"] == f"{name}.idx"
        assert info["ndim"] == (2 if name == "img" else 3)
        assert info["shape"] == shape and info["origin"] == [0, 0, 0]
        assert [(f["name"], f["dtype"], f["components"]) for f in info["fields"]] == fields
        assert info["times"] == times
        assert info["bitmask"] == bitmask and info["max_level"] == len(bitmask) - 1
        assert info["level_spacing"] == [spacing(bitmask, lv) for lv in range(len(bitmask))]
        assert info["files_url"] == f"/files/{name}/{name}.idx"
        with hzio.open(data.paths[name]) as ds:  # the spacing agrees with the library's level shapes
            for lv, s in enumerate(info["level_spacing"]):
                want = tuple(-(-n // si) for n, si in zip(shape, s))
                assert (1,) * (3 - ds.grid_ndim) + tuple(ds.level_shape(lv)) == want, lv


# -------------------------------------------------------------------------------------------------- slices
@pytest.mark.parametrize("axis", ["z", "y", "x"])
def test_full_resolution_slices_equal_the_written_array(data, axis):
    """At the finest level (the default) a slice is the written array's plane, whole or in a box."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    top = len(bitmask) - 1
    ax, rows, cols = AXES[axis]
    for time in (0, 3):
        a = data.arrays[("vol", "temp", time)]
        for index in (0, 7, SHAPE[ax] - 1):
            check_slice(data.server, "vol", a, bitmask, axis=axis, index=index, level=top, field="temp", time=time)
        check_slice(data.server, "vol", a, bitmask, axis=axis, index=5, level=top, field="temp", time=time,
                    box=(3, SHAPE[cols] - 2, 1, SHAPE[rows] - 4))
    # No level, no field, no time: the finest level of the first field at the first timestep.
    header, got = get_slice(data.server, "vol", axis=axis, index=4)
    assert (header["level"], header["field"], header["time"]) == (top, "temp", 0)
    np.testing.assert_array_equal(got, np.moveaxis(data.arrays[("vol", "temp", 0)], ax, 0)[4])


@pytest.mark.parametrize("axis", ["z", "y", "x"])
def test_coarse_slices_equal_strided_numpy(data, axis, rng):
    """At every level a slice is the written array strided by the level's spacing, on the level's plane at or
    below the index, over the whole plane and over a random box."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    a = data.arrays[("vol", "temp", 3)]
    ax, rows, cols = AXES[axis]
    for level in range(len(bitmask)):
        index = int(rng.integers(0, SHAPE[ax]))
        check_slice(data.server, "vol", a, bitmask, axis=axis, index=index, level=level, field="temp", time=3)
        u0, v0 = int(rng.integers(0, SHAPE[cols])), int(rng.integers(0, SHAPE[rows]))
        u1, v1 = int(rng.integers(u0 + 1, SHAPE[cols] + 1)), int(rng.integers(v0 + 1, SHAPE[rows] + 1))
        header = check_slice(data.server, "vol", a, bitmask, axis=axis, index=index, level=level, field="temp",
                             time=3, box=(u0, u1, v0, v1))
        assert header["width"] * header["height"] <= (u1 - u0) * (v1 - v0)


def test_vector_components_and_the_magnitude(data):
    """A component of a float32[3] field is a[..., k]; the magnitude is sqrt of the sum of squares."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    a = data.arrays[("vol", "wind", 0)]
    top = len(bitmask) - 1
    for axis, index, level in (("z", 6, top), ("y", 17, top), ("x", 27, top - 3), ("z", 19, top - 5)):
        for k in range(3):
            check_slice(data.server, "vol", a, bitmask, axis=axis, index=index, level=level, field="wind",
                        component=k, components=3)
        check_slice(data.server, "vol", a, bitmask, axis=axis, index=index, level=level, field="wind",
                    component="magnitude", components=3, tol=1e-6)


def test_64_bit_fields_come_as_float64_and_others_as_float32(data):
    """float64 and int64 fields come as exact float64 samples (int64 values above 2^40 included); int16 as
    float32."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    top = len(bitmask) - 1
    for field, float64 in (("mass", True), ("id", True), ("count", False)):
        a = data.arrays[("vol", field, 0)]
        for axis, level in (("z", top), ("y", top - 2), ("x", top - 4)):
            check_slice(data.server, "vol", a, bitmask, axis=axis, index=9, level=level, field=field,
                        float64=float64)


def test_2d_datasets_have_z_slices_at_every_level(data):
    """A 2-D dataset's slice (axis z, plane 0) is the written image, strided at coarse levels; a vector
    field's components and magnitude too."""
    bitmask = bitmask_on_disk(data.paths["img"])
    g, uv = data.arrays[("img", "g", 0)], data.arrays[("img", "uv", 0)]
    for level in range(len(bitmask)):
        check_slice(data.server, "img", g, bitmask, axis="z", index=0, level=level, field="g")
        check_slice(data.server, "img", g, bitmask, axis="z", index=0, level=level, field="g", box=(5, 50, 3, 31))
        check_slice(data.server, "img", uv, bitmask, axis="z", index=0, level=level, field="uv", component=1,
                    components=2)
        check_slice(data.server, "img", uv, bitmask, axis="z", index=0, level=level, field="uv",
                    component="magnitude", components=2, tol=1e-6)


def test_slices_above_the_size_limit_are_refused_with_413(data, monkeypatch):
    """MAX_SLICE_SAMPLES (read at each request) bounds a slice: exactly at the limit is served, one more is
    413; a coarser level of the same plane is still served."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    top = len(bitmask) - 1
    plane = SHAPE[1] * SHAPE[2]
    monkeypatch.setattr(serve_module, "MAX_SLICE_SAMPLES", plane)
    check_slice(data.server, "vol", data.arrays[("vol", "temp", 0)], bitmask, axis="z", index=2, level=top)
    monkeypatch.setattr(serve_module, "MAX_SLICE_SAMPLES", plane - 1)
    reply = get_json(data.server, "/api/datasets/vol/slice?axis=z&index=2", status=413)
    assert isinstance(reply["error"], str) and reply["error"]
    check_slice(data.server, "vol", data.arrays[("vol", "temp", 0)], bitmask, axis="z", index=2, level=top - 2)
    check_slice(data.server, "vol", data.arrays[("vol", "temp", 0)], bitmask, axis="z", index=2, level=top,
                box=(0, SHAPE[2], 0, SHAPE[1] - 1))


@pytest.mark.parametrize(("path", "status"), [
    ("/api/datasets/vol/slice?axis=w", 400),
    ("/api/datasets/vol/slice?axis=", 400),
    ("/api/datasets/vol/slice?level=-1", 400),
    ("/api/datasets/vol/slice?level=FINEST+1", 400),
    ("/api/datasets/vol/slice?level=two", 400),
    ("/api/datasets/vol/slice?index=1.5", 400),
    ("/api/datasets/vol/slice?u0=x", 400),
    ("/api/datasets/vol/slice?time=first", 400),
    ("/api/datasets/vol/slice?field=wind&component=3", 400),
    ("/api/datasets/vol/slice?field=wind&component=-1", 400),
    ("/api/datasets/vol/slice?field=wind&component=norm", 400),
    ("/api/datasets/vol/stats?field=wind&component=3", 400),
    ("/api/datasets/img/slice?axis=y", 400),
    ("/api/datasets/img/slice?axis=x", 400),
    ("/api/datasets/nope", 404),
    ("/api/datasets/nope/slice", 404),
    ("/api/datasets/nope/stats", 404),
    ("/api/datasets/vol/slice?field=nope", 404),
    ("/api/datasets/vol/slice?time=1", 404),
    ("/api/datasets/vol/stats?field=nope", 404),
    ("/api/datasets/vol/stats?time=7", 404),
])
def test_bad_requests_are_json_errors_with_their_status(data, path, status):
    """A bad parameter, axis, level or component is 400; an unknown dataset, field or timestep 404; the body
    is {"error": message}."""
    path = path.replace("FINEST+1", str(len(bitmask_on_disk(data.paths["vol"]))))  # max_level + 1
    reply = get_json(data.server, path, status=status)
    assert list(reply) == ["error"] and isinstance(reply["error"], str) and reply["error"]


# --------------------------------------------------------------------------------------------- statistics
@pytest.mark.parametrize(("field", "time"), [("temp", 0), ("temp", 3), ("mass", 0), ("id", 0), ("count", 0)])
def test_stats_of_scalar_fields_match_numpy(data, field, time):
    """min and max are the written array's; the robust limits lie within them; the histogram counts every
    sample once; every block has statistics (known = 1)."""
    a = data.arrays[("vol", field, time)]
    stats = get_json(data.server, f"/api/datasets/vol/stats?field={field}&time={time}")
    assert (stats["field"], stats["time"]) == (field, time)
    assert stats["min"] == float(a.min()) and stats["max"] == float(a.max())
    assert stats["known"] == 1.0 and stats["blocks"] >= 1
    lo, hi = stats["robust"]
    assert stats["min"] <= lo <= hi <= stats["max"]
    edges, counts = stats["histogram"]["edges"], stats["histogram"]["counts"]
    assert len(edges) == len(counts) + 1 and edges == sorted(edges)
    assert edges[0] <= stats["min"] and edges[-1] >= stats["max"]
    assert min(counts) >= 0 and sum(counts) == pytest.approx(a.size, rel=1e-9)
    assert np.mean((a >= lo) & (a <= hi)) >= 0.9  # the default colour range holds the bulk of the samples


def test_stats_of_vector_components_and_magnitude(data):
    """A component's min/max are exactly a[..., k]'s; the magnitude's range contains the true magnitudes."""
    a = data.arrays[("vol", "wind", 0)]
    for k in range(3):
        stats = get_json(data.server, f"/api/datasets/vol/stats?field=wind&component={k}")
        assert stats["min"] == float(a[..., k].min()) and stats["max"] == float(a[..., k].max())
        assert sum(stats["histogram"]["counts"]) == pytest.approx(math.prod(SHAPE), rel=1e-9)
    mag = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=-1))
    stats = get_json(data.server, "/api/datasets/vol/stats?field=wind&component=magnitude")
    assert 0 <= stats["min"] <= mag.min() and stats["max"] >= mag.max()
    assert stats["max"] <= math.sqrt(3) * float(np.abs(a).max()) * (1 + 1e-6)
    assert stats["min"] <= stats["robust"][0] <= stats["robust"][1] <= stats["max"]


def test_the_robust_range_ignores_a_single_outlier(data):
    """One sample of 1e6 among 64^3 normal samples (in a dataset of many blocks): max is the outlier, min the
    true min, and the robust upper limit stays far below the outlier."""
    a = data.arrays[("spike", "s", 0)]
    with hzio.open(data.paths["spike"]) as ds:
        assert ds.block_count >= 64
    stats = get_json(data.server, "/api/datasets/spike/stats")
    assert stats["max"] == OUTLIER and stats["min"] == float(a.min())
    lo, hi = stats["robust"]
    assert stats["min"] <= lo < hi < OUTLIER / 20, stats["robust"]
    assert sum(stats["histogram"]["counts"]) == pytest.approx(a.size, rel=1e-9)


def test_the_robust_range_holds_the_bulk_of_the_samples_despite_an_outlier(data):
    """The same dataset: the robust range (the 0.5% and 99.5% quantiles of the block statistics, the viewer's
    default colour range) holds most samples. Every block but the outlier's has max < 6, so the statistics
    themselves show that over 99% of the samples lie below 6: the lower limit cannot be above that."""
    a = data.arrays[("spike", "s", 0)]
    bulk = float(np.sort(a, axis=None)[-2])  # the largest sample but the outlier
    lo, hi = get_json(data.server, "/api/datasets/spike/stats")["robust"]
    assert lo <= bulk, f"robust {[lo, hi]}: the lower limit is above every sample but the outlier ({bulk:.3f})"
    assert np.mean((a >= lo) & (a <= hi)) >= 0.5, [lo, hi]


# -------------------------------------------------------------------------------------------------- files
def dataset_files(data: Data, name: str) -> list[Path]:
    """The .idx, data files and sidecars of a dataset as found on disk (not the stray files)."""
    folder = data.paths[name].with_suffix("")
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.name != "stray.bin"]
    assert any(p.suffix == ".bin" for p in files) and any(p.suffix == ".hzstats" for p in files)
    return [data.paths[name], *sorted(files)]


@pytest.mark.parametrize("name", ["vol", "img", "spike"])
def test_the_dataset_files_are_served_with_byte_ranges(data, name):
    """The .idx, every data file and sidecar come back byte for byte; a Range gives 206 and exactly those
    bytes (a suffix range too)."""
    for p in dataset_files(data, name):
        rel = p.relative_to(data.paths[name].parent).as_posix()
        disk = p.read_bytes()
        code, _, body = request(data.server, f"/files/{name}/{rel}")
        assert (code, body) == (200, disk), rel
        lo, hi = len(disk) // 3, len(disk) // 3 + 99
        code, headers, body = request(data.server, f"/files/{name}/{rel}", {"Range": f"bytes={lo}-{hi}"})
        assert (code, body) == (206, disk[lo:hi + 1]), rel
        assert headers["content-range"] == f"bytes {lo}-{hi}/{len(disk)}"
        code, _, body = request(data.server, f"/files/{name}/{rel}", {"Range": "bytes=-17"})
        assert (code, body) == (206, disk[-17:]), rel


@pytest.mark.parametrize("path", [
    "/files/vol/../secret.txt",
    "/files/vol/../../secret.txt",
    "/files/vol/vol/../../secret.txt",
    "/files/vol/vol/../vol.idx/../../secret.txt",
    "/files/vol/%2e%2e/secret.txt",
    "/files/vol/%2E%2E/secret.txt",
    "/files/vol/%2e%2e%2fsecret.txt",
    "/files/vol/..%2fsecret.txt",
    "/files/vol/vol%2F..%2F..%2Fsecret.txt",
    "/files/vol/vol/%2e%2e/%2e%2e/secret.txt",
    "ABSOLUTE",
    "ABSOLUTE-ENCODED",
    "/files/vol/notes.txt",
    "/files/vol/vol/escape",
    "/files/vol/vol/stray.bin",
    "/files/vol/img.idx",
    "/files/vol/img/0000.bin",
    "/files/vol/vol.idx%00",
    "/files/vol/vol.idx%00.txt",
    "/files/vol/vol%5C0000.bin",
    "/files/vol/vol\\0000.bin",
    "/files/vol/..%5Csecret.txt",
    "/files/nope/vol.idx",
    "/files/vol/",
])
def test_nothing_else_is_served(data, path):
    """Traversal (raw, percent-encoded, absolute), a symlink out of the folder, a stray file, another dataset's
    files, a NUL byte, backslashes and unknown datasets are 404, and the body holds nothing of those files."""
    if path.startswith("ABSOLUTE"):
        secret = data.secret.as_posix()
        path = "/files/vol/" + (secret if path == "ABSOLUTE" else "%2F" + secret[1:])
    code, _, body = request(data.server, path)
    assert code == 404, (path, code, body[:200])
    for marker in (b"TOP-SECRET", b"STRAY-", data.paths["img"].read_bytes()[:40]):
        assert marker not in body, path


def test_remote_reads_through_the_served_files_equal_numpy(data):
    """hzio.open(server/files/<name>/<name>.idx) reads every field (a box and a coarse level too) as written."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    with hzio.open(data.server.url + "files/vol/vol.idx") as ds:
        assert ds.grid_shape == SHAPE and ds.times == [0, 3]
        for (name, f, t), a in data.arrays.items():
            if name == "vol":
                np.testing.assert_array_equal(ds.read(field=f, time=t), a)
        a = data.arrays[("vol", "temp", 3)]
        box = ((2, 5, 1), (19, 30, 27))
        np.testing.assert_array_equal(ds.read(box, field="temp", time=3), a[2:19, 5:30, 1:27])
        level = len(bitmask) - 4
        sz, sy, sx = spacing(bitmask, level)
        np.testing.assert_array_equal(ds.read(field="temp", time=3, level=level), a[::sz, ::sy, ::sx])
        wind = data.arrays[("vol", "wind", 0)]
        np.testing.assert_array_equal(ds.read(field="wind", level=level), wind[::sz, ::sy, ::sx])
    with hzio.open(data.server.url + "files/img/img.idx") as ds:
        np.testing.assert_array_equal(ds.read(field="uv"), data.arrays[("img", "uv", 0)])


# ------------------------------------------------------------------------------------------------ concurrency
def test_many_requests_at_once_all_answer_correctly(data, rng):
    """16 threads of slices (two datasets), statistics and file ranges at once: every answer is right."""
    bitmask = {name: bitmask_on_disk(data.paths[name]) for name in ("vol", "spike")}
    data_file = next(p for p in dataset_files(data, "spike") if p.suffix == ".bin")
    disk = data_file.read_bytes()
    rel = data_file.relative_to(data.paths["spike"].parent).as_posix()
    tasks = []
    for i in range(48):
        kind = i % 4
        axis = "zyx"[int(rng.integers(0, 3))]
        if kind in (0, 1):
            name, field, time = ("vol", "temp", 3) if kind == 0 else ("spike", "s", 0)
            shape = SHAPE if name == "vol" else SPIKE_SHAPE
            level = len(bitmask[name]) - 1 - int(rng.integers(0, 4))
            index = int(rng.integers(0, shape[AXES[axis][0]]))
            tasks.append(("slice", name, field, time, axis, index, level))
        elif kind == 2:
            tasks.append(("stats", "vol", "temp", 3 * int(rng.integers(0, 2))))
        else:
            lo = int(rng.integers(0, len(disk) - 4096))
            tasks.append(("range", lo, lo + int(rng.integers(0, 4096))))

    def run(task):
        if task[0] == "slice":
            _, name, field, time, axis, index, level = task
            check_slice(data.server, name, data.arrays[(name, field, time)], bitmask[name], axis=axis, index=index,
                        level=level, field=field, time=time)
        elif task[0] == "stats":
            a = data.arrays[("vol", "temp", task[3])]
            stats = get_json(data.server, f"/api/datasets/vol/stats?field=temp&time={task[3]}")
            assert (stats["min"], stats["max"]) == (float(a.min()), float(a.max()))
        else:
            _, lo, hi = task
            code, _, body = request(data.server, f"/files/spike/{rel}", {"Range": f"bytes={lo}-{hi}"})
            assert (code, body) == (206, disk[lo:hi + 1])
        return True

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(run, tasks))


def test_a_slow_dataset_does_not_hold_requests_to_another(data, monkeypatch):
    """While the reads of dataset 'spike' are stuck (a slow disk, simulated by holding hzio.Dataset.read for
    that dataset) and 16 slice requests of it are in flight, a small slice of dataset 'img' is still answered,
    correctly; then the 'spike' slices complete, correctly."""
    release = threading.Event()
    stuck = threading.Semaphore(0)
    read = hzio.Dataset.read
    spike_path = os.path.realpath(data.paths["spike"])

    def slow_read(self, *args, **kwargs):
        if os.path.realpath(self.path) == spike_path:
            stuck.release()
            release.wait(TIMEOUT)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(hzio.Dataset, "read", slow_read)
    spike = data.arrays[("spike", "s", 0)]
    with Server([str(data.paths["spike"]), str(data.paths["img"])], port=0) as server:
        url = urlsplit(server.url)
        sent = threading.Semaphore(0)

        def slow_request(i):
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=2 * TIMEOUT)
            try:
                conn.request("GET", f"/api/datasets/spike/slice?axis=y&index={i}")
                sent.release()
                r = conn.getresponse()
                return r.status, r.read()
            finally:
                conn.close()

        with ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(slow_request, i) for i in range(16)]
            try:
                for _ in range(16):
                    assert sent.acquire(timeout=TIMEOUT)
                for _ in range(serve_module.HANDLES_PER_DATASET):
                    assert stuck.acquire(timeout=TIMEOUT)  # every handle of 'spike' is in a stuck read
                try:
                    header, got = get_slice(server, "img", timeout=10, field="g", level=4)
                except TimeoutError:
                    pytest.fail("GET /api/datasets/img/slice?field=g&level=4 got no answer (10 s) while 16 slice "
                                "requests of 'spike' waited on a slow read")
            finally:
                release.set()
            answers = [f.result() for f in futures]
    s = spacing(bitmask_on_disk(data.paths["img"]), 4)
    np.testing.assert_array_equal(got, data.arrays[("img", "g", 0)][::s[1], ::s[2]])
    assert header["level"] == 4
    for i, (code, body) in enumerate(answers):
        assert code == 200, body[:200]
        (n,) = struct.unpack("<I", body[:4])
        np.testing.assert_array_equal(np.frombuffer(body[4 + n:], "<f4").reshape(64, 64), spike[:, i, :])


# ------------------------------------------------------------------------------------------- live datasets
def test_a_new_timestep_appears_while_serving(tmp_path):
    """A timestep appended (r+, write, close) after the server started is listed, sliced, its statistics
    given, its new files served and read remotely, all equal to what was written."""
    rng = np.random.default_rng(77)
    shape = (12, 16, 20)
    first = rng.standard_normal(shape).astype(np.float32)
    second = (rng.standard_normal(shape) * 3 - 50).astype(np.float32)
    path = tmp_path / "live.idx"
    with hzio.create(path, shape=shape, fields={"f": "float32"}, times=[0], bits_per_block=9) as ds:
        ds.write(first, time=0)
    bitmask = bitmask_on_disk(path)
    top = len(bitmask) - 1
    with Server([str(path)], port=0) as server:
        assert get_json(server, "/api/datasets/live")["times"] == [0]
        get_json(server, "/api/datasets/live/slice?time=1", status=404)
        old = set(tmp_path.rglob("*"))
        with hzio.open(path, mode="r+") as ds:
            ds.write(second, time=1)
        new_files = sorted(p for p in set(tmp_path.rglob("*")) - old if p.is_file())
        assert any(p.suffix == ".bin" for p in new_files)
        assert get_json(server, "/api/datasets/live")["times"] == [0, 1]
        for axis, index, level in (("z", 5, top), ("x", 19, top), ("y", 9, top - 3)):
            check_slice(server, "live", second, bitmask, axis=axis, index=index, level=level, time=1)
            check_slice(server, "live", first, bitmask, axis=axis, index=index, level=level, time=0)
        stats = get_json(server, "/api/datasets/live/stats?time=1")
        assert (stats["min"], stats["max"]) == (float(second.min()), float(second.max()))
        for p in new_files:
            code, _, body = request(server, f"/files/live/{p.relative_to(tmp_path).as_posix()}")
            assert (code, body) == (200, p.read_bytes()), p
        with hzio.open(server.url + "files/live/live.idx") as remote:
            assert remote.times == [0, 1]
            np.testing.assert_array_equal(remote.read(time=1), second)
            np.testing.assert_array_equal(remote.read(time=0), first)


# ------------------------------------------------------------------------------------------------ names
def small_dataset(path: Path, shape: tuple[int, int]) -> bytes:
    """A tiny 2-D dataset at ``path``; returns the bytes of its .idx."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with hzio.create(path, shape=shape, fields={"v": "uint8"}) as ds:
        ds.write(np.arange(math.prod(shape), dtype=np.uint8).reshape(shape))
    return path.read_bytes()


def test_datasets_with_the_same_stem_get_numbered_names(tmp_path):
    """Three x.idx in three folders are served as x, x-2 and x-3, in order, each with its own files."""
    idx = {key: small_dataset(tmp_path / folder / "x.idx", (4 + i, 8))
           for i, (key, folder) in enumerate((("x", "a"), ("x-2", "b"), ("x-3", "c")))}
    assert serve_module.dataset_keys(["a/x.idx", "b/x.idx", "c/x.idx"]) == [
        ("x", "a/x.idx"), ("x-2", "b/x.idx"), ("x-3", "c/x.idx")]
    with Server([str(tmp_path / f / "x.idx") for f in "abc"], port=0) as server:
        assert [d["name"] for d in get_json(server, "/api/datasets")] == ["x", "x-2", "x-3"]
        for i, key in enumerate(idx):
            info = get_json(server, f"/api/datasets/{key}")
            assert info["shape"] == [1, 4 + i, 8] and info["files_url"] == f"/files/{key}/x.idx"
            code, _, body = request(server, f"/files/{key}/x.idx")
            assert (code, body) == (200, idx[key])


def test_a_stem_that_looks_numbered_does_not_hide_another_dataset(tmp_path):
    """a/x.idx, b/x.idx and c/x-2.idx: all three are served under distinct names, each with its own .idx."""
    paths = [tmp_path / "a" / "x.idx", tmp_path / "b" / "x.idx", tmp_path / "c" / "x-2.idx"]
    idx = [small_dataset(p, (4 + i, 8)) for i, p in enumerate(paths)]
    with Server([str(p) for p in paths], port=0) as server:
        listed = get_json(server, "/api/datasets")
        served = {request(server, d["files_url"])[2] for d in listed}
    assert len(listed) == 3, f"3 datasets given, {len(listed)} served: {[d['name'] for d in listed]}"
    assert served == set(idx)
    keys = [k for k, _ in serve_module.dataset_keys([str(p) for p in paths])]
    assert len(set(keys)) == 3, keys


# --------------------------------------------------------------------------------------------------- CLI
def hzio_command() -> list[str]:
    exe = Path(sys.executable).with_name("hzio")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "hzio"]


def test_the_command_serves_and_exits_by_itself(data):
    """`hzio serve X.idx --port 0 --exit-after 3` prints its 127.0.0.1 URL, serves the dataset, exits 0."""
    proc = subprocess.Popen([*hzio_command(), "serve", str(data.paths["img"]), "--port", "0", "--exit-after", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        try:
            conn.request("GET", "/files/img/img.idx")
            r = conn.getresponse()
            assert (r.status, r.read()) == (200, data.paths["img"].read_bytes())
        finally:
            conn.close()
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err


@pytest.mark.parametrize("case", ["missing dataset", "port out of range"])
def test_the_command_refuses_a_missing_dataset_and_a_bad_port(data, tmp_path, case):
    """A missing .idx, or --port 70000: `hzio: error:` on stderr and exit status 2."""
    if case == "missing dataset":
        args, named = [str(tmp_path / "missing.idx"), "--port", "0"], "missing.idx"
    else:
        args, named = [str(data.paths["img"]), "--port", "70000"], "70000"
    run = subprocess.run([*hzio_command(), "serve", *args, "--exit-after", "3"], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "hzio: error:" in run.stderr and named in run.stderr, run.stderr
    assert "http://" not in run.stdout


# ---------------------------------------------------------------------------------------------- read-only
def test_serving_changes_no_file(data):
    """After every request above (and a few more), the files under the served folder are byte-identical and no
    file was added or removed."""
    for name in ("vol", "img", "spike"):
        get_json(data.server, f"/api/datasets/{name}/stats")
        get_slice(data.server, name, level=3)
        with hzio.open(data.server.url + f"files/{name}/{name}.idx") as ds:
            ds.read(level=5)
    assert digests(data.root) == data.digests


# ----------------------------------------------------------------------------------- regressions of the review
def declared_two_timesteps(folder: Path, name: str, shape: tuple[int, ...]) -> dict[int, np.ndarray]:
    """``folder/name.idx`` with timesteps 0 and 1 declared and written; returns the arrays written."""
    rng = np.random.default_rng(4242)
    arrays = {t: (rng.standard_normal(shape) + 10 * t).astype(np.float32) for t in (0, 1)}
    folder.mkdir(parents=True, exist_ok=True)
    with hzio.create(folder / f"{name}.idx", shape=shape, fields={"f": "float32"}, times=[0, 1],
                     bits_per_block=8) as ds:
        for t, a in arrays.items():
            ds.write(a, time=t)
    return arrays


def test_files_of_a_declared_timestep_written_later_are_served_once_they_exist(tmp_path):
    """B.idx declares timesteps 0 and 1 but only time 0's folder exists when the server starts: time 1's
    files are 404 while absent, and once the folder is copied in (the .idx untouched) they are served byte for
    byte, and slices and remote reads of time 1 equal what was written."""
    shape = (10, 12, 14)
    src, dst = tmp_path / "src", tmp_path / "dst"
    arrays = declared_two_timesteps(src, "B", shape)
    time_dirs = sorted(p for p in (src / "B").iterdir() if p.is_dir())
    assert [p.name for p in time_dirs] == ["time_0000", "time_0001"], time_dirs  # the layout copied below
    later = sorted(p.relative_to(src).as_posix() for p in time_dirs[1].rglob("*") if p.is_file())
    assert any(rel.endswith(".bin") for rel in later), later
    dst.mkdir()
    shutil.copy2(src / "B.idx", dst / "B.idx")
    shutil.copytree(time_dirs[0], dst / "B" / time_dirs[0].name)
    idx_before = (dst / "B.idx").read_bytes(), _idx_stat(dst / "B.idx")
    bitmask = bitmask_on_disk(dst / "B.idx")
    top = len(bitmask) - 1
    with Server([str(dst / "B.idx")], port=0) as server:
        assert get_json(server, "/api/datasets/B")["times"] == [0, 1]
        for rel in later:
            code, _, body = request(server, f"/files/B/{rel}")
            assert code == 404, (rel, code, body[:200])
        for p in (dst / "B").rglob("*"):  # time 0's files are served meanwhile
            if p.is_file():
                code, _, body = request(server, f"/files/B/{p.relative_to(dst).as_posix()}")
                assert (code, body) == (200, p.read_bytes()), p
        check_slice(server, "B", arrays[0], bitmask, axis="z", index=4, level=top, time=0)
        shutil.copytree(time_dirs[1], dst / "B" / time_dirs[1].name)
        assert ((dst / "B.idx").read_bytes(), _idx_stat(dst / "B.idx")) == idx_before  # no .idx change
        for rel in later:
            code, _, body = request(server, f"/files/B/{rel}")
            assert (code, body) == (200, (dst / rel).read_bytes()), (rel, code, body[:200])
        with hzio.open(server.url + "files/B/B.idx") as remote:
            np.testing.assert_array_equal(remote.read(time=1), arrays[1])
            np.testing.assert_array_equal(remote.read(time=0), arrays[0])
        for axis, index, level in (("z", 4, top), ("x", 13, top), ("y", 7, top - 3)):
            check_slice(server, "B", arrays[1], bitmask, axis=axis, index=index, level=level, time=1)


def _idx_stat(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


@pytest.mark.parametrize("stray", [
    "B/time_0000/ffff.bin",  # named like the data file of a block far beyond the dataset
    "B/time_0000/ffff.bin.hzstats",
    "B/time_0000/0001.bin",  # a number that is no file's first block
    "B/time_0001/0000.bin.bak",
    "B/time_0007/0000.bin",  # a timestep the .idx does not declare
    "B/0000.bin",  # a data file name outside any time folder
])
def test_a_regular_file_in_the_data_folder_that_is_no_data_file_stays_404(tmp_path, stray):
    """A regular file placed among the dataset's data files, named like one, but not one of the data files
    or sidecars the .idx names, is 404 and its bytes never come back; the real data files are 200."""
    declared_two_timesteps(tmp_path, "B", (10, 12, 14))
    real = sorted(p for p in (tmp_path / "B").rglob("*") if p.is_file())
    assert {p.relative_to(tmp_path).as_posix() for p in real} >= {"B/time_0000/0000.bin", "B/time_0001/0000.bin"}
    (tmp_path / stray).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / stray).write_bytes(b"STRAY-DATA-NOT-SERVED")
    with Server([str(tmp_path / "B.idx")], port=0) as server:
        code, _, body = request(server, f"/files/B/{stray}")
        assert code == 404 and b"STRAY-" not in body, (stray, code, body[:200])
        for p in real:
            code, _, body = request(server, f"/files/B/{p.relative_to(tmp_path).as_posix()}")
            assert (code, body) == (200, p.read_bytes()), p


def test_no_request_fails_while_the_idx_keeps_changing(tmp_path):
    """A thread bumps the .idx's mtime every ~2 ms (each bump is a new version of the dataset for the server)
    while 8 threads send 400 slice, statistics and file requests: every answer is 200 and right."""
    shape = (12, 20, 24)
    arrays = declared_two_timesteps(tmp_path, "churn", shape)
    path = tmp_path / "churn.idx"
    bitmask = bitmask_on_disk(path)
    top = len(bitmask) - 1
    data_file = tmp_path / "churn" / "time_0001" / "0000.bin"
    disk = data_file.read_bytes()
    rel = data_file.relative_to(tmp_path).as_posix()
    stop = threading.Event()
    bumps = [0]

    def bump():
        ns = os.stat(path).st_mtime_ns
        while not stop.is_set():
            ns += 1_000_000
            os.utime(path, ns=(ns, ns))
            bumps[0] += 1
            stop.wait(0.002)

    def run(i):
        time = i % 2
        a = arrays[time]
        kind = i % 5
        if kind in (0, 1, 2):
            axis = "zyx"[i % 3]
            index = (7 * i) % shape[AXES[axis][0]]
            check_slice(server, "churn", a, bitmask, axis=axis, index=index, level=top - (i % 4), time=time)
        elif kind == 3:
            stats = get_json(server, f"/api/datasets/churn/stats?time={time}")
            assert (stats["min"], stats["max"]) == (float(a.min()), float(a.max()))
        else:
            lo = (i * 97) % (len(disk) - 200)
            code, _, body = request(server, f"/files/churn/{rel}", {"Range": f"bytes={lo}-{lo + 199}"})
            assert (code, body) == (206, disk[lo:lo + 200]), (code, body[:200])
            code, _, body = request(server, "/files/churn/churn.idx")
            assert (code, body) == (200, path.read_bytes()), (code, body[:200])
        return True

    with Server([str(path)], port=0) as server:
        bumper = threading.Thread(target=bump, daemon=True)
        bumper.start()
        try:
            with ThreadPoolExecutor(8) as pool:
                results = list(pool.map(run, range(400)))
        finally:
            stop.set()
            bumper.join(TIMEOUT)
    assert all(results) and len(results) == 400
    assert bumps[0] > 1  # the .idx did change during the requests


@pytest.mark.parametrize(("host", "status"), [
    ("attacker.example:PORT", 403),
    ("attacker.example", 403),
    ("localhost.attacker.example:PORT", 403),
    ("127.0.0.1.attacker.example:PORT", 403),  # a rebinding domain may start with "127."
    ("localhost:PORT", 200),
    ("127.0.0.1:PORT", 200),
    ("LOCALHOST:PORT", 200),
])
def test_requests_for_another_host_name_are_refused(data, host, status):
    """DNS rebinding: a page of attacker.example that resolves its name to 127.0.0.1 sends Host:
    attacker.example: 403 with a JSON error, on the API and the files; the loopback names get 200."""
    url = urlsplit(data.server.url)
    host = host.replace("PORT", str(url.port))
    for path in ("/api/datasets", "/api/datasets/vol/stats", "/files/vol/vol.idx", "/"):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", host)
            conn.endheaders()
            r = conn.getresponse()
            code, body = r.status, r.read()
        finally:
            conn.close()
        assert code == status, f"GET {path} with Host: {host}: expected {status}, got {code} {body[:120]!r}"
        if status == 403:
            reply = json.loads(body)
            assert list(reply) == ["error"] and reply["error"], reply
            assert b"vol" not in body and data.paths["vol"].read_bytes()[:40] not in body
        elif path == "/files/vol/vol.idx":
            assert body == data.paths["vol"].read_bytes()


def test_a_box_that_does_not_start_at_0_has_slices_at_every_level(tmp_path):
    """A 16^3 dataset whose .idx box is then narrowed to x 3..12, y 5..14, z 2..8 (inclusive): every level's
    slice along every axis, at every index (and below and above the box, clamped), is the written array at the
    level's plane and grid (multiples of the spacing inside the box), or empty (plane null) when the level holds
    no plane inside the box along that axis. Never an error."""
    rng = np.random.default_rng(808)
    source = rng.standard_normal((16, 16, 16)).astype(np.float32)
    path = tmp_path / "shifted.idx"
    with hzio.create(path, shape=source.shape, fields={"f": "float32"}, bits_per_block=6) as ds:
        ds.write(source)
    text = path.read_text()
    assert "(box)\n0 15 0 15 0 15\n" in text
    path.write_text(text.replace("(box)\n0 15 0 15 0 15\n", "(box)\n3 12 5 14 2 8\n"))
    lo, hi = (2, 5, 3), (9, 15, 13)  # [z, y, x], exclusive
    bitmask = bitmask_on_disk(path)
    with hzio.open(path) as ds:
        assert tuple(ds.origin) == lo and tuple(ds.grid_shape) == (7, 10, 10)
        np.testing.assert_array_equal(ds.read(), source[2:9, 5:15, 3:13])
        levels = ds.max_level + 1
    empty_planes = 0
    with Server([str(path)], port=0) as server:
        info = get_json(server, "/api/datasets/shifted")
        assert info["origin"] == list(lo) and info["shape"] == [7, 10, 10]
        for level in range(levels):
            s = spacing(bitmask, level)
            assert info["level_spacing"][level] == s
            first = [-(-lo[a] // s[a]) * s[a] for a in range(3)]
            with hzio.open(path) as ds:  # the library's level grid agrees with the oracle's
                np.testing.assert_array_equal(ds.read(level=level),
                                              source[first[0]:hi[0]:s[0], first[1]:hi[1]:s[1], first[2]:hi[2]:s[2]])
            for axis, (a, rows, cols) in AXES.items():
                for asked in range(lo[a] - 2, hi[a] + 2):
                    index = min(max(asked, lo[a]), hi[a] - 1)
                    plane = index - index % s[a]
                    if plane < lo[a]:
                        plane += s[a]
                    header, got = get_slice(server, "shifted", axis=axis, index=asked, level=level)
                    where = (level, axis, asked)
                    assert (header["level"], header["axis"], header["index"]) == (level, axis, index), where
                    if plane >= hi[a]:
                        empty_planes += 1
                        assert header["plane"] is None, (where, header)
                        assert header["width"] * header["height"] == 0 and got.size == 0, (where, header)
                        continue
                    m = np.moveaxis(source, (a, rows, cols), (0, 1, 2))[plane]
                    want = m[first[rows]:hi[rows]:s[rows], first[cols]:hi[cols]:s[cols]]
                    assert header["plane"] == plane, (where, header)
                    assert (header["height"], header["width"]) == want.shape, (where, header)
                    if want.size:
                        assert (header["u0"], header["v0"], header["du"], header["dv"]) == (
                            first[cols], first[rows], s[cols], s[rows]), (where, header)
                    np.testing.assert_array_equal(got, want, err_msg=str(where))
    assert empty_planes > 0  # the coarse levels did hold no plane inside the box along some axis


def test_the_read_bound_counts_components_and_sample_size(data, monkeypatch):
    """MAX_SLICE_READ_BYTES bounds samples x components x itemsize: a float32[3] slice of N samples is 413
    one byte below N x 12 (as a component or the magnitude), served at N x 12; a float32 slice of the same N
    samples passes, until the bound is one byte below N x 4; float64 counts 8 bytes a sample."""
    bitmask = bitmask_on_disk(data.paths["vol"])
    top = len(bitmask) - 1
    n = SHAPE[1] * SHAPE[2]  # a full-resolution z slice
    temp, wind, mass = (data.arrays[("vol", f, 0)] for f in ("temp", "wind", "mass"))
    monkeypatch.setattr(serve_module, "MAX_SLICE_READ_BYTES", n * 3 * 4 - 1)
    for component in ("magnitude", "0", "2"):
        reply = get_json(data.server, f"/api/datasets/vol/slice?axis=z&index=3&field=wind&component={component}",
                         status=413)
        assert list(reply) == ["error"] and reply["error"], reply
    check_slice(data.server, "vol", temp, bitmask, axis="z", index=3, level=top, field="temp")
    check_slice(data.server, "vol", mass, bitmask, axis="z", index=3, level=top, field="mass", float64=True)
    check_slice(data.server, "vol", wind, bitmask, axis="z", index=3, level=top - 2, field="wind", component=1,
                components=3)  # a coarser level of the vector field is small enough
    monkeypatch.setattr(serve_module, "MAX_SLICE_READ_BYTES", n * 3 * 4)
    check_slice(data.server, "vol", wind, bitmask, axis="z", index=3, level=top, field="wind", component=2,
                components=3)
    monkeypatch.setattr(serve_module, "MAX_SLICE_READ_BYTES", n * 4)
    check_slice(data.server, "vol", temp, bitmask, axis="z", index=3, level=top, field="temp")
    get_json(data.server, "/api/datasets/vol/slice?axis=z&index=3&field=mass", status=413)
    monkeypatch.setattr(serve_module, "MAX_SLICE_READ_BYTES", n * 4 - 1)
    get_json(data.server, "/api/datasets/vol/slice?axis=z&index=3&field=temp", status=413)


def _refuse_constant(name: str):
    raise ValueError(f"the JSON holds {name}, which is not JSON")


def test_statistics_of_extreme_values_are_valid_json(tmp_path):
    """A float64 field holding -1e308 and 1e308 (in two blocks, or in one block) and a float64[2] field whose
    magnitude overflows: /stats never holds NaN or Infinity, min and max are the written ones, the histogram
    is null or finite (and then counts every sample), the robust range null or finite within [min, max]."""
    shape = (8, 16, 16)
    rng = np.random.default_rng(99)
    apart = rng.standard_normal(shape)
    apart[0, 0, 0], apart[-1, -1, -1] = -1e308, 1e308
    together = rng.standard_normal(shape)
    together[0, 0, 0], together[0, 0, 1] = -1e308, 1e308
    vec = rng.standard_normal(shape + (2,))
    vec[3, 4, 5] = (1e308, -1e308)
    path = tmp_path / "extreme.idx"
    with hzio.create(path, shape=shape, fields={"apart": "float64", "together": "float64", "vec": "float64[2]"},
                     bits_per_block=6) as ds:
        ds.write(apart, field="apart")
        ds.write(together, field="together")
        ds.write(vec, field="vec")
        assert ds.block_count > 4
    bitmask = bitmask_on_disk(path)
    with Server([str(path)], port=0) as server:
        for field, component, a in (("apart", "0", apart), ("together", "0", together), ("vec", "0", vec[..., 0]),
                                    ("vec", "1", vec[..., 1]), ("vec", "magnitude", None)):
            code, _, body = request(server, f"/api/datasets/extreme/stats?field={field}&component={component}")
            assert code == 200, (field, component, code, body[:300])
            stats = json.loads(body, parse_constant=_refuse_constant)
            if a is not None:
                assert (stats["min"], stats["max"]) == (float(a.min()), float(a.max())), (field, component)
            else:
                assert stats["min"] is None or 0 <= stats["min"] <= stats["max"]
            if stats["robust"] is not None:
                r0, r1 = stats["robust"]
                assert math.isfinite(r0) and math.isfinite(r1) and stats["min"] <= r0 <= r1 <= stats["max"]
            if stats["histogram"] is not None:
                edges, counts = stats["histogram"]["edges"], stats["histogram"]["counts"]
                assert all(map(math.isfinite, edges + counts)), (field, component)
                assert len(edges) == len(counts) + 1 and edges == sorted(edges)
                if a is not None:
                    assert sum(counts) == pytest.approx(a.size, rel=1e-9), (field, component)
        check_slice(server, "extreme", apart, bitmask, axis="z", index=0, level=len(bitmask) - 1, field="apart",
                    float64=True)
        check_slice(server, "extreme", together, bitmask, axis="y", index=0, level=len(bitmask) - 1,
                    field="together", float64=True)


def test_a_vector_slice_without_component_is_the_magnitude(data):
    """No `component`: a vector field's slice is its magnitude (sqrt of the sum of squares), header component
    "magnitude"; a scalar field's is the field, and any component but 0 on a scalar field is 400."""
    bitmask = {name: bitmask_on_disk(data.paths[name]) for name in ("vol", "img")}
    for name, field, axis, index, level in (("vol", "wind", "z", 6, 0), ("vol", "wind", "x", 11, -3),
                                            ("vol", "wind", "y", 30, -1), ("img", "uv", "z", 0, 0)):
        a = data.arrays[(name, field, 0)]
        level = len(bitmask[name]) - 1 + level
        header, got = get_slice(data.server, name, field=field, axis=axis, index=index, level=level)
        assert header["component"] == "magnitude" and header["dtype"] == "float32", header
        s = spacing(bitmask[name], level)
        ax, rows, cols = AXES[axis]
        mag = np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=-1))
        mag3 = mag[None] if mag.ndim == 2 else mag
        want = np.moveaxis(mag3, (ax, rows, cols), (0, 1, 2))[index - index % s[ax]][::s[rows], ::s[cols]]
        assert got.shape == want.shape, (header, want.shape)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    header, got = get_slice(data.server, "vol", field="temp", axis="z", index=2)
    assert header["component"] == 0
    np.testing.assert_array_equal(got, data.arrays[("vol", "temp", 0)][2])
    for component in ("3", "1", "magnitude"):
        for name, field in (("vol", "temp"), ("img", "g")):
            reply = get_json(data.server, f"/api/datasets/{name}/slice?field={field}&component={component}",
                             status=400)
            assert list(reply) == ["error"] and reply["error"], reply


def test_a_dataset_whose_description_fails_is_listed_with_an_error(tmp_path):
    """Three datasets served; one's .idx is deleted after the server started: /api/datasets is 200, lists it
    as {name, error} in its place and the two others as before; they still answer slices."""
    shapes = {"one": (4, 8), "two": (5, 8), "three": (6, 8)}
    for name, shape in shapes.items():
        small_dataset(tmp_path / f"{name}.idx", shape)
    with Server([str(tmp_path / f"{name}.idx") for name in shapes], port=0) as server:
        before = get_json(server, "/api/datasets")
        assert [d["name"] for d in before] == list(shapes) and not any("error" in d for d in before)
        (tmp_path / "two.idx").unlink()
        code, _, body = request(server, "/api/datasets")
        assert code == 200, (code, body[:300])
        after = json.loads(body)
        assert [d["name"] for d in after] == list(shapes)
        assert set(after[1]) == {"name", "error"} and isinstance(after[1]["error"], str) and after[1]["error"]
        assert after[0] == before[0] and after[2] == before[2]
        for name in ("one", "three"):
            shape = shapes[name]
            _, got = get_slice(server, name)
            np.testing.assert_array_equal(got, np.arange(math.prod(shape), dtype=np.uint8).reshape(shape))


def _open_files_below(folder: Path) -> list[str]:
    """The files below `folder` this process holds open, as the kernel lists them (/proc/self/fd)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(str(folder) + os.sep):
            found.append(target)
    return found


def test_a_stopped_server_keeps_no_file_of_its_datasets_open(tmp_path, rng):
    """The handles a server kept open for its requests are closed when it stops: the kernel then lists no
    descriptor of this process on the dataset's files (a notebook that starts and stops servers would
    otherwise hold them, and their caches, until the garbage collector came by)."""
    folder = tmp_path.resolve() / "served"
    folder.mkdir()
    a = rng.standard_normal((16, 12, 10)).astype(np.float32)
    with hzio.create(folder / "vol.idx", shape=a.shape, fields={"f": "float32"}, bits_per_block=8) as ds:
        ds.write(a)
    with Server([str(folder / "vol.idx")], port=0) as server:
        _, got = get_slice(server, "vol", axis="z", index=3)
        np.testing.assert_array_equal(got, a[3])
        assert _open_files_below(folder), "a served dataset holds its files open between requests"
    assert _open_files_below(folder) == []
