"""Collective I/O from MPI programs: :class:`ParallelDataset`, returned by ``hzio.create(..., comm=...)`` and
``hzio.open(..., comm=...)``.

Every rank writes its own boxes (Local, copied at once); :meth:`ParallelDataset.flush`,
:meth:`ParallelDataset.close` and reads (``read``, slicing) are Collective: all ranks of the
communicator must call them. The files are byte-identical to a one-process write of the same data.

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

from __future__ import annotations

import math
from typing import Any, Literal, Sequence

import numpy as np

from . import _core
from ._indexing import empty_selection, select
from ._results import ReadReport, WriteReport
from ._types import BoxLike, to_xfirst, to_zyx
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
    """A dataset opened or created over an mpi4py communicator (``hzio.create``/``hzio.open`` with ``comm=``).

    **Collective** (every rank of ``comm`` must make the call, in the same order): ``hzio.create`` and
    ``hzio.open`` with ``comm``, :meth:`read`, slicing ``ds[...]``, ``ds.level(h)[...]``,
    ``ds.field(f)[...]`` (and ``ds.field(f).level(h)[...]``), :meth:`flush` and :meth:`close` (also
    on leaving a ``with`` block normally). A rank with nothing to read still joins a collective read
    (``box=()``, or an empty slice); a rank whose arguments are wrong joins it too, and every rank
    raises the same error.

    **Local** (this rank only): :meth:`write` and ``ds[...] = value`` (staging), :meth:`progressive`,
    :meth:`query`, :meth:`blocks`, :meth:`verify_block`, :meth:`level_shape`, making the views
    ``ds.level(h)`` and ``ds.field(f)``, the metadata properties, ``last_read_report`` and
    ``last_write_report``, and leaving a ``with`` block by an exception (nothing is committed). The
    Local reads see the committed data.
    """

    #: The mpi4py communicator the dataset was opened over.
    comm: Any
    _collective = True

    def __init__(self, pcore: _core.ParallelDataset, comm: Any) -> None:
        super().__init__(pcore.dataset)
        self._pcore = pcore
        self.comm = comm
        self._borrowed: list[np.ndarray] = []  # arrays staged with copy=False, kept alive until the next flush

    def read(self, box: BoxLike | tuple[()] | None = None, *, level: int | None = None, field: str | None = None,
             time: int | None = None, out: np.ndarray | None = None, method: str = "auto") -> np.ndarray:
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
                count = self._core.level_grid(lo3, hi3, level).count
                arr = self._alloc(field, to_zyx(count, self._ndim), out)
        except Exception as e:
            self._join_failed_read(e)
            raise
        self.last_read_report = ReadReport._from_core(self._pcore.read_box(lo3, hi3, level, field, time, arr, method))
        return arr

    def _read_selected(self, to_dataset_box, field, time, level):
        # Every rank must take part in the collective read, even with an empty selection or a wrong key.
        try:
            lo, hi, picks = to_dataset_box()
            field = self._field(field)
        except Exception as e:
            self._join_failed_read(e)
            raise
        if lo is None:
            self.read(box=(), level=level, field=field, time=time)
            return empty_selection(picks, self._fields[field][1])
        return select(self.read((lo, hi), level=level, field=field, time=time), picks)

    def _join_failed_read(self, error: Exception) -> None:
        """The other ranks are in the collective read: join it with this rank's error (they raise the
        agreed error; this rank then raises its own)."""
        try:
            self._pcore.fail_read(f"{type(error).__name__}: {error}")
        except Exception:
            pass

    def write(self, array: Any, offset: Sequence[int] | None = None, *, field: str | None = None,
              time: int | None = None, copy: bool = True) -> None:
        """Local. Stage this rank's box; boxes of different ranks must not overlap. Nothing reaches the
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

    def flush(self) -> WriteReport:
        """Collective. Restructure, HZ-order, aggregate and write every staged box, then commit.

        Returns the :class:`~hzio.WriteReport`, the same on every rank (``ranks``, ``aggregators``,
        ``rounds``, ``placement``, ``bytes``, ``file_bytes``, ``files``, per-phase seconds under ``max``
        and ``mean``, ``levels``); also kept as ``last_write_report``.
        """
        try:
            self.last_write_report = WriteReport._from_core(self._pcore.flush())
        finally:
            self._borrowed.clear()
        return self.last_write_report

    def close(self) -> None:
        """Collective. Flush and close; ``last_write_report`` is the report of that last commit."""
        if not self._core.closed:
            try:
                report = self._pcore.close()
            finally:
                self._borrowed.clear()
            self.last_write_report = WriteReport._from_core(report)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        """Collective on normal exit (:meth:`close`); Local on an exception (nothing is committed)."""
        if exc_type is None:
            self.close()
        # On an exception nothing collective runs (the other ranks may not be here); staged writes are
        # dropped when the object goes away and the dataset keeps its last committed state (one that
        # create made and that never committed is removed, by rank 0, without waiting for the others).
        return False


def create_parallel(comm: Any, path: str, shape: tuple[int, ...], fields: list[tuple], bitmask: str,
                    bits_per_block: int, blocks_per_file: int, times: list[int], overwrite: bool, durable: bool,
                    threads: int, placement: str, aggregator_count: int, aggregator_bytes: int,
                    sub_block_bits: int = 0, partitions: int = 1, index_space: str = "global") -> ParallelDataset:
    """Collective. The form of :func:`hzio.create` with ``comm`` (see there)."""
    _require_mpi()
    pcore = _core.ParallelDataset.create(_fortran_handle(comm), path, list(reversed(shape)), fields, bitmask,
                                         bits_per_block, blocks_per_file, times, overwrite, placement,
                                         aggregator_count, aggregator_bytes, durable, threads, sub_block_bits,
                                         partitions, index_space)
    if index_space == "local":
        from .mosaic import ParallelMosaic
        return ParallelMosaic(pcore, comm, _core.mosaic_path(path))
    return ParallelDataset(pcore, comm)


def open_parallel(comm: Any, path: str, writable: bool, durable: bool, threads: int, placement: str,
                  aggregator_count: int, aggregator_bytes: int, verify: bool = True,
                  allow_outside_folder: bool = False, partitions: int = 1) -> ParallelDataset:
    """Collective. The form of :func:`hzio.open` with ``comm`` (reads are Collective; writes too with ``mode="r+"``)."""
    _require_mpi()
    pcore = _core.ParallelDataset.open(_fortran_handle(comm), path, placement, aggregator_count, aggregator_bytes,
                                       durable, threads, writable, verify, allow_outside_folder, partitions)
    from .mosaic import ParallelMosaic, mosaic_path
    midx = mosaic_path(path)
    return ParallelMosaic(pcore, comm, midx) if midx else ParallelDataset(pcore, comm)


def shared_array(comm: Any, shape: Any, dtype: Any = "float32") -> np.ndarray:
    """Collective over ``comm`` (an mpi4py communicator). A new array of zeros in node memory: this
    rank's region of one shared-memory object of its node (ranks may ask for different shapes).

    Written with ``ds.write(array, copy=False)`` by a dataset over ``comm`` (or any communicator whose
    ranks on this node all made it), the array is read where it lies by its data files' aggregators on
    this node: its blocks are neither put in order by this rank nor sent to them
    (docs/guide/parallel-io.md "Node memory"). As with every ``copy=False`` write, it must stay unchanged
    until ``flush()`` or ``close()`` returns. The memory lives as long as the array (and its views)."""
    _require_mpi()
    handle = _fortran_handle(comm)
    # A bad request still joins the collective call (as a negative size), so that the other ranks fail
    # with it instead of waiting; this rank then raises its own error.
    problem: Exception | None = None
    try:
        dt = np.dtype(dtype)
        shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if any(n < 0 for n in shape):
            raise ValueError(f"shared_array: negative shape {shape}")
        nbytes = math.prod(shape) * dt.itemsize  # Python integers: no overflow
    except (TypeError, ValueError) as e:
        problem, nbytes = e, -1
    try:
        memory = _core.NodeMemory.create(handle, min(nbytes, 2**63 - 1))
    except Exception:
        if problem is not None:
            raise problem from None
        raise
    return memory.memory().view(dt).reshape(shape)
