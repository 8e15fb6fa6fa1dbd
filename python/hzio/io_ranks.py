"""Dedicated I/O ranks: compute ranks hand their boxes to an I/O rank of their node through node-local
shared memory and go on computing, while the I/O ranks run hzio's collective write among themselves.

``io = hzio.start_io_ranks(comm)`` (Collective over ``comm``) splits each node's ranks into compute
ranks and ``per_node`` I/O ranks. On I/O ranks, ``io.serve()`` runs until the compute ranks are done.
Compute ranks use ``io.compute_comm`` and pass ``io=io`` to :func:`hzio.create`: ``write`` copies the
box into the rank's region of the node's buffer (Local), ``flush()`` returns once every box sits there
(Collective over the compute ranks) and ``close()`` waits until everything is durable. The files are
those of the synchronous collective write of the same boxes, byte for byte: the I/O ranks run that very
write (:class:`hzio.parallel.ParallelDataset`) on the boxes of their node. This module wraps the C++
``hzio::IoRanks`` (include/hzio/io_ranks.hpp), which C and C++ programs use directly.

Examples
--------
Run with ``mpiexec -n 4 python script.py`` (3 compute ranks and 1 I/O rank on one node)::

    from mpi4py import MPI
    import numpy as np, hzio
    io = hzio.start_io_ranks(MPI.COMM_WORLD, per_node=1, buffer_bytes=64 << 20)
    if io.is_io_rank:
        io.serve()
    else:
        comm = io.compute_comm
        with hzio.create("out.idx", shape=(3 * 16, 32, 32), fields={"t": "float32"}, times=range(4),
                         comm=comm, io=io, overwrite=True) as ds:
            for step in range(4):
                ds.write(np.full((16, 32, 32), step, np.float32), offset=(16 * comm.rank, 0, 0), time=step)
                report = ds.flush()      # returns once the box is in the node's buffer
        io.close()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import _core
from ._types import check_samples, parse_dtype, to_xfirst
from .errors import InvalidArgumentError, UnsupportedError


@dataclass
class FlushReport:
    """What a compute rank's ``flush()`` did: ``waited`` seconds for the I/O side and why (``"buffer full"``,
    ``"timesteps in flight"``, ``"in-place arrays in flight"`` or ``""``), ``copied`` bytes into the node's
    buffer in ``pieces`` slabs, ``seconds`` in all; ``in_place`` bytes were handed over where they lay (arrays of
    :meth:`IoRanks.shared_array` written with ``copy=False``), without a copy. Read like a dict
    (``report["waited"]``, ``keys()``); its methods are Local."""

    seconds: float = 0.0
    waited: float = 0.0
    reason: str = ""
    copied: int = 0
    pieces: int = 0
    in_place: int = 0

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def keys(self) -> list[str]:
        return ["seconds", "waited", "reason", "copied", "pieces", "in_place"]


def _communicator(handle: int) -> Any:
    """The mpi4py communicator of a handle the core owns (None for MPI_COMM_NULL); never Free() it."""
    from mpi4py import MPI

    return None if handle < 0 else MPI.Intracomm.f2py(handle)


class IoRanks:
    """The split made by :func:`start_io_ranks`. Attributes are Local; see the module for the calls."""

    def __init__(self, core: Any, comm: Any, per_node: int, buffer_bytes: int, in_flight: int) -> None:
        self._core = core
        self.world = comm
        #: True on the I/O ranks (the last ``per_node`` ranks of each node).
        self.is_io_rank: bool = core.is_io_rank
        #: Compute ranks: the communicator to compute and write with (None on I/O ranks).
        self.compute_comm: Any = _communicator(core.compute_comm_handle)
        #: I/O ranks: the communicator of the I/O ranks of every node (None on compute ranks).
        self.io_comm: Any = _communicator(core.io_comm_handle)
        self.per_node, self.buffer_bytes, self.in_flight = per_node, buffer_bytes, in_flight
        #: Compute ranks: the bytes of this rank's region of its node's buffer.
        self.region_bytes: int = core.region_bytes

    def _require_compute(self, what: str) -> None:
        if self.is_io_rank:
            raise InvalidArgumentError(f"{what} is a call of compute ranks; I/O ranks run serve()")

    def shared_array(self, shape: Any, dtype: Any = "float32") -> np.ndarray:
        """Local, compute ranks. A new array in this rank's region of the node's buffer (held as long
        as these I/O ranks; it leaves less room for copies). Written with ``ds.write(array, copy=False)``, it is
        handed over where it lies: ``flush()`` returns without copying it. It must then stay unchanged
        until the next ``flush()`` or :meth:`wait` returns, as with the two arrays a stencil code swaps
        each step: the I/O rank writes it from where it lies, and the next ``flush()`` returns once it is
        durable. Waits until the I/O rank has copied out this rank's last batch, which may lie in that
        memory."""
        self._require_compute("shared_array")
        dt = np.dtype(dtype)
        shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        return self._core.shared_memory(nbytes).view(dt).reshape(shape)

    def serve(self) -> None:
        """Collective over the I/O ranks. Run the writes the compute ranks hand over until they are all done."""
        if not self.is_io_rank:
            raise InvalidArgumentError("serve() runs on I/O ranks only (io.is_io_rank)")
        self._core.serve()

    def wait(self) -> None:
        """Local, compute ranks. Wait until every flush of this rank so far is durable; raise the first error
        the I/O side reported (:class:`hzio.IoError` with its message)."""
        self._require_compute("wait")
        self._core.wait()

    def close(self) -> None:
        """Local: every compute rank calls it once, after its last dataset call (nothing on I/O ranks).
        :meth:`wait`, then tell the I/O rank this rank is done."""
        if not self.is_io_rank:
            self._core.close()


def start_io_ranks(comm: Any, per_node: int = 1, buffer_bytes: int = 256 << 20, in_flight: int = 2) -> IoRanks:
    """Collective over ``comm``. Split every node's ranks into compute ranks and ``per_node`` I/O ranks (the
    node's last ones), each owning a node-local buffer of ``buffer_bytes`` shared with its compute ranks
    (each gets an equal region). ``in_flight`` flushes of a compute rank may wait for the disk before its
    next ``flush()`` waits. Nodes are ``MPI_Comm_split_type(SHARED)``, or groups of
    ``$HZIO_RANKS_PER_NODE`` consecutive ranks when that is set. Each I/O rank needs a compute rank of
    its own: a node needs at least ``2 * per_node`` ranks. The buffers' memory is reserved here: a node
    whose shared memory (``/dev/shm``) cannot hold them raises :class:`hzio.IoError` on every rank.
    """
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise UnsupportedError("I/O ranks need mpi4py") from None
    from .parallel import _fortran_handle, _require_mpi

    _require_mpi()
    per_node, buffer_bytes, in_flight = int(per_node), int(buffer_bytes), int(in_flight)
    core = _core.IoRanks.start(_fortran_handle(comm), per_node, buffer_bytes, in_flight)
    return IoRanks(core, comm, per_node, buffer_bytes, in_flight)


# ---------------------------------------------------------------------------------- the compute side
class IoDataset:
    """A dataset written through I/O ranks (``hzio.create(..., comm=io.compute_comm, io=io)`` or
    ``hzio.open(path, mode="r+", io=io)`` on compute ranks). ``write`` is Local; ``flush`` and ``close``
    are Collective over the compute ranks. Compute ranks never open the data files; reads go through
    :func:`hzio.open` once the timestep is committed."""

    def __init__(self, io: IoRanks, core: Any, times: list[int]) -> None:
        self._io, self._core = io, core
        self._ndim: int = core.ndim
        lo, hi = core.box
        #: The dataset's logical box, ``[z, y, x]`` (lower corner 0 unless the .idx says otherwise).
        self.origin = tuple(reversed(lo[: self._ndim]))
        self.grid_shape = tuple(h - l for l, h in zip(reversed(lo[: self._ndim]), reversed(hi[: self._ndim])))
        self._fields = {name: parse_dtype(dt) for name, dt in core.fields}
        self._times = times
        self._borrowed: list[np.ndarray] = []  # arrays staged with copy=False, kept alive until the next flush
        self.last_flush_report: FlushReport | None = None
        self.closed = False

    def write(self, array: Any, offset: Any = None, *, field: str | None = None, time: int | None = None,
              copy: bool = True) -> None:
        """Local. Stage a box ([z, y, x] plus components); it is copied into the node's buffer at :meth:`flush`
        (with ``copy=False`` the array must not change until then; an array of :meth:`IoRanks.shared_array`
        is handed over where it lies, and must not change until the flush after that, or
        :meth:`IoRanks.wait`, returns)."""
        name = next(iter(self._fields)) if field is None else field
        if name not in self._fields:
            raise InvalidArgumentError(f"no field {name!r}; fields: {list(self._fields)}")
        _, scalar, comps = self._fields[name]
        a = np.asarray(array)
        data = check_samples(a, name, scalar, comps, self._ndim)
        spatial = data.shape[:-1] if comps > 1 else data.shape
        off = self.origin if offset is None else tuple(int(v) for v in offset)
        if len(off) != self._ndim:
            raise InvalidArgumentError(f"offset needs {self._ndim} values ([z, y, x] order), got {off}")
        end = tuple(o + n for o, n in zip(off, spatial))
        if any(o < g or e > g + s for o, e, g, s in zip(off, end, self.origin, self.grid_shape)):
            raise InvalidArgumentError(f"box at {off} of shape {spatial} is not inside the dataset {self.grid_shape}")
        t = self._times[0] if time is None else int(time)
        borrow = not copy or data is not a  # a converted copy is ours: no second copy
        self._core.write_box(to_xfirst(off, self._ndim, 0), to_xfirst(end, self._ndim, 1), name, t, data,
                             borrow=borrow)
        if borrow:
            self._borrowed.append(data)

    def flush(self) -> FlushReport:
        """Collective over the compute ranks. Copy every staged box into this rank's region of the node's
        buffer (in slabs along the first axis; when the region is full, the batch so far is handed over
        and the call waits until the I/O rank has copied it out: reported as ``"buffer full"``), hand the
        last batch over and return: the I/O ranks write and commit while the caller computes on. Before
        that, waits while ``in_flight`` earlier flushes are not yet durable (``"timesteps in flight"``), and
        after it, until an earlier flush's arrays handed over in place are durable (``"in-place arrays in
        flight"``: they may change once this call returns, also when it raises).
        Raises the I/O side's error of an earlier flush, if any (:class:`hzio.IoError`), on every compute rank
        at once, as it does a plane larger than a rank's room for copies: nothing is then handed over."""
        try:
            self.last_flush_report = FlushReport(*self._core.flush())
        finally:
            self._borrowed.clear()
        return self.last_flush_report

    def close(self) -> None:
        """Collective over the compute ranks. Flush, then wait until every timestep is durable (raises the
        I/O side's errors)."""
        if self.closed:
            return
        self.closed = True
        try:
            self._core.close()
        finally:
            self._borrowed.clear()

    def __enter__(self) -> IoDataset:
        """Local. The dataset itself, for a ``with`` block."""
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        """Collective over the compute ranks: :meth:`close` when the block ends without an exception."""
        if exc_type is None:
            self.close()
        return False


def create_through(io: IoRanks, path: str, shape: tuple[int, ...], fields: list[tuple], bitmask: str,
                   bits_per_block: int, blocks_per_file: int, times: list[int], overwrite: bool, durable: bool,
                   threads: int, placement: str, aggregator_count: int, aggregator_bytes: int, sub_block_bits: int,
                   partitions: int) -> IoDataset:
    """Collective over the compute ranks. The I/O ranks create the dataset (:func:`hzio.create` over
    ``io.io_comm`` with these options; ``threads`` 0: the node's cores shared by its I/O ranks); returns
    the compute side's :class:`IoDataset`. Raises :class:`hzio.IoError` with the I/O side's message if
    they could not."""
    io._require_compute("create")
    core = io._core.create(path, list(reversed(shape)), fields, bitmask, bits_per_block, blocks_per_file, times,
                           overwrite, placement, aggregator_count, aggregator_bytes, durable, threads,
                           sub_block_bits, partitions)
    return IoDataset(io, core, times or [0])


def open_through(io: IoRanks, path: str, durable: bool, threads: int, placement: str, aggregator_count: int,
                 aggregator_bytes: int, verify: bool, allow_outside_folder: bool, partitions: int) -> IoDataset:
    """Collective over the compute ranks. The I/O ranks open an existing dataset for writing; returns the
    compute side's :class:`IoDataset` (its default timestep is the last one committed)."""
    io._require_compute("open")
    core = io._core.open(path, placement, aggregator_count, aggregator_bytes, durable, threads, verify,
                         allow_outside_folder, partitions)
    return IoDataset(io, core, list(core.times)[-1:] or [0])
