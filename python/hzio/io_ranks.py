"""Dedicated I/O ranks: compute ranks hand their boxes to an I/O rank of their node through node-local
shared memory and go on computing, while the I/O ranks run hzio's collective write among themselves.

``io = hzio.start_io_ranks(comm)`` (Collective over ``comm``) splits each node's ranks into compute
ranks and ``per_node`` I/O ranks. On I/O ranks, ``io.serve()`` runs until the compute ranks are done.
Compute ranks use ``io.compute_comm`` and pass ``io=io`` to :func:`hzio.create`: ``write`` copies the
box into the rank's region of the node's buffer (Local), ``flush()`` returns once every box sits there
(Collective over the compute ranks) and ``close()`` waits until everything is durable. The files are
those of the synchronous collective write of the same boxes, byte for byte: the I/O ranks run that very
write (:class:`hzio.parallel.ParallelDataset`) on the boxes of their node.

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

import mmap
import os
import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ._types import parse_dtype
from .errors import Error, InvalidArgumentError, IoError, UnsupportedError

_CMD, _REPLY = 7301, 7302  # message tags on the node communicator
_RANKS_PER_NODE_ENV = "HZIO_RANKS_PER_NODE"  # emulate nodes of this many ranks (tests, one machine)


@dataclass
class FlushReport:
    """What a compute rank's ``flush()`` did: ``waited`` seconds for buffer space and why (``"buffer full"``,
    ``"timesteps in flight"`` or ``""``), ``copied`` bytes into the node's buffer, ``seconds`` in all."""

    seconds: float = 0.0
    waited: float = 0.0
    reason: str = ""
    copied: int = 0
    pieces: int = 0

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def keys(self) -> list[str]:
        return ["seconds", "waited", "reason", "copied", "pieces"]


def _node_comm(comm: Any) -> Any:
    from mpi4py import MPI

    per_node = os.environ.get(_RANKS_PER_NODE_ENV)
    if per_node:
        return comm.Split(comm.rank // max(1, int(per_node)), comm.rank)
    return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)


class IoRanks:
    """The split made by :func:`start_io_ranks`. Attributes are Local; see the module for the calls."""

    def __init__(self, comm: Any, per_node: int, buffer_bytes: int, in_flight: int) -> None:
        from mpi4py import MPI

        self.world = comm
        self.node = _node_comm(comm)
        n = self.node.size
        if not 1 <= per_node < n:
            raise InvalidArgumentError(f"per_node={per_node} I/O ranks need nodes of more ranks; this node has {n}")
        self.is_io_rank = self.node.rank >= n - per_node
        io_node_ranks = list(range(n - per_node, n))
        self.per_node = per_node
        compute_node_ranks = list(range(n - per_node))
        # Each compute rank of a node hands its boxes to one I/O rank of the node, in turn.
        self.io_of = {r: io_node_ranks[i % per_node] for i, r in enumerate(compute_node_ranks)}
        self.clients = [r for r in compute_node_ranks if self.io_of[r] == self.node.rank]
        compute = comm.Split(MPI.UNDEFINED if self.is_io_rank else 0, comm.rank)
        ios = comm.Split(0 if self.is_io_rank else MPI.UNDEFINED, comm.rank)
        #: Compute ranks: the communicator to compute and write with (None on I/O ranks).
        self.compute_comm: Any = None if compute == MPI.COMM_NULL else compute
        #: I/O ranks: the communicator of the I/O ranks of every node (None on compute ranks).
        self.io_comm: Any = None if ios == MPI.COMM_NULL else ios
        self.buffer_bytes, self.in_flight = int(buffer_bytes), int(in_flight)
        # Each I/O rank owns a file in /dev/shm, cut into equal regions, one per client compute rank.
        token = comm.bcast(f"{os.getpid()}-{time.time_ns()}" if comm.rank == 0 else None, root=0)
        name = f"/dev/shm/hzio-io-{token}-{comm.rank}"
        if self.is_io_rank:
            fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, self.buffer_bytes)
                self._map = mmap.mmap(fd, self.buffer_bytes)
            finally:
                os.close(fd)
        names = self.node.allgather(name if self.is_io_rank else None)
        self.region_bytes = self.region_offset = 0
        if not self.is_io_rank:
            mine = self.io_of[self.node.rank]
            peers = [r for r in compute_node_ranks if self.io_of[r] == mine]
            self.region_bytes = self.buffer_bytes // len(peers)
            self.region_offset = peers.index(self.node.rank) * self.region_bytes
            fd = os.open(names[mine], os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, self.buffer_bytes)
            finally:
                os.close(fd)
        self.node.Barrier()
        if self.is_io_rank:
            os.unlink(name)  # mapped by every rank of the node: the memory lives until the last unmap
        self.buffer = np.frombuffer(self._map, dtype=np.uint8)
        self._closed = False
        self._pending_durable = 0  # compute ranks: flushes the I/O side has not yet committed
        self._awaiting_release = False  # compute ranks: the region's last batch is still being copied out
        self._error: str | None = None
        self._next_key = 0

    # ------------------------------------------------------------------ compute ranks
    def _send(self, message: dict) -> None:
        self.node.send(message, dest=self.io_of[self.node.rank], tag=_CMD)

    def _receive(self) -> dict:
        """One reply of this rank's I/O rank: a batch copied out of the region, or a flush committed."""
        reply = self.node.recv(source=self.io_of[self.node.rank], tag=_REPLY)
        if reply["kind"] == "released":
            self._awaiting_release = False
        elif reply["kind"] == "durable":
            self._pending_durable -= 1
        if reply.get("error") and self._error is None:
            self._error = reply["error"]
        return reply

    def _drain(self) -> None:
        """Take every reply that has already arrived (an error of an earlier flush surfaces at once)."""
        while self.node.Iprobe(source=self.io_of[self.node.rank], tag=_REPLY):
            self._receive()

    def _wait_release(self) -> None:
        while self._awaiting_release:
            self._receive()

    def _wait_durable(self, at_most: int) -> None:
        while self._pending_durable > at_most:
            self._receive()

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            message, self._error = self._error, None
            raise IoError(f"the I/O ranks failed: {message}")

    def wait(self) -> None:
        """Collective over the compute ranks. Wait until every flush so far is durable; raise the first error
        the I/O side reported (:class:`hzio.IoError` with its message)."""
        self._require_compute("wait")
        self._wait_release()
        self._wait_durable(0)
        self._raise_pending_error()

    def close(self) -> None:
        """Collective over the compute ranks. :meth:`wait`, then tell the I/O rank this rank is done."""
        if self._closed or self.is_io_rank:
            return
        try:
            self.wait()
        finally:
            self._send({"op": "done"})
            self._closed = True

    def _require_compute(self, what: str) -> None:
        if self.is_io_rank:
            raise InvalidArgumentError(f"{what} is a call of compute ranks; I/O ranks run serve()")

    # ------------------------------------------------------------------ I/O ranks
    def serve(self) -> None:
        """Collective over the I/O ranks. Run the writes the compute ranks hand over until they are all done."""
        if not self.is_io_rank:
            raise InvalidArgumentError("serve() runs on I/O ranks only (io.is_io_rank)")
        _Server(self).run()


def start_io_ranks(comm: Any, per_node: int = 1, buffer_bytes: int = 256 << 20, in_flight: int = 2) -> IoRanks:
    """Collective over ``comm``. Split every node's ranks into compute ranks and ``per_node`` I/O ranks (the
    node's last ones), each owning a node-local buffer of ``buffer_bytes`` shared with its compute ranks
    (each gets an equal region). ``in_flight`` flushes of a compute rank may wait for the disk before its
    next ``flush()`` waits. Nodes are ``MPI_Comm_split_type(SHARED)``, or groups of
    ``$HZIO_RANKS_PER_NODE`` consecutive ranks when that is set.
    """
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise UnsupportedError("I/O ranks need mpi4py") from None
    if int(buffer_bytes) < 4096 or int(in_flight) < 1:
        raise InvalidArgumentError("buffer_bytes must be at least 4096 and in_flight at least 1")
    return IoRanks(comm, int(per_node), int(buffer_bytes), int(in_flight))


# ---------------------------------------------------------------------------------- the compute side
class IoDataset:
    """A dataset written through I/O ranks (``hzio.create(..., comm=io.compute_comm, io=io)`` on compute
    ranks). ``write`` is Local; ``flush`` and ``close`` are Collective over the compute ranks. Compute
    ranks never open the data files; reads go through :func:`hzio.open` once the timestep is committed."""

    def __init__(self, io: IoRanks, key: int, shape: tuple[int, ...], fields: dict[str, Any], times: list[int]):
        self._io, self._key, self.grid_shape = io, key, shape
        self._fields = {name: parse_dtype(dt) for name, dt in fields.items()}
        self._times = times
        self._staged: list[tuple[str, int, tuple[int, ...], np.ndarray]] = []
        self.last_flush_report: FlushReport | None = None
        self.closed = False

    def write(self, array: Any, offset: Any = None, *, field: str | None = None, time: int | None = None,
              copy: bool = True) -> None:
        """Local. Stage a box ([z, y, x] plus components); it is copied into the node's buffer at :meth:`flush`
        (with ``copy=False`` the array must not change until then)."""
        from ._types import check_samples

        name = next(iter(self._fields)) if field is None else field
        if name not in self._fields:
            raise InvalidArgumentError(f"no field {name!r}; fields: {list(self._fields)}")
        _, scalar, comps = self._fields[name]
        a = np.asarray(array)
        data = check_samples(a, name, scalar, comps, len(self.grid_shape))
        spatial = data.shape[:-1] if comps > 1 else data.shape
        off = tuple(0 for _ in self.grid_shape) if offset is None else tuple(int(v) for v in offset)
        if any(o < 0 or o + n > s for o, n, s in zip(off, spatial, self.grid_shape)):
            raise InvalidArgumentError(f"box at {off} of shape {spatial} is not inside the dataset {self.grid_shape}")
        t = self._times[0] if time is None else int(time)
        self._staged.append((name, t, off, data.copy() if copy and data is a else data))

    def flush(self) -> FlushReport:
        """Collective over the compute ranks. Copy every staged box into this rank's region of the node's
        buffer (in slabs along the first axis; when the region is full, the batch so far is handed over
        and the call waits until the I/O rank has copied it out: reported as ``"buffer full"``), hand the
        last batch over and return: the I/O ranks write and commit while the caller computes on. Before
        that, waits while ``in_flight`` earlier flushes are not yet durable (``"timesteps in flight"``).
        Raises the I/O side's error of an earlier flush, if any (:class:`hzio.IoError`)."""
        io = self._io
        t0 = time.perf_counter()
        report = FlushReport()

        def waiting(reason: str, wait: Any) -> None:
            w0 = time.perf_counter()
            wait()
            if time.perf_counter() - w0 > 1e-4:
                report.waited += time.perf_counter() - w0
                report.reason = report.reason or reason

        io._drain()
        waiting("timesteps in flight", lambda: io._wait_durable(io.in_flight - 1))
        io._raise_pending_error()
        waiting("buffer full", io._wait_release)
        batch: list[dict] = []
        at = 0
        for name, t, off, a in self._staged:
            row = max(1, a[0].nbytes if a.ndim else a.nbytes)
            if row > io.region_bytes:
                raise InvalidArgumentError(f"one plane of {row} bytes does not fit this rank's region of "
                                           f"{io.region_bytes} bytes: give start_io_ranks a larger buffer_bytes")
            rows = max(1, io.region_bytes // row)
            for z in range(0, len(a), rows):
                part = np.ascontiguousarray(a[z: z + rows])
                if at + part.nbytes > io.region_bytes:
                    io._send({"op": "stage", "key": self._key, "pieces": batch})
                    io._awaiting_release = True
                    waiting("buffer full", io._wait_release)
                    batch, at = [], 0
                begin = io.region_offset + at
                io.buffer[begin: begin + part.nbytes] = part.reshape(-1).view(np.uint8)
                batch.append({"field": name, "time": t, "offset": (off[0] + z,) + off[1:], "shape": part.shape,
                              "at": begin, "nbytes": part.nbytes})
                at += part.nbytes
                report.copied += part.nbytes
                report.pieces += 1
        self._staged.clear()
        io._send({"op": "flush", "key": self._key, "pieces": batch})
        io._awaiting_release = True
        io._pending_durable += 1
        io.compute_comm.Barrier()  # Collective: every rank's boxes are in its node's buffer
        report.seconds = time.perf_counter() - t0
        self.last_flush_report = report
        return report

    def close(self) -> None:
        """Collective over the compute ranks. Flush, then wait until every timestep is durable (raises the
        I/O side's errors)."""
        if self.closed:
            return
        self.flush()
        self._io._send({"op": "close", "key": self._key})
        self._io._pending_durable += 1
        self.closed = True
        self._io.wait()

    def __enter__(self) -> IoDataset:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        if exc_type is None:
            self.close()
        return False


def create_through(io: IoRanks, path: str, shape: tuple[int, ...], dtypes: dict[str, str], fields: Any,
                   options: dict[str, Any]) -> IoDataset:
    """Collective over the compute ranks. The I/O ranks create the dataset (``hzio.create(..., comm=io.io_comm)``
    with these options); returns the compute side's :class:`IoDataset`. Raises :class:`hzio.IoError` with
    the I/O side's message if they could not."""
    io._require_compute("create")
    io._raise_pending_error()
    key = io._next_key
    io._next_key += 1
    fields = [(name, dtype, {"codec": codec, "layout": layout, "default_value": default})
              for name, dtype, codec, layout, default in fields]
    io._send({"op": "create", "key": key, "path": path, "shape": shape, "fields": fields, "options": options})
    while True:
        reply = io.node.recv(source=io.io_of[io.node.rank], tag=_REPLY)
        if reply["kind"] == "created":
            break
        io._error = io._error or reply.get("error")
        if reply["kind"] == "durable":
            io._pending_durable -= 1
        elif reply["kind"] == "released":
            io._awaiting_release = False
    if reply.get("error"):
        raise IoError(f"the I/O ranks could not create {path}: {reply['error']}")
    return IoDataset(io, key, tuple(shape), dtypes, list(options.get("times") or [0]))


# ---------------------------------------------------------------------------------- the I/O side
class _Server:
    """An I/O rank's loop: each client's batches are copied out as they come; the other commands wait for
    every client and then run collectively with the other I/O ranks (every node's clients issue the
    same commands in the same order)."""

    def __init__(self, io: IoRanks) -> None:
        self.io = io
        self.open: dict[int, Any] = {}
        self.errors: dict[int, str] = {}

    def reply(self, client: int, kind: str, error: str | None = None) -> None:
        self.io.node.send({"kind": kind, "error": error}, dest=client, tag=_REPLY)

    def stage(self, client: int, m: dict) -> None:
        """Copy a batch out of the client's region into the dataset's staging, then free the region."""
        key = m["key"]
        try:
            ds = self.open[key]
            for p in m["pieces"]:
                scalar = ds._fields[p["field"]][1]
                view = self.io.buffer[p["at"]: p["at"] + p["nbytes"]].view(scalar).reshape(p["shape"])
                ds.write(view, offset=p["offset"], field=p["field"], time=p["time"], copy=True)
        except Exception as e:  # noqa: BLE001 - reported at the client's next flush or close
            self.errors.setdefault(key, f"{type(e).__name__}: {e}")
        self.reply(client, "released")

    def next_command(self) -> list[tuple[int, dict]]:
        got = []
        for client in self.io.clients:
            while True:
                m = self.io.node.recv(source=client, tag=_CMD)
                if m["op"] != "stage":
                    break
                self.stage(client, m)
            if m["op"] == "flush":
                self.stage(client, m)  # its last batch: the region is free again before the write
            got.append((client, m))
        return got

    def run(self) -> None:
        io = self.io
        while True:
            got = self.next_command()
            ops = sorted({m["op"] for _, m in got})
            agreed = io.io_comm.allgather(ops)
            if any(a != ops for a in agreed) or len(ops) != 1:
                raise Error(f"compute ranks disagree on the next I/O command: {agreed}")
            if ops[0] == "done":
                break
            getattr(self, "do_" + ops[0])(got)

    def collective(self, action: Any, key: int) -> str | None:
        """Run ``action`` on every I/O rank; an earlier error of the dataset, or the first error on any I/O
        rank, is every rank's answer."""
        mine = self.errors.get(key)
        if mine is None:
            try:
                action()
            except Exception as e:  # noqa: BLE001 - reported to the compute ranks, never dropped
                mine = f"{type(e).__name__}: {e}"
        errors = [e for e in self.io.io_comm.allgather(mine) if e]
        return errors[0] if errors else None

    def do_create(self, got: list[tuple[int, dict]]) -> None:
        import hzio

        m = got[0][1]

        options = dict(m["options"])
        if not options.get("threads"):  # the I/O ranks share the node's cores: threads=0 gives them all
            options["threads"] = max(1, (os.cpu_count() or 1) // self.io.per_node)

        def create() -> None:
            self.open[m["key"]] = hzio.create(m["path"], shape=m["shape"], fields=m["fields"], comm=self.io.io_comm,
                                              **options)

        error = self.collective(create, m["key"])
        if error and m["key"] in self.open:
            self.open.pop(m["key"]).__exit__(RuntimeError, None, None)  # nothing committed: drop it
        for client, _ in got:
            self.reply(client, "created", error)

    def do_flush(self, got: list[tuple[int, dict]]) -> None:
        key = got[0][1]["key"]
        error = self.collective(lambda: self.open[key].flush(), key)
        if error:
            self.errors.setdefault(key, error)
        for client, _ in got:
            self.reply(client, "durable", error)

    def do_close(self, got: list[tuple[int, dict]]) -> None:
        key = got[0][1]["key"]
        ds = self.open.pop(key, None)
        error = self.collective(lambda: ds.close() if ds is not None else None, key)
        if error and ds is not None and not ds._core.closed:
            ds.__exit__(RuntimeError, None, None)
        for client, _ in got:
            self.reply(client, "durable", error)
