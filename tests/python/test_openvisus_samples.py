"""hzio reads the 11 OpenVisus-written sample datasets exactly.

The expected full-resolution values come from the formulas in
``shared/interop/openvisus-samples/README.md``, recomputed with numpy
(:func:`hz_expect.sample_value`).  Coarse levels are checked twice: against
the numpy subsampling of the formula on the level grid (idx-format.md 4.5)
and, when OpenVisus is installed, against OpenVisus' own read of the same
file, box and ``max_resolution``.
"""

from __future__ import annotations

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import numpy as np
import ov_helpers as oh
import pytest

V2D = "V0101010"
V3D = "V012012012012012"
# name: (shape, {field: dtype}, times, bitmask, bits_per_block, blocks_per_file)
SAMPLES = {
    "u8_2d_rowmajor_raw": ((8, 16), {"data": "uint8"}, [0], V2D, 4, 8),
    "u8_2d_hzorder_raw_multifile": ((8, 16), {"data": "uint8"}, [0], V2D, 4, 2),
    "u8_2d_hzorder_zip": ((8, 16), {"data": "uint8"}, [0], V2D, 4, 8),
    "u8_2d_createidx_data": ((8, 16), {"DATA": "uint8"}, [0], V2D, 7, 1),
    "u8x3_2d_hzorder_zip": ((8, 16), {"rgb": "uint8[3]"}, [0], V2D, 4, 8),
    "u8_2d_time": ((8, 16), {"data": "uint8"}, [0, 1], V2D, 4, 8),
    "u8_2d_partial_missing": ((8, 16), {"data": "uint8"}, [0], V2D, 4, 8),
    "f32_3d_2fields_zip": ((32, 32, 32), {"a": "float32", "b": "float32"}, [0], V3D, 12, 8),
    "f32_3d_rowmajor_lz4": ((32, 32, 32), {"a": "float32"}, [0], V3D, 12, 8),
    "f32_3d_zfp_reversible": ((32, 32, 32), {"a": "float32"}, [0], V3D, 12, 8),
    "i16_3d_npot_rowmajor_raw": ((5, 6, 10), {"data": "int16"}, [0], "V0120120120", 6, 16),
}
NAMES = sorted(SAMPLES)


def _combos(name):
    _, fields, times, *_ = SAMPLES[name]
    return [(f, t) for f in fields for t in times]


def _boxes(rng, shape, count=6):
    """The whole box, a one-sample box, and random boxes."""
    full = (tuple(0 for _ in shape), tuple(shape))
    one = (tuple(n - 1 for n in shape), tuple(shape))
    return [full, one] + [he.random_box(rng, shape) for _ in range(count)]


@pytest.fixture
def open_sample(samples_dir):
    opened = []

    def _open(name):
        ds = hzio.open(str(samples_dir / f"{name}.idx"), mode="r")
        opened.append(ds)
        return ds

    yield _open
    for ds in opened:
        ds.close()


@pytest.mark.parametrize("name", NAMES)
def test_metadata(open_sample, name):
    shape, fields, times, bitmask, bpb, bpf = SAMPLES[name]
    ds = open_sample(name)
    assert tuple(ds.grid_shape) == shape
    assert dict(ds.fields) == fields
    assert list(ds.fields) == list(fields), "field order must follow the .idx"
    assert list(ds.times) == times
    assert ds.bitmask == bitmask
    assert ds.max_level == len(bitmask) - 1
    assert ds.bits_per_block == bpb
    assert ds.blocks_per_file == bpf


@pytest.mark.parametrize("name", NAMES)
def test_full_resolution_every_field_and_time(open_sample, name):
    shape = SAMPLES[name][0]
    ds = open_sample(name)
    for field, time in _combos(name):
        expected = he.sample_value(name, shape, field, time)
        got = ds.read(field=field, time=time)
        assert got.dtype == expected.dtype, (field, time)
        assert got.shape == expected.shape, (field, time)
        np.testing.assert_array_equal(got, expected, err_msg=f"{name} {field} t={time}")
        explicit = ds.read(box=((0,) * len(shape), shape), level=ds.max_level, field=field, time=time)
        np.testing.assert_array_equal(explicit, expected)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_are_first_field_and_first_time(open_sample, name):
    shape, fields, times = SAMPLES[name][:3]
    ds = open_sample(name)
    expected = he.sample_value(name, shape, next(iter(fields)), times[0])
    np.testing.assert_array_equal(ds.read(), expected)
    if len(fields) == 1 and len(times) == 1:
        np.testing.assert_array_equal(ds[...], expected)
        np.testing.assert_array_equal(ds[1:, ::2], expected[1:, ::2])


def test_partial_missing_reads_default_value(open_sample):
    ds = open_sample("u8_2d_partial_missing")
    got = ds.read()
    assert np.all(got[:4, :8] == he.sample_value("u8_2d_hzorder_zip", (8, 16))[:4, :8])
    assert np.all(got[4:, :] == 7) and np.all(got[:, 8:] == 7)
    assert ds.last_read_report["blocks_missing"] == 4, ds.last_read_report  # blocks 3, 5, 6, 7


def test_last_report_counts(open_sample):
    ds = open_sample("u8_2d_hzorder_raw_multifile")
    ds.read()
    rep = dict(ds.last_read_report)
    assert {"files_opened", "blocks_read", "bytes_read", "min_bytes", "blocks_missing"} <= set(rep)
    assert rep["files_opened"] == 4 and rep["blocks_read"] == 8 and rep["blocks_missing"] == 0
    assert rep["bytes_read"] >= 8 * 16
    fresh = open_sample("u8_2d_hzorder_raw_multifile")  # no cache can hide block reads
    fresh.read(level=4)  # levels 0..bpb live in block 0 only
    assert fresh.last_read_report["blocks_read"] == 1 and fresh.last_read_report["files_opened"] == 1


@pytest.mark.parametrize("name", NAMES)
def test_coarse_levels_match_numpy_grid(open_sample, rng, name):
    shape, fields, times, bitmask = SAMPLES[name][:4]
    ds = open_sample(name)
    boxes = _boxes(rng, shape)
    for field, time in _combos(name):
        src = he.sample_value(name, shape, field, time)
        for level in range(ds.max_level + 1):
            for box in boxes:
                if 0 in he.level_shape(bitmask, box, level):
                    continue
                expected = he.expected_level(src, bitmask, box, level)
                got = ds.read(box=box, level=level, field=field, time=time)
                assert got.shape == expected.shape, (field, time, level, box)
                np.testing.assert_array_equal(got, expected, err_msg=f"{field} t={time} H={level} {box}")


@pytest.mark.parametrize("name", NAMES)
def test_reference_side_openvisus_reads_formulas(openvisus, samples_dir, name):
    """Guards the helpers and the README formulas that the hzio comparisons rely on."""
    info = oh.ov_info(samples_dir / f"{name}.idx")
    shape, fields, times, bitmask, bpb, bpf = SAMPLES[name]
    assert (info["shape"], info["fields"], info["times"]) == (shape, list(fields), times)
    assert (info["bitmask"], info["bits_per_block"], info["blocks_per_file"]) == (bitmask, bpb, bpf)
    for field, time in _combos(name):
        got = oh.ov_read(samples_dir / f"{name}.idx", field, time)
        np.testing.assert_array_equal(got, he.sample_value(name, shape, field, time))


@pytest.mark.parametrize("name", NAMES)
def test_coarse_levels_match_openvisus(openvisus, open_sample, samples_dir, rng, name):
    shape, fields, times, bitmask = SAMPLES[name][:4]
    ds = open_sample(name)
    ovds = oh.ov_open(samples_dir / f"{name}.idx")
    boxes = _boxes(rng, shape, count=3)
    compared = 0
    for field, time in _combos(name):
        for level in range(ds.max_level + 1):
            for box in boxes:
                try:
                    want = oh.ov_read(None, field, time, box, level, db=ovds)
                except oh.EmptyLevelQuery:
                    assert 0 in he.level_shape(bitmask, box, level)
                    continue
                got = ds.read(box=box, level=level, field=field, time=time)
                assert got.dtype == want.dtype
                assert got.shape == want.shape, (field, time, level, box)
                np.testing.assert_array_equal(got, want, err_msg=f"{field} t={time} H={level} {box}")
                compared += 1
    assert compared >= ds.max_level  # the comparison really ran


@pytest.mark.parametrize("name", ["u8_2d_hzorder_zip", "f32_3d_rowmajor_lz4", "i16_3d_npot_rowmajor_raw"])
def test_level_view_and_progressive(open_sample, rng, name):
    shape, fields, _, bitmask = SAMPLES[name][:4]
    ds = open_sample(name)
    src = he.sample_value(name, shape, next(iter(fields)))
    box = he.random_box(rng, shape)
    for level in range(ds.max_level + 1):
        if 0 in he.level_shape(bitmask, box, level):
            continue
        lv = ds.level(level)  # indexed in the level's grid: samples at multiples of its spacing
        sl = tuple(slice(-(-lo // s), -(-hi // s)) for lo, hi, s in zip(*box, lv.spacing))
        np.testing.assert_array_equal(lv[sl], he.expected_level(src, bitmask, box, level))
    steps = list(ds.progressive())
    levels = [lvl for lvl, _ in steps]
    assert levels == sorted(set(levels)) and levels[-1] == ds.max_level
    for level, arr in steps:
        full = ((0,) * len(shape), shape)
        np.testing.assert_array_equal(arr, he.expected_level(src, bitmask, full, level))
