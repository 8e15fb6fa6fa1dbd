"""Statistics stay truthful in the corner cases: uncommitted writes, sidecars of other sub-block bits, lossy codecs.

Each test compares ``ds.query`` with a NumPy scan of ``ds.read`` (the independent oracle).
"""

import hzio
import numpy as np
import pytest


def _scan(ds, lo, hi, field=None):
    arr = ds.read(field=field)
    mask = (arr >= lo) & (arr <= hi)
    return np.argwhere(mask), arr[mask]


def test_queries_see_uncommitted_writes(tmp_path, rng):
    path = tmp_path / "u.idx"
    ds = hzio.create(path, shape=(32, 32, 32), fields={"a": "float32"}, bits_per_block=10)
    ds.write(np.zeros((32, 32, 32), np.float32))
    ds.flush()
    data = rng.random((32, 32, 32)).astype(np.float32)
    ds.write(data)                       # not committed yet: stats of the pending blocks must be used
    coords, values = ds.query("a", 0.25, 0.5)
    want_c, want_v = _scan(ds, 0.25, 0.5)
    assert len(values) > 0
    np.testing.assert_array_equal(coords, want_c)
    np.testing.assert_array_equal(values, want_v)
    ds.close()


def test_rewrites_keep_statistics_of_other_sub_block_bits_truthful(tmp_path, rng):
    path = tmp_path / "g.idx"
    data = rng.random((32, 32, 32)).astype(np.float32)
    with hzio.create(path, shape=data.shape, fields={"a": "float32"}, bits_per_block=10, sub_block_bits=2) as ds:
        ds.write(data)
    hzio.index(path, sub_block_bits=3)   # sidecars now have 8 parts per block, the .idx says 4
    with hzio.open(path, mode="r+") as ds:
        ds.write(np.full((1, 1, 1), 0.9, np.float32), offset=(5, 6, 7))
    data[5, 6, 7] = 0.9
    with hzio.open(path) as ds:
        for lo, hi in [(0.1, 0.11), (0.89, 0.91), (0.5, 0.75)]:
            coords, values = ds.query("a", lo, hi)
            mask = (data >= lo) & (data <= hi)
            np.testing.assert_array_equal(coords, np.argwhere(mask))
            np.testing.assert_array_equal(values, data[mask])


@pytest.mark.parametrize("codec", ["zfp-precision=10-precision=10", "zfp-accuracy=0.01-accuracy=0.01"])
def test_lossy_blocks_have_statistics_of_the_values_a_read_returns(tmp_path, rng, codec):
    path = tmp_path / "z.idx"
    data = (rng.random((32, 32, 32)) * 100).astype(np.float32)
    with hzio.create(path, shape=data.shape, fields={"a": "float32"}, codec=codec, bits_per_block=9) as ds:
        ds.write(data)
    with hzio.open(path) as ds:
        arr = ds.read()
        blocks = ds.blocks()
        assert blocks["stats_known"][blocks["present"]].all()
        assert np.nanmax(blocks["max"]) == arr.max() and np.nanmin(blocks["min"]) == arr.min()
        for lo, hi in [(arr.max() - 1e-3, arr.max()), (arr.min(), arr.min()), (10, 12)]:
            coords, values = ds.query("a", lo, hi)
            want_c, want_v = _scan(ds, lo, hi)
            np.testing.assert_array_equal(coords, want_c)
            np.testing.assert_array_equal(values, want_v)


def test_a_flush_with_nothing_written_reports_nothing(tmp_path):
    with hzio.create(tmp_path / "e.idx", shape=(8, 8), fields={"a": "uint8"}) as ds:
        ds.write(np.ones((8, 8), np.uint8))
        assert ds.flush()["bytes"] == 64
        assert ds.flush()["bytes"] == 0
