"""The read cache (docs/design/read-path.md "Read cache"): small reads keep the raw bytes they took for
the reads that follow, and never return bytes of files that a commit has replaced since.

Oracles: NumPy arrays written here; a read with the cache off (``read_cache_bytes=0``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import hzio
import numpy as np
import pytest

SHAPE = (32, 64, 64)
BOXES = [((0, 0, 0), (8, 8, 8)), ((5, 17, 30), (21, 40, 63)), ((16, 32, 32), (32, 64, 64)), ((3, 3, 3), (4, 4, 4))]


@pytest.fixture()
def dataset(tmp_path):
    path = tmp_path / "d.idx"
    a = np.random.default_rng(11).standard_normal(SHAPE).astype(np.float32)
    with hzio.create(path, shape=SHAPE, fields={"v": "float32"}, bits_per_block=10, times=[0, 1]) as ds:
        ds.write(a)
        ds.write(-a, time=1)
    return path, a


def _box(a, box):
    (z0, y0, x0), (z1, y1, x1) = box
    return a[z0:z1, y0:y1, x0:x1]


@pytest.mark.parametrize("cache", [0, 4096, 8 << 20])
def test_boxes_read_again_and_in_any_order_are_the_data(dataset, cache):
    path, a = dataset
    with hzio.open(path, read_cache_bytes=cache) as ds:
        for _ in range(3):
            for box in BOXES + BOXES[::-1]:
                np.testing.assert_array_equal(ds.read(box), _box(a, box))
                np.testing.assert_array_equal(ds.read(box, time=1), -_box(a, box))


def test_a_box_read_again_takes_no_bytes_from_the_files(dataset):
    path, a = dataset
    box = BOXES[1]
    with hzio.open(path) as ds:
        ds.read(box)
        first = ds.last_read_report
        np.testing.assert_array_equal(ds.read(box), _box(a, box))
        again = ds.last_read_report
    with hzio.open(path, read_cache_bytes=0) as ds:
        ds.read(box)
        ds.read(box)
        uncached = ds.last_read_report
    assert first.bytes_read > 0
    assert again.bytes_read == 0, again
    assert uncached.bytes_read > 0, uncached  # without the cache, the same read takes its bytes again


def test_a_box_read_again_is_one_copy_of_the_same_result(dataset):
    """The last small reads' outputs are kept whole (the result cache): the same box, level, field and
    timestep again comes from memory; any other differs in its key and is read. An output is kept at
    once only in released memory of its size, otherwise the second time its key is read, so each key is
    read twice before the reads that must come from memory."""
    path, a = dataset
    box = BOXES[1]
    with hzio.open(path) as ds:
        coarse = ds.read(box, level=ds.max_level - 3)
        for _ in range(2):
            ds.read(box)
            ds.read(box, time=1)
        ds.read(box, level=ds.max_level - 3)
        for _ in range(2):
            np.testing.assert_array_equal(ds.read(box), _box(a, box))
            assert ds.last_read_report.assembly == "result cache"
            np.testing.assert_array_equal(ds.read(box, time=1), -_box(a, box))
            assert ds.last_read_report.assembly == "result cache"
            np.testing.assert_array_equal(ds.read(box, level=ds.max_level - 3), coarse)
            assert ds.last_read_report.assembly == "result cache"
        first = ds.read(box)
        first[...] = 0  # the caller's array, not the kept copy
        np.testing.assert_array_equal(ds.read(box), _box(a, box))
        (z0, y0, x0), (z1, y1, x1) = box
        np.testing.assert_array_equal(ds[z0 - 32:z1, y0:y1, x0:x1], _box(a, box))  # slicing, negative start
        assert ds.last_read_report.assembly == "result cache"
    with hzio.open(path, read_cache_bytes=0) as ds:  # no cache: no kept results either
        ds.read(box)
        ds.read(box)
        assert ds.last_read_report.assembly == "blocks"


def test_a_commit_of_this_dataset_is_seen_by_the_next_read(dataset):
    path, a = dataset
    box = BOXES[1]
    with hzio.open(path, mode="r+") as ds:
        np.testing.assert_array_equal(ds.read(box), _box(a, box))
        b = a + 1
        ds.write(b)
        ds.flush()
        np.testing.assert_array_equal(ds.read(box), _box(b, box))


def test_a_commit_of_another_process_is_seen_by_the_next_read(dataset):
    path, a = dataset
    with hzio.open(path) as reader:
        for box in BOXES:
            np.testing.assert_array_equal(reader.read(box), _box(a, box))
        writer = textwrap.dedent(f"""
            import hzio, numpy as np
            with hzio.open({str(path)!r}, mode="r+") as ds:
                ds.write(np.full({SHAPE!r}, 7.5, dtype=np.float32))
        """)
        subprocess.run([sys.executable, "-c", writer], check=True)
        for box in BOXES:
            np.testing.assert_array_equal(reader.read(box), np.full(_box(a, box).shape, 7.5, dtype=np.float32))


def test_a_commit_between_open_and_the_first_read_is_seen(dataset):
    """A dataset opened for reading reads its first timestep's header tables in the background; a commit of
    another process before the first read replaces those files, and the read must see the new ones."""
    path, a = dataset
    with hzio.open(path) as reader:
        time.sleep(0.3)  # the tables are read by now, or the read below reads them itself: the same answer
        writer = textwrap.dedent(f"""
            import hzio, numpy as np
            with hzio.open({str(path)!r}, mode="r+") as ds:
                ds.write(np.full({SHAPE!r}, -2.5, dtype=np.float32))
        """)
        subprocess.run([sys.executable, "-c", writer], check=True)
        for box in BOXES:
            np.testing.assert_array_equal(reader.read(box), np.full(_box(a, box).shape, -2.5, dtype=np.float32))
    with hzio.open(path) as reader:  # and one opened after the commit reads what it committed
        np.testing.assert_array_equal(reader.read(), np.full(SHAPE, -2.5, dtype=np.float32))
        np.testing.assert_array_equal(reader.read(time=1), -a)


def test_read_cache_bytes_is_checked(dataset):
    path, _ = dataset
    with pytest.raises(hzio.InvalidArgumentError, match="read_cache_bytes"):
        hzio.open(path, read_cache_bytes=-1)
