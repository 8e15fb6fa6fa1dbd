"""The NumPy-facing :class:`Dataset`: create/open, read boxes at any level, slicing, progressive reads.

Arrays are C order ``[z, y, x]`` (``[y, x]`` for 2-D datasets) with a trailing component axis for
vector fields, exactly as OpenVisus returns them.
"""

from __future__ import annotations

import operator
from typing import Any, Iterator, Literal, Sequence, TypeVar

import numpy as np

from . import _core
from ._blocks import block_table
from ._indexing import box_of_slices, empty_selection, normalize_key, plan_array, select
from ._results import ProgressiveReport, QueryReport, ReadReport, WriteReport
from ._types import BoxLike, check_samples, empty_for_read, fit_samples, parse_dtype, to_xfirst, to_zyx
from ._views import Field, LevelView
from ._views import check_level as _level
from .errors import InvalidArgumentError, NotFoundError, WaitTimeoutError

_D = TypeVar("_D", bound="Dataset")


class Dataset:
    """An IDX dataset opened by :func:`hzio.create` or :func:`hzio.open`. Use it as a context manager.

    ``ds["name"]`` (or ``ds.field(name)``) is a field as an array (:class:`hzio.Field`); ``"name" in ds``
    tests for a field. The dataset itself indexes, converts (``np.asarray``) and reports ``shape``,
    ``dtype``, ``ndim``, ``size``, ``nbytes`` and ``len`` as its **first field** at its first timestep,
    the default of every call, so a one-field dataset is an array; ``grid_shape`` is the grid alone.

    Examples
    --------
    >>> import numpy as np, hzio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.idx")
    >>> with hzio.create(path, shape=(4, 8, 16), fields={"t": "float32"}) as ds:
    ...     ds.write(np.arange(512, dtype=np.float32).reshape(4, 8, 16))
    >>> with hzio.open(path) as ds:
    ...     print(ds.shape, ds[1, 2, 3], ds.read(level=0).shape)
    (4, 8, 16) 147.0 (1, 1, 1)

    Every call is Local, except that on a dataset opened with ``comm`` (a
    :class:`hzio.parallel.ParallelDataset`) reads and commits are Collective (see there).
    """

    #: The report of the last commit (``flush`` or ``close``), or None before the first.
    last_write_report: WriteReport | None

    #: Reads are Collective (ParallelDataset): slicing always takes the general path, which joins them.
    _collective = False
    _read_report: Any = None
    _raw_read_report: Any = None  # the core's report of the last read, until last_read_report converts it

    def __init__(self, core: _core.Dataset) -> None:
        self._set_core(core)
        self.last_read_report = None
        self.last_write_report = None
        self._reopen: tuple | None = None  # hzio.open's arguments, for refresh()

    def _set_core(self, core: _core.Dataset) -> None:
        self._core = core
        self._ndim: int = core.ndim
        self._fields = {f.name: parse_dtype(f.dtype) for f in core.fields}
        box = core.box  # the box of an open dataset does not change; refresh() sets it again
        self._lo_zyx = to_zyx(box.lo, self._ndim)
        self._hi_zyx = to_zyx(box.hi, self._ndim)

    @property
    def last_read_report(self) -> ReadReport | None:
        """Local. The report of the last ``read``, slicing, ``progressive`` step or ``query``, or None."""
        raw = self._raw_read_report
        if raw is not None:  # made on first use: a small read need not pay for it
            self._read_report, self._raw_read_report = ReadReport._from_core(raw), None
        return self._read_report

    @last_read_report.setter
    def last_read_report(self, report: Any) -> None:
        self._read_report, self._raw_read_report = report, None

    # ---------------------------------------------------------------- live datasets (Local)
    def refresh(self) -> bool:
        """Local. See what other processes committed since this dataset was opened (new timesteps above
        all): re-open it if its .idx changed. Returns True if it changed. Only for datasets opened
        read-only with :func:`hzio.open`; every read already sees one committed state, never a partial one.
        """
        if self._reopen is None or self._reopen[1]:
            raise InvalidArgumentError("refresh() is for datasets opened read-only with hzio.open")
        fresh = _core.Dataset.open(*self._reopen)
        if list(fresh.times) == self.times and fresh.bitmask == self.bitmask and \
                [f.name for f in fresh.fields] == list(self._fields):
            fresh.close()
            return False
        old = self._core
        self._set_core(fresh)
        old.close()
        return True

    def wait_for_time(self, time: int, timeout: float | None = None, poll: float = 0.05) -> None:
        """Local. Block until the .idx lists timestep ``time`` (polling :meth:`refresh` every ``poll`` seconds);
        raises hzio.WaitTimeoutError after ``timeout`` seconds.

        A timestep that a commit adds is listed only once its data is committed, so this waits for the
        data. Timesteps declared in advance (``times=`` of :func:`hzio.create`) are listed from the start:
        to follow a run, let each commit add its timestep (``times=[0]``, then write ``time=t``).
        """
        import time as clock

        want = self._time(time)
        deadline = None if timeout is None else clock.monotonic() + float(timeout)
        while want not in self.times:
            if deadline is not None and clock.monotonic() >= deadline:
                raise WaitTimeoutError(f"timestep {want} of {self.path} was not committed within {timeout} s")
            clock.sleep(poll)
            self.refresh()

    # ---------------------------------------------------------------- metadata (all Local)
    @property
    def path(self) -> str:
        """Local. Absolute path of the .idx file."""
        return self._core.path

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Local. Samples per axis of the grid, ``(nz, ny, nx)``, ``(ny, nx)`` or ``(nx,)``."""
        return tuple(h - o for h, o in zip(self._hi_zyx, self._lo_zyx))

    @property
    def grid_ndim(self) -> int:
        """Local. Number of grid axes: 1, 2 or 3 (``box`` and ``offset`` arguments have this many values)."""
        return self._ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """Local. The first field's array shape: ``grid_shape``, plus the component axis of a vector field."""
        return self._first().shape

    @property
    def ndim(self) -> int:
        """Local. ``len(shape)``: the grid's axes, plus one if the first field is a vector field."""
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """Local. The first field's NumPy dtype (of one component)."""
        return self._first().dtype

    @property
    def size(self) -> int:
        """Local. Values of the first field at one timestep (``prod(shape)``)."""
        return self._first().size

    @property
    def nbytes(self) -> int:
        """Local. Bytes of the first field at one timestep, once read."""
        return self._first().nbytes

    def __len__(self) -> int:
        """Local. Length of the first axis of ``shape``."""
        return self.shape[0]

    def __iter__(self) -> Iterator[np.ndarray]:
        """Planes of the first field along the first axis (Local; Collective on a dataset opened with comm)."""
        return iter(self._first())

    def __contains__(self, name: object) -> bool:
        """Local. Whether the dataset has a field of this name."""
        return name in self._fields

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Local. The first field, read whole (see :meth:`hzio.Field.__array__` for the size limit)."""
        return self._first().__array__(dtype, copy)

    @property
    def origin(self) -> tuple[int, ...]:
        """Local. The dataset box's lower corner ([z, y, x]); 0 except for some files written elsewhere.

        ``box`` and ``offset`` arguments are in dataset coordinates; slicing (``ds[...]``) indexes the
        array that starts at ``origin``, like a NumPy array of ``shape``.
        """
        return self._lo_zyx

    @property
    def fields(self) -> dict[str, str]:
        """Local. Field name to dtype string (``"float32"``, ``"float32[3]"``), in file order."""
        return {name: spec[0] for name, spec in self._fields.items()}

    @property
    def times(self) -> list[int]:
        """Local. Timesteps, ascending."""
        return list(self._core.times)

    @property
    def max_level(self) -> int:
        """Local. The finest resolution level (the bitmask length)."""
        return self._core.max_level

    @property
    def bitmask(self) -> str:
        """Local. The bitmask, ``V`` followed by one axis digit per level."""
        return self._core.bitmask

    @property
    def physic_box(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """Local. The physical box ``((z0, y0, x0), (z1, y1, x1))`` that the dataset box maps onto, from the
        .idx's ``(physic_box)``; None when the .idx has none (or it is malformed).

        Sample ``i`` along an axis lies at ``p0 + (i - lo) * (p1 - p0) / n`` for a dataset box ``[lo, lo + n)``.
        """
        try:
            values = [float(v) for v in self._core.physic_box.split()]
        except ValueError:
            return None
        if len(values) < 2 * self._ndim:
            return None
        lo = tuple(values[0: 2 * self._ndim: 2])
        hi = tuple(values[1: 2 * self._ndim: 2])
        return lo[::-1], hi[::-1]

    @property
    def logic_to_physic(self) -> np.ndarray | None:
        """Local. The .idx's ``(logic_to_physic)`` as an ``(ndim + 1, ndim + 1)`` matrix acting on x-first
        homogeneous coordinates, as written there; None when absent (or malformed)."""
        try:
            values = np.array([float(v) for v in self._core.logic_to_physic.split()])
        except ValueError:
            return None
        n = self._ndim + 1
        return values.reshape(n, n) if values.size == n * n else None

    @property
    def bits_per_block(self) -> int:
        """Local. A block holds ``2**bits_per_block`` hz addresses."""
        return self._core.bits_per_block

    @property
    def blocks_per_file(self) -> int:
        """Local. Blocks per data file."""
        return self._core.blocks_per_file

    @property
    def block_count(self) -> int:
        """Local. Blocks per field and timestep."""
        return self._core.block_count

    @property
    def codecs(self) -> dict[str, str]:
        """Local. Field name to codec spec of new blocks (``"raw"``, ``"zip"``, ...)."""
        return {f.name: f.codec for f in self._core.fields}

    @property
    def layouts(self) -> dict[str, str]:
        """Local. Field name to layout of new blocks (``"hzorder"`` or ``"rowmajor"``)."""
        return {f.name: f.layout for f in self._core.fields}

    def __repr__(self) -> str:
        state = "closed" if self._core.closed else "open"
        fields = ", ".join(f"{k}: {v}" for k, v in self.fields.items())
        return (f"<hzio.Dataset {self.path!r} shape={self.shape} fields={{{fields}}} times={self.times} "
                f"max_level={self.max_level} bitmask={self.bitmask} ({state})>")

    # ---------------------------------------------------------------- helpers
    def _first(self) -> Field:
        return Field(self, next(iter(self._fields)), None)

    def _field(self, field):
        if field is None:
            return next(iter(self._fields))
        if not isinstance(field, str) or field not in self._fields:
            raise NotFoundError(f"dataset {self.path} has no field {field!r}; fields: {list(self._fields)}")
        return field

    def _time(self, time):
        if time is None:
            return self.times[0]
        try:
            return int(time)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"time must be an integer timestep, got {time!r}") from None

    def _box(self, box):
        if box is None:
            return self.origin, to_zyx(self._core.box.hi, self._ndim)
        try:
            lo, hi = box
            lo, hi = tuple(operator.index(v) for v in lo), tuple(operator.index(v) for v in hi)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"box must be ((z0, y0, x0), (z1, y1, x1)) with integers, got {box!r}") from None
        if len(lo) != self._ndim or len(hi) != self._ndim:
            raise InvalidArgumentError(f"box needs {self._ndim} coordinates per corner ([z, y, x] order), got {box!r}")
        self._check_inside(lo, hi, "box")
        return lo, hi

    def _check_inside(self, lo, hi, what):
        """Raise InvalidArgumentError, in the caller's [z, y, x] order, unless lo < hi lies in the dataset box."""
        dlo, dhi = self.origin, to_zyx(self._core.box.hi, self._ndim)
        if all(a <= l < h <= b for l, h, a, b in zip(lo, hi, dlo, dhi)):
            return

        def show(l, h):
            return "[" + ", ".join(f"{a}:{b}" for a, b in zip(l, h)) + ")"

        raise InvalidArgumentError(f"{what} {show(lo, hi)} ([z, y, x]) is empty or not inside the dataset box "
                                   f"{show(dlo, dhi)}")

    def _level_grid(self, level):
        """``(origin, spacing, count)`` ([z, y, x]) of the samples of levels ``0..level`` over the whole dataset."""
        grid = self._core.level_grid(to_xfirst(self.origin, self._ndim, 0),
                                     to_xfirst(to_zyx(self._core.box.hi, self._ndim), self._ndim, 1), level)
        return to_zyx(grid.origin, self._ndim), to_zyx(grid.spacing, self._ndim), to_zyx(grid.count, self._ndim)

    def _alloc(self, field, counts_zyx, out):
        _, scalar, comps = self._fields[field]
        shape = tuple(counts_zyx) + ((comps,) if comps > 1 else ())
        if out is None:
            return empty_for_read(shape, scalar)
        if out.shape != shape or out.dtype != scalar or not out.flags.c_contiguous:
            raise InvalidArgumentError(f"out must be a C-contiguous {scalar} array of shape {shape}, got "
                                       f"{out.dtype} {out.shape}")
        return out

    # ---------------------------------------------------------------- reads
    def level_shape(self, level: int, box: BoxLike | None = None, *, field: str | None = None) -> tuple[int, ...]:
        """Local. Shape of ``read(box, level=level, field=field)`` without reading (with the component axis)."""
        lo, hi = self._box(box)
        comps = self._fields[self._field(field)][2]
        grid = self._core.level_grid(to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1),
                                     _level(level, self.max_level))
        return to_zyx(grid.count, self._ndim) + ((comps,) if comps > 1 else ())

    def read(self, box: BoxLike | None = None, *, level: int | None = None, field: str | None = None,
             time: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Read the samples of levels ``0..level`` inside ``box`` (Local; Collective on a dataset opened with comm).

        Parameters
        ----------
        box : ((z0, y0, x0), (z1, y1, x1)), optional
            Exclusive upper corner; the whole dataset when None.
        level : int, optional
            Resolution level; None means full resolution (``max_level``). The result is the level's
            grid aligned to 0 inside the box, the same grid OpenVisus returns for ``max_resolution``.
        field, time : optional
            Default to the first field and the first timestep.
        out : numpy.ndarray, optional
            Filled in place (C-contiguous, right shape and dtype) instead of a new array.

        Examples
        --------
        >>> ds.read(box=((0, 0, 0), (2, 4, 4)), level=ds.max_level - 3)  # doctest: +SKIP
        """
        field, time = self._field(field), self._time(time)
        lo, hi = self._box(box)
        level = -1 if level is None else _level(level, self.max_level)
        lo3, hi3 = to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1)
        grid = self._core.level_grid(lo3, hi3, level)
        arr = self._alloc(field, to_zyx(grid.count, self._ndim), out)
        self.last_read_report = ReadReport._from_core(self._core.read_box(lo3, hi3, level, field, time, arr))
        return arr

    def __getitem__(self, key: Any) -> Any:
        """``ds["name"]``: the field as an array (:class:`hzio.Field`, Local). Any other key reads the first
        field at full resolution with NumPy's basic indexing (ints, slices with any step, ``...``) over
        ``shape``, component axis included: Local; Collective on a dataset opened with comm.
        """
        if isinstance(key, str):
            return self.field(key)
        return self._getitem(key, field=None, time=None)

    def _getitem(self, key, field, time):
        fast = self._read_plain_slices(key, field, time)
        if fast is not None:
            return fast

        def to_dataset_box():
            lo, hi, picks = plan_array(key, self.grid_shape, self._fields[self._field(field)][2])
            if lo is None:
                return None, None, picks
            return (tuple(a + o for a, o in zip(lo, self.origin)), tuple(a + o for a, o in zip(hi, self.origin)),
                    picks)

        return self._read_selected(to_dataset_box, field, time, None)

    def _read_plain_slices(self, key, field, time):
        """``ds[z0:z1, y0:y1, x0:x1]`` of a scalar field at full resolution (steps of 1, not empty), read
        without the general planning of :func:`plan_array`, whose Python cost is a large part of a small
        read; None for any other key, which takes the general path (and its errors)."""
        if self._collective or type(key) is not tuple or len(key) != self._ndim:
            return None
        name = next(iter(self._fields)) if field is None else field
        spec = self._fields.get(name)
        if spec is None or spec[2] != 1:
            return None
        lo, hi = [], []
        for k, a, b in zip(key, self._lo_zyx, self._hi_zyx):
            if type(k) is not slice or k.step not in (None, 1):
                return None
            start, stop, _ = k.indices(b - a)
            if start >= stop:
                return None
            lo.append(a + start)
            hi.append(a + stop)
        t = self._time(time)
        arr = empty_for_read([h - l for l, h in zip(lo, hi)], spec[1])
        self._raw_read_report = self._core.read_box(to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1), -1,
                                                    name, t, arr)
        return arr

    def _read_selected(self, to_dataset_box, field, time, level):
        """Read the box ``to_dataset_box()`` plans (``(lo, hi, picks)``, ``lo`` None when empty) and apply the picks."""
        lo, hi, picks = to_dataset_box()
        field = self._field(field)
        if lo is None:
            return empty_selection(picks, self._fields[field][1])
        return select(self.read((lo, hi), level=level, field=field, time=time), picks)

    def level(self, level: int, *, field: str | None = None, time: int | None = None) -> LevelView:
        """A view of the samples of levels ``0..level``, indexed in that level's grid (see :class:`hzio.LevelView`).

        Making the view is Local; its ``[...]`` is Local, and Collective on a dataset opened with comm.
        """
        return LevelView(self, _level(level, self.max_level), field, time)

    def field(self, name: str, *, time: int | None = None) -> Field:
        """The field ``name`` at timestep ``time`` (the first by default) as an array (:class:`hzio.Field`).

        Making it is Local (raises hzio.NotFoundError if the dataset has no such field); its reads are
        Local, and Collective on a dataset opened with comm.
        """
        return Field(self, self._field(name), None if time is None else self._time(time))

    def progressive(self, box: BoxLike | None = None, *, field: str | None = None, time: int | None = None,
                    levels: Sequence[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Local. Yield ``(level, array)`` coarse to fine; each step reads only blocks no earlier step read.

        ``levels`` defaults to every ``ndim``-th level ending at ``max_level`` (each step doubles the
        resolution along every axis). After each step, ``last_read_report`` is its
        :class:`~hzio.ProgressiveReport`.
        """
        field, time = self._field(field), self._time(time)
        lo, hi = self._box(box)
        if levels is None:
            levels = list(range(self.max_level, -1, -self._ndim))[::-1]
        reader = _core.ProgressiveRead.start(self._core, to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1),
                                             field, time, [int(v) for v in levels])
        while not reader.done:
            level = reader.next_level
            arr = self._alloc(field, to_zyx(reader.next_grid().count, self._ndim), None)
            self.last_read_report = ProgressiveReport._from_core(reader.next(arr), level=level)
            yield level, arr

    def query(self, field: str | None, lo: float, hi: float, *, time: int | None = None, box: BoxLike | None = None,
              level: int | None = None, mask: bool = False,
              component: int | None = None) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
        """Local. Find the samples whose value lies in ``[lo, hi]``, reading only blocks whose statistics allow it.

        Parameters
        ----------
        field : str
            The field to test (``None``: the first one).
        lo, hi : float
            Inclusive value range.
        time, box, level : optional
            As in :meth:`read`; the query covers the samples of levels ``0..level`` inside ``box``.
        mask : bool
            Return a boolean array over the ``read(box, level)`` grid instead of coordinates and values.
        component : int, optional
            Required for vector fields: the component to test.

        Returns
        -------
        (coords, values) or numpy.ndarray
            ``coords`` is an ``(n, ndim)`` int64 array of sample coordinates in ``[z, y, x]`` order, in
            C order; ``values`` holds the matching samples (``(n, ncomp)`` for vector fields).
            ``last_read_report`` (a :class:`~hzio.QueryReport`) tells blocks read and skipped and bytes read.

        Raises
        ------
        hzio.IoError
            "out of memory: the query matches more than N samples ...": the matches would take more than
            half the smaller of physical memory and the address-space limit. Query a smaller box or a
            coarser level, or ask for ``mask=True`` (one byte per sample of the box at the level).

        Examples
        --------
        >>> coords, values = ds.query("temperature", 1500, 2000)          # doctest: +SKIP
        >>> front = ds.query("temperature", 1500, 2000, mask=True)       # doctest: +SKIP
        """
        field, time = self._field(field), self._time(time)
        _, scalar, comps = self._fields[field]
        if component is None:
            if comps > 1:
                raise InvalidArgumentError(f"field {field!r} has {comps} components: pass component=")
            component = 0
        blo, bhi = self._box(box)
        level = -1 if level is None else _level(level, self.max_level)
        lo3, hi3 = to_xfirst(blo, self._ndim, 0), to_xfirst(bhi, self._ndim, 1)
        r = self._core.query(lo3, hi3, level, field, time, float(lo), float(hi), int(component), bool(mask))
        self.last_read_report = QueryReport._from_core(r.report, blocks_skipped=r.blocks_skipped)
        if mask:  # a view of the result's 0/1 bytes, no copy
            count = self._core.level_grid(lo3, hi3, level).count
            return r.mask.view(bool).reshape(to_zyx(count, self._ndim))
        pts = r.points[:, : self._ndim][:, ::-1]
        vals = r.values.view(scalar)
        vals = vals.reshape(-1, comps) if comps > 1 else vals
        # copies: the answer keeps no reference to the result's other buffers
        return np.ascontiguousarray(pts), vals.copy()

    # ---------------------------------------------------------------- blocks
    def blocks(self, field: str | None = None, *, time: int | None = None,
               existing_files_only: bool = False) -> np.ndarray:
        """Local. Where every block of a field and timestep is stored, as a NumPy structured array.

        With ``existing_files_only``, only the blocks of the data files that exist (a dataset may declare
        far more blocks than it has files for).

        Columns: ``block``, ``level``, ``file`` (path), ``present``, ``offset``, ``size`` (payload
        bytes), ``codec`` (flags low nibble: 0 raw, 3 zip, 7 lz4, 8 zfp), ``rowmajor``, ``slot`` (position
        in the file), ``entry`` (header table entry: field * blocks_per_file + slot), and the statistics
        ``stats_known``, ``count`` (real samples), ``min`` and ``max`` (per component: shape (n, ncomp)
        for vector fields), and ``checksummed`` (the sidecar holds checksums of the block's payload).
        Statistics are unknown (NaN) and checksums absent for blocks without a valid sidecar (run
        ``hzio index``). Raises hzio.CorruptError when a header table points outside its file, or (when
        the dataset was opened with ``verify``) does not match its checksum.

        Examples
        --------
        >>> b = ds.blocks("temperature")                          # doctest: +SKIP
        >>> b[(b["max"] >= 900) & b["present"]]["block"]          # blocks that may hold values >= 900
        """
        field, time = self._field(field), self._time(time)
        return block_table(self._core.block_infos(field, time, existing_files_only), self._fields[field][2],
                           self.blocks_per_file)

    def verify_block(self, block: int, *, field: str | None = None, time: int | None = None) -> None:
        """Local. Read one block, check it against its checksums (when the dataset was opened with ``verify``
        and its sidecar has them) and decode it; raises hzio.CorruptError (naming file and block) if it fails.

        A missing block is not an error (it reads as the field's default value).
        """
        field, time = self._field(field), self._time(time)
        self._core.verify_block(field, time, int(block))

    # ---------------------------------------------------------------- writes
    def write(self, array: Any, offset: Sequence[int] | None = None, *, field: str | None = None,
              time: int | None = None, copy: bool = True) -> None:
        """Local. Write ``array`` (``[z, y, x]`` plus a component axis for vector fields) at ``offset``.

        Every value must fit the field's dtype (converting without overflow, and exactly for integers:
        float64 data goes into a float32 field, ``1e40`` into float32 or ``300`` into uint8 raise
        hzio.InvalidArgumentError); the data is copied before returning and committed
        on :meth:`flush` or :meth:`close`. ``copy`` is accepted for the same call to work on a dataset
        opened with ``comm=`` (where ``copy=False`` defers reading the array to the flush); here the
        samples are always encoded before returning.
        """
        self._core.write_box(*self._write_args(array, offset, field, time))

    def _write_args(self, array: Any, offset: Sequence[int] | None, field: str | None,
                    time: int | None) -> tuple[tuple[int, int, int], tuple[int, int, int], str, int, np.ndarray]:
        field, time = self._field(field), self._time(time)
        _, scalar, comps = self._fields[field]
        data = check_samples(array, field, scalar, comps, self._ndim)
        spatial = data.shape[:-1] if comps > 1 else data.shape
        try:
            offset = self.origin if offset is None else tuple(operator.index(v) for v in offset)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"offset must be {self._ndim} integers ([z, y, x]), got {offset!r}") from None
        if len(offset) != self._ndim:
            raise InvalidArgumentError(f"offset needs {self._ndim} values ([z, y, x] order), got {offset}")
        hi = tuple(o + n for o, n in zip(offset, spatial))
        self._check_inside(offset, hi, f"write of shape {tuple(data.shape)} at offset {offset}: box")
        return to_xfirst(offset, self._ndim, 0), to_xfirst(hi, self._ndim, 1), field, time, data

    def __setitem__(self, key: Any, value: Any) -> None:
        """Local. ``ds[z0:z1, y0:y1, x0:x1] = values`` writes the first field (see :meth:`hzio.Field.__setitem__`)."""
        self._setitem(key, value, field=None, time=None)

    def _setitem(self, key, value, field, time):
        field = self._field(field)
        _, scalar, comps = self._fields[field]
        keys = normalize_key(key, self.grid_shape + ((comps,) if comps > 1 else ()))
        if comps > 1 and (not isinstance(keys[-1], slice) or keys[-1].indices(comps) != (0, comps, 1)):
            raise InvalidArgumentError(f"assignment to field {field!r} must cover all of its {comps} components")
        lo, hi, dropped = box_of_slices(tuple(keys[: self._ndim]), self.grid_shape, "assignment")
        lo = tuple(a + o for a, o in zip(lo, self.origin))
        hi = tuple(a + o for a, o in zip(hi, self.origin))
        value = fit_samples(value, scalar, f"field {field!r}")
        shape = tuple(h - l for l, h in zip(lo, hi))
        tail = (comps,) if comps > 1 else ()
        target = tuple(n for a, n in enumerate(shape) if a not in dropped) + tail
        try:
            value = np.broadcast_to(value, target).reshape(shape + tail)
        except ValueError:
            raise InvalidArgumentError(f"cannot assign values of shape {value.shape} to a selection of shape "
                                       f"{target}") from None
        self.write(value, offset=lo, field=field, time=time)

    def flush(self) -> WriteReport:
        """Local. Commit every write so far: data files made durable first, then the .idx replaced atomically.

        Returns the :class:`~hzio.WriteReport` (also kept as ``last_write_report``): seconds per phase
        (``max`` and ``mean`` over ranks), bytes, and per-level blocks, bytes and times.
        """
        self.last_write_report = WriteReport._from_core(self._core.flush())
        return self.last_write_report

    def close(self) -> None:
        """Local. Commit and close. Further use raises hzio.InvalidArgumentError.

        If the commit fails, the writes since the last commit are dropped and the dataset is closed all
        the same; a dataset created by this object that never committed is removed again.
        """
        if not self._core.closed:
            self.last_write_report = WriteReport._from_core(self._core.close())

    def __enter__(self: _D) -> _D:
        """Local. The dataset itself."""
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        """Local: close on normal exit; on an exception drop the uncommitted writes (no commit)."""
        if exc_type is None:
            self.close()
        elif not self._core.closed:
            self._core.abandon()  # an exception inside the block: keep the last committed state
        return False
