"""Which codec settings OpenVisus reads: every spec hzio writes (zip levels, lz4, zfp reversible, precision and
accuracy modes), for each dtype it applies to, in HZ and row-major layouts. OpenVisus (OpenVisusNoGui) is the
oracle: its read must equal hzio's, which must equal the source for lossless codecs and stay within the
mode's bound for lossy zfp (docs/format.md "Codecs")."""

from __future__ import annotations

import hzio
import numpy as np
import ov_helpers as ovh
import pytest

LOSSLESS = ["raw", "zip", "zip-Z_DEFAULT_COMPRESSION", "zip-Z_BEST_SPEED", "zip-Z_BEST_COMPRESSION", "lz4",
            "zfp-reversible-reversible"]
LOSSY = ["zfp-precision=24-precision=24", "zfp-precision=10-precision=10", "zfp-accuracy=0.001-accuracy=0.001",
         "zfp-accuracy=0.5-accuracy=0.5"]
ZFP_DTYPES = ["float32", "float64", "int32", "int64"]


def _source(dtype, rng):
    if dtype.startswith("float"):
        return (rng.standard_normal((8, 32, 32)) * 10).astype(dtype)
    return rng.integers(-10_000, 10_000, (8, 32, 32)).astype(dtype)


def _cases():
    for codec in LOSSLESS + LOSSY:
        dtypes = ZFP_DTYPES if codec.startswith("zfp") else ["uint8", "int16", "float32", "float64"]
        for dtype in dtypes:
            if codec in LOSSY and not dtype.startswith("float"):
                continue  # zfp's lossy modes are for floating point here
            yield pytest.param(codec, dtype, id=f"{codec}-{dtype}")


@pytest.mark.parametrize("layout", ["hzorder", "rowmajor"])
@pytest.mark.parametrize("codec,dtype", list(_cases()))
def test_openvisus_reads_what_hzio_writes_with_this_codec(tmp_path, openvisus, rng, codec, dtype, layout):
    src = _source(dtype, rng)
    path = str(tmp_path / "c.idx")
    with hzio.create(path, shape=src.shape, fields={"a": dtype}, codec=codec, layout=layout,
                     bits_per_block=10) as ds:
        ds.write(src)
    with hzio.open(path) as ds:
        mine = ds.read()
    theirs = ovh.ov_read(path, field="a")
    np.testing.assert_array_equal(theirs, mine)
    if codec in LOSSLESS:
        np.testing.assert_array_equal(mine, src)
    elif "accuracy=" in codec:
        tolerance = float(codec.split("accuracy=")[1].split("-")[0])
        assert np.abs(mine.astype(np.float64) - src).max() <= tolerance
    else:  # precision=N bit planes of zfp's transformed blocks: a loose bound relative to the largest value
        bits = int(codec.split("precision=")[1].split("-")[0])
        assert 0 < np.abs(mine.astype(np.float64) - src).max() <= np.abs(src).max() * 2.0 ** (8 - bits)
