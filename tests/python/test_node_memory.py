"""hzio.shared_array: node memory that a collective write's aggregators read where it lies.

The multi-rank cases (byte identity with one process at 1-8 ranks, two emulated nodes) are the
``node-memory`` cases of test_parallel_write.py; these run in this process over ``MPI.COMM_SELF``.
"""

from __future__ import annotations

import hzio
import numpy as np
import pytest

mpi4py = pytest.importorskip("mpi4py")
if not getattr(hzio._core, "with_mpi", False):
    pytest.skip("hzio built without MPI", allow_module_level=True)


def _comm():
    from mpi4py import MPI  # noqa: PLC0415
    return MPI.COMM_SELF


def test_an_array_in_node_memory_is_written_without_a_message_and_reads_back(tmp_path, rng):
    a = hzio.shared_array(_comm(), (24, 20, 33), "float32")
    assert a.shape == (24, 20, 33) and a.dtype == np.float32 and not a.any()  # zeros, as asked
    a[...] = rng.random(a.shape, dtype=np.float32)
    b = np.array(a)  # a private copy of the same values
    for name, array in (("node", a), ("private", b)):
        with hzio.create(tmp_path / f"{name}.idx", shape=a.shape, fields={"v": "float32"}, comm=_comm(),
                         bits_per_block=9, blocks_per_file=8) as ds:
            ds.write(array, copy=False)
            report = ds.flush()
        assert report.bytes == a.nbytes
    with hzio.open(tmp_path / "node.idx") as ds:
        np.testing.assert_array_equal(ds.read(), b)
    files = sorted(p.name for p in (tmp_path / "node").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "private").iterdir()) and files
    for name in files:
        assert (tmp_path / "node" / name).read_bytes() == (tmp_path / "private" / name).read_bytes(), name


def test_node_memory_outlives_the_array_it_was_made_for_only_through_its_views():
    a = hzio.shared_array(_comm(), 1000, "int64")
    view = a[10:20]
    view[...] = np.arange(10)
    del a
    np.testing.assert_array_equal(view, np.arange(10))  # the mapping is held by the view


def test_shared_array_rejects_bad_arguments():
    with pytest.raises(ValueError, match="negative shape"):
        hzio.shared_array(_comm(), (4, -1), "float32")
    with pytest.raises(TypeError, match="mpi4py communicator"):
        hzio.shared_array(object(), 10)
    with pytest.raises(TypeError):
        hzio.shared_array(_comm(), 10, "not a dtype")
    with pytest.raises(hzio.IoError, match="node memory"):
        hzio.shared_array(_comm(), 1 << 47, "uint8")  # more than /dev/shm holds


def test_a_rank_with_boxes_outside_node_memory_keeps_its_staging_order_and_bad_requests_fail_everywhere(tmp_path):
    import mpi_launch  # noqa: PLC0415
    mpi_launch.skip_module_without_mpi()
    result, describe = mpi_launch.run_json(2, "node_memory_order", {"out": str(tmp_path)}, timeout=120)
    assert result is not None, describe
    assert result["aggregators"] == 1
    # Rank 1's slab was read where it lies; rank 0's two boxes (junk in node memory, then the real values
    # over it from private memory) were both sent by rank 0, in the order it staged them.
    assert result["messages"] > 0
    import sys  # noqa: PLC0415
    sys.path.insert(0, str(mpi_launch.SCRIPTS))
    from node_memory_order import values  # noqa: PLC0415
    with hzio.open(tmp_path / "order.idx") as ds:
        np.testing.assert_array_equal(ds.read(), values())
    bad_rank, other = result["errors"][1], result["errors"][0]
    assert bad_rank is not None and bad_rank.startswith("ValueError") and "negative shape" in bad_rank
    assert other is not None and "InvalidArgumentError" in other, result["errors"]
