"""Collective writes from MPI programs: :class:`ParallelDataset`, returned by ``hzio.create(..., comm=...)``.

Every rank writes its own boxes (Local, copied at once); :meth:`ParallelDataset.flush` and
:meth:`ParallelDataset.close` are Collective: all ranks of the communicator must call them. The files
are byte-identical to a one-process write of the same data.

Examples
--------
Run with ``mpiexec -n 4 python script.py``::

    from mpi4py import MPI
    import numpy as np, hzio
    comm = MPI.COMM_WORLD
    with hzio.create("out.idx", shape=(64, 64, 64), fields={"t": "float32"}, comm=comm, overwrite=True) as ds:
        z0 = 16 * comm.rank
        ds.write(np.full((16, 64, 64), comm.rank, np.float32), offset=(z0, 0, 0))
        report = ds.flush()   # collective; also ds.last_write_report
"""

import json

import numpy as np

from . import _core
from ._types import to_xfirst, to_zyx
from .dataset import Dataset, _level
from .errors import UnsupportedError


def _fortran_handle(comm):
    try:
        return int(comm.py2f())
    except AttributeError:
        raise TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}") from None


def _require_mpi():
    if not getattr(_core, "with_mpi", False):
        raise UnsupportedError("this hzio was built without MPI (rebuild with -Ccmake.define.HZIO_WITH_MPI=ON)")


class ParallelDataset(Dataset):
    """A dataset written collectively over an mpi4py communicator.

    Reads (``read``, slicing, ``progressive``) are Local and see committed data.
    """

    def __init__(self, pcore, comm):
        super().__init__(pcore.dataset)
        self._pcore = pcore
        self.comm = comm
        self._borrowed = []  # arrays staged with copy=False, kept alive until the next flush

    def read(self, box=None, level=None, field=None, time=None, out=None, method="auto"):
        """Collective: every rank reads its own box (``box=()`` asks for nothing and returns an empty array).

        ``method`` is ``"auto"``, ``"independent"`` (each rank reads its blocks) or ``"two-phase"`` (each
        data file is read once by one rank, which sends decoded blocks to the ranks that asked);
        ``last_read_report["method"]`` says which ran. Slicing (``ds[...]``, ``ds.level(h)[...]``) is
        Collective too, since it calls this method.
        """
        try:
            field, time = self._field(field), self._time(time)
            if box is not None and len(box) == 2 and any(int(h) <= int(l) for l, h in zip(*box)):
                box = ()  # an empty box (e.g. an empty level-view slice) still joins the collective
            if box is not None and len(box) == 0:
                _, scalar, comps = self._fields[field]
                arr = np.empty((0,) * self._ndim + ((comps,) if comps > 1 else ()), dtype=scalar)
                lo3 = hi3 = (0, 0, 0)
                level = -1 if level is None else int(level)
            else:
                lo, hi = self._box(box)
                level = -1 if level is None else _level(level, self.max_level)
                lo3, hi3 = to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1)
                _, _, count = self._core.level_grid(lo3, hi3, level)
                arr = self._alloc(field, to_zyx(count, self._ndim), out)
        except Exception as e:
            # The other ranks are in the collective read: join it with this rank's error, then raise.
            try:
                self._pcore.fail_read(f"{type(e).__name__}: {e}")
            except Exception:
                pass
            raise
        self.last_read_report = self._pcore.read_box(lo3, hi3, level, field, time, arr, method)
        return arr

    def _getitem(self, key, field, time):
        # Every rank must take part in the collective read, even with an empty selection.
        from ._indexing import plan
        try:
            lo, _, picks = plan(key, self.shape)
        except Exception as e:
            self._pcore.fail_read(f"{type(e).__name__}: {e}")  # raises the agreed error on every rank
            raise
        if lo is None:
            self.read(box=(), field=field, time=time)
        return super()._getitem(key, field, time) if lo is not None else self._empty(field, picks)

    def _empty(self, field, picks):
        _, scalar, comps = self._fields[self._field(field)]
        shape = tuple(len(p) for p in picks if not isinstance(p, int)) + ((comps,) if comps > 1 else ())
        return np.empty(shape, dtype=scalar)

    def write(self, array, offset=None, field=None, time=None, copy=True):
        """Stage this rank's box (Local); boxes of different ranks must not overlap. Nothing reaches the
        disk before :meth:`flush`.

        ``copy=True`` copies the array before returning, so it may be changed at once. ``copy=False``
        saves that copy (a pass over the data and as much memory): hzio keeps a reference to the array
        and reads it during the next :meth:`flush` or :meth:`close`, so the caller must not change it
        before then. An array that needs converting (another dtype, not C-contiguous) is converted into
        a private copy either way.
        """
        args = self._write_args(array, offset, field, time)
        self._pcore.write_box(*args, borrow=not copy)
        if not copy:
            self._borrowed.append(args[-1])

    def flush(self):
        """Collective. Restructure, HZ-order, aggregate and write every staged box, then commit.

        Returns the write report as a dict (``ranks``, ``aggregators``, ``rounds``, ``placement``,
        ``bytes``, ``file_bytes``, ``files``, per-phase seconds under ``max`` and ``mean``, ``levels``).
        """
        try:
            self.last_write_report = json.loads(self._pcore.flush())
        finally:
            self._borrowed.clear()
        return self.last_write_report

    def close(self):
        """Collective. Flush and close."""
        if not self._core.closed:
            try:
                self._pcore.close()
            finally:
                self._borrowed.clear()
            self.last_write_report = json.loads(self._pcore.last_write_report)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        # On an exception nothing collective runs (the other ranks may not be here); staged writes are
        # dropped when the object goes away and the dataset keeps its last committed state (one that
        # create made and that never committed is removed, by rank 0, without waiting for the others).
        return False


def create_parallel(comm, path, shape, fields, bitmask, bits_per_block, blocks_per_file, times, overwrite, durable,
                    threads, placement, aggregator_count, aggregator_bytes, sub_block_bits=0):
    """Collective form of :func:`hzio.create` (see there)."""
    _require_mpi()
    pcore = _core.ParallelDataset.create(_fortran_handle(comm), path, list(reversed(shape)), fields, bitmask,
                                         bits_per_block, blocks_per_file, times, overwrite, placement,
                                         aggregator_count, aggregator_bytes, durable, threads, sub_block_bits)
    return ParallelDataset(pcore, comm)


def open_parallel(comm, path, writable, durable, threads, placement, aggregator_count, aggregator_bytes):
    """Collective form of :func:`hzio.open` (reads are Collective; writes too with ``mode="r+"``)."""
    _require_mpi()
    pcore = _core.ParallelDataset.open(_fortran_handle(comm), path, placement, aggregator_count, aggregator_bytes,
                                       durable, threads, writable)
    return ParallelDataset(pcore, comm)
