"""The NumPy-facing :class:`Dataset`: create/open, read boxes at any level, slicing, progressive reads.

Arrays are C order ``[z, y, x]`` (``[y, x]`` for 2-D datasets) with a trailing component axis for
vector fields, exactly as OpenVisus returns them.
"""

import json

import numpy as np

from . import _core
from ._indexing import box_of_slices, plan, select
from ._types import empty_for_read, parse_dtype, to_xfirst, to_zyx
from ._views import FieldView, LevelView
from ._views import check_level as _level
from .errors import InvalidArgumentError, NotFoundError


class Dataset:
    """An IDX dataset opened by :func:`hzio.create` or :func:`hzio.open`. Use it as a context manager.

    Examples
    --------
    >>> import numpy as np, hzio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.idx")
    >>> with hzio.create(path, shape=(4, 8, 16), fields={"t": "float32"}) as ds:
    ...     ds.write(np.arange(512, dtype=np.float32).reshape(4, 8, 16))
    >>> with hzio.open(path) as ds:
    ...     print(ds.shape, ds[1, 2, 3], ds.read(level=0).shape)
    (4, 8, 16) 147.0 (1, 1, 1)
    """

    def __init__(self, core):
        self._core = core
        self._ndim = core.ndim
        self._fields = {name: parse_dtype(dtype) for name, dtype, _, _, _ in core.fields}
        self.last_read_report = None
        self.last_write_report = None

    # ---------------------------------------------------------------- metadata
    @property
    def path(self):
        """Absolute path of the .idx file."""
        return self._core.path

    @property
    def shape(self):
        """Samples per axis, ``(nz, ny, nx)`` or ``(ny, nx)``."""
        return tuple(h - o for h, o in zip(to_zyx(self._core.dims, self._ndim), self.origin))

    @property
    def origin(self):
        """The dataset box's lower corner ([z, y, x]); 0 except for some files written elsewhere.

        ``box`` and ``offset`` arguments are in dataset coordinates; slicing (``ds[...]``) indexes the
        array that starts at ``origin``, like a NumPy array of ``shape``.
        """
        return to_zyx(self._core.origin, self._ndim)

    @property
    def ndim(self):
        return self._ndim

    @property
    def fields(self):
        """Field name to dtype string (``"float32"``, ``"float32[3]"``), in file order."""
        return {name: spec[0] for name, spec in self._fields.items()}

    @property
    def times(self):
        """Timesteps, ascending."""
        return list(self._core.times)

    @property
    def max_level(self):
        """The finest resolution level (the bitmask length)."""
        return self._core.max_level

    @property
    def bitmask(self):
        return self._core.bitmask

    @property
    def bits_per_block(self):
        return self._core.bits_per_block

    @property
    def blocks_per_file(self):
        return self._core.blocks_per_file

    @property
    def block_count(self):
        return self._core.block_count

    @property
    def codecs(self):
        """Field name to codec spec of new blocks (``"raw"``, ``"zip"``, ...)."""
        return {name: codec for name, _, codec, _, _ in self._core.fields}

    @property
    def layouts(self):
        """Field name to layout of new blocks (``"hzorder"`` or ``"rowmajor"``)."""
        return {name: layout for name, _, _, layout, _ in self._core.fields}

    def __repr__(self):
        state = "closed" if self._core.closed else "open"
        fields = ", ".join(f"{k}: {v}" for k, v in self.fields.items())
        return (f"<hzio.Dataset {self.path!r} shape={self.shape} fields={{{fields}}} times={self.times} "
                f"max_level={self.max_level} bitmask={self.bitmask} ({state})>")

    # ---------------------------------------------------------------- helpers
    def _field(self, field):
        if field is None:
            return next(iter(self._fields))
        if field not in self._fields:
            raise NotFoundError(f"dataset {self.path} has no field {field!r}; fields: {list(self._fields)}")
        return field

    def _time(self, time):
        return self.times[0] if time is None else int(time)

    def _box(self, box):
        if box is None:
            return self.origin, to_zyx(self._core.dims, self._ndim)
        lo, hi = box
        if len(lo) != self._ndim or len(hi) != self._ndim:
            raise InvalidArgumentError(f"box needs {self._ndim} coordinates per corner ([z, y, x] order), got {box!r}")
        return tuple(int(v) for v in lo), tuple(int(v) for v in hi)

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
    def level_shape(self, level, box=None):
        """Shape of ``read(box, level)`` without reading."""
        lo, hi = self._box(box)
        _, _, count = self._core.level_grid(to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1), level)
        return to_zyx(count, self._ndim)

    def read(self, box=None, level=None, field=None, time=None, out=None):
        """Read the samples of levels ``0..level`` inside ``box``.

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
        _, _, count = self._core.level_grid(lo3, hi3, level)
        arr = self._alloc(field, to_zyx(count, self._ndim), out)
        self.last_read_report = self._core.read_box(lo3, hi3, level, field, time, arr)
        return arr

    def __getitem__(self, key):
        """Full-resolution reads with NumPy's basic indexing (ints, slices with any step, ``...``)."""
        return self._getitem(key, field=None, time=None)

    def _getitem(self, key, field, time):
        field = self._field(field)
        lo, hi, picks = plan(key, self.shape)
        if lo is not None:
            lo = tuple(a + o for a, o in zip(lo, self.origin))
            hi = tuple(a + o for a, o in zip(hi, self.origin))
        if lo is None:
            _, scalar, comps = self._fields[field]
            shape = tuple(len(p) for p in picks if not isinstance(p, int)) + ((comps,) if comps > 1 else ())
            return np.empty(shape, dtype=scalar)
        return select(self.read((lo, hi), field=field, time=time), picks)

    def level(self, level, field=None, time=None):
        """A view whose ``[...]`` reads the samples of levels ``0..level`` inside a full-resolution box.

        Only step-1 slices, ints and ``...`` are accepted; an int selects one plane and drops the axis.
        """
        return LevelView(self, _level(level, self.max_level), field, time)

    def field(self, name, time=None):
        """A view with the same slicing for another field (and optionally another timestep)."""
        return FieldView(self, self._field(name), time)

    def progressive(self, box=None, field=None, time=None, levels=None):
        """Yield ``(level, array)`` coarse to fine; each step reads only blocks no earlier step read.

        ``levels`` defaults to every ``ndim``-th level ending at ``max_level`` (each step doubles the
        resolution along every axis).
        """
        field, time = self._field(field), self._time(time)
        lo, hi = self._box(box)
        if levels is None:
            levels = list(range(self.max_level, -1, -self._ndim))[::-1]
        reader = _core.ProgressiveRead.start(self._core, to_xfirst(lo, self._ndim, 0), to_xfirst(hi, self._ndim, 1),
                                             field, time, [int(v) for v in levels])
        while not reader.done:
            level = reader.next_level
            _, _, count = reader.next_grid()
            arr = self._alloc(field, to_zyx(count, self._ndim), None)
            self.last_read_report = reader.next(arr)
            self.last_read_report["level"] = level
            yield level, arr

    def query(self, field, lo, hi, time=None, box=None, level=None, mask=False, component=None):
        """Find the samples whose value lies in ``[lo, hi]``, reading only blocks whose statistics allow it.

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
            ``last_read_report`` tells blocks read and skipped and bytes read.

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
        self.last_read_report = r["report"]
        if mask:
            _, _, count = self._core.level_grid(lo3, hi3, level)
            return np.frombuffer(r["mask"], dtype=np.uint8).astype(bool).reshape(to_zyx(count, self._ndim))
        pts = np.frombuffer(r["points"], dtype=np.int64).reshape(-1, 3)[:, : self._ndim][:, ::-1]
        vals = np.frombuffer(r["values"], dtype=scalar)
        vals = vals.reshape(-1, comps) if comps > 1 else vals
        return np.ascontiguousarray(pts), vals.copy()

    # ---------------------------------------------------------------- blocks
    def blocks(self, field=None, time=None):
        """Where every block of a field and timestep is stored, as a NumPy structured array.

        Columns: ``block``, ``level``, ``file`` (path), ``present``, ``offset``, ``size`` (payload
        bytes), ``codec`` (flags low nibble: 0 raw, 3 zip, 7 lz4, 8 zfp), ``rowmajor``, ``slot`` (position
        in the file), ``entry`` (header table entry: field * blocks_per_file + slot), and the statistics
        ``stats_known``, ``count`` (real samples), ``min`` and ``max`` (per component: shape (n, ncomp)
        for vector fields). Statistics are unknown (NaN) for blocks without a valid sidecar (run
        ``hzio index``). Raises hzio.CorruptError when a header table points outside its file.

        Examples
        --------
        >>> b = ds.blocks("temperature")                          # doctest: +SKIP
        >>> b[(b["max"] >= 900) & b["present"]]["block"]          # blocks that may hold values >= 900
        """
        field, time = self._field(field), self._time(time)
        comps = self._fields[field][2]
        rows = self._core.block_infos(field, time)
        width = max([len(r["file"]) for r in rows] + [1])
        vshape = (comps,) if comps > 1 else ()
        dt = np.dtype([("block", np.int64), ("level", np.int32), ("file", f"U{width}"), ("present", bool),
                       ("offset", np.uint64), ("size", np.uint32), ("codec", np.uint8), ("rowmajor", bool),
                       ("slot", np.int64), ("entry", np.int64), ("stats_known", bool), ("count", np.uint64),
                       ("min", np.float64, vshape), ("max", np.float64, vshape)])
        out = np.zeros(len(rows), dtype=dt)
        bpf = self.blocks_per_file
        for i, r in enumerate(rows):
            present = r["offset"] != 0 and r["size"] != 0
            known = r["stats_known"] and (r["count"] > 0 or not present)
            mn = r["min"] if known and r["count"] > 0 else [np.nan] * comps
            mx = r["max"] if known and r["count"] > 0 else [np.nan] * comps
            flags = r["flags"]
            out[i] = (r["block"], r["level"], r["file"], present, r["offset"], r["size"],
                      flags & _core.BLOCK_FLAG_CODEC_MASK, bool(flags & _core.BLOCK_FLAG_ROW_MAJOR), r["entry"] % bpf,
                      r["entry"], known, r["count"] if known else 0,
                      mn if comps > 1 else mn[0], mx if comps > 1 else mx[0])
        return out

    def verify_block(self, block, field=None, time=None):
        """Read and decode one block; raises hzio.CorruptError (naming file and block) if it cannot be.

        A missing block is not an error (it reads as the field's default value).
        """
        field, time = self._field(field), self._time(time)
        self._core.verify_block(field, time, int(block))

    # ---------------------------------------------------------------- writes
    def write(self, array, offset=None, field=None, time=None, copy=True):
        """Write ``array`` (``[z, y, x]`` plus a component axis for vector fields) at ``offset`` (Local).

        The dtype must cast safely to the field's; the data is copied before returning and committed
        on :meth:`flush` or :meth:`close`. ``copy`` is accepted for the same call to work on a dataset
        opened with ``comm=`` (where ``copy=False`` defers reading the array to the flush); here the
        samples are always encoded before returning.
        """
        self._core.write_box(*self._write_args(array, offset, field, time))

    def _write_args(self, array, offset, field, time):
        field, time = self._field(field), self._time(time)
        _, scalar, comps = self._fields[field]
        array = np.asarray(array)
        if not np.can_cast(array.dtype, scalar, casting="safe"):
            raise InvalidArgumentError(f"cannot write {array.dtype} data to field {field!r} of dtype {scalar} "
                                       "without losing values; convert it explicitly")
        spatial = array.shape[:-1] if comps > 1 else array.shape
        if array.ndim != self._ndim + (comps > 1) or (comps > 1 and array.shape[-1] != comps):
            extra = f" plus a last axis of {comps}" if comps > 1 else ""
            raise InvalidArgumentError(f"field {field!r} needs an array of {self._ndim} axes{extra}, got shape "
                                       f"{array.shape}")
        offset = (0,) * self._ndim if offset is None else tuple(int(v) for v in offset)
        if len(offset) != self._ndim:
            raise InvalidArgumentError(f"offset needs {self._ndim} values ([z, y, x] order), got {offset}")
        hi = tuple(o + n for o, n in zip(offset, spatial))
        data = np.ascontiguousarray(array, dtype=scalar)
        return to_xfirst(offset, self._ndim, 0), to_xfirst(hi, self._ndim, 1), field, time, data

    def __setitem__(self, key, value):
        """``ds[z0:z1, y0:y1, x0:x1] = array`` for step-1 slices (ints keep NumPy's axis dropping)."""
        lo, hi, dropped = box_of_slices(key, self.shape, "assignment")
        field = self._field(None)
        comps = self._fields[field][2]
        lo = tuple(a + o for a, o in zip(lo, self.origin))
        hi = tuple(a + o for a, o in zip(hi, self.origin))
        if np.isscalar(value) and not isinstance(value, np.generic):
            cast = np.asarray(value, dtype=self._fields[field][1])
            if cast != value:
                raise InvalidArgumentError(f"{value!r} does not fit field {field!r} of dtype {cast.dtype} exactly")
            value = cast
        value = np.asarray(value)
        shape = tuple(h - l for l, h in zip(lo, hi))
        target = tuple(n for a, n in enumerate(shape) if a not in dropped) + ((comps,) if comps > 1 else ())
        value = np.broadcast_to(value, target).reshape(shape + ((comps,) if comps > 1 else ()))
        self.write(value, offset=lo, field=field)

    def flush(self):
        """Commit every write so far: data files made durable first, then the .idx replaced atomically.

        Returns the write report (also kept as ``last_write_report``): seconds per phase (``max`` and
        ``mean`` over ranks), bytes, and per-level blocks, bytes and times.
        """
        self.last_write_report = json.loads(self._core.flush())
        return self.last_write_report

    def close(self):
        """Commit and close. Further use raises hzio.InvalidArgumentError.

        If the commit fails, the writes since the last commit are dropped and the dataset is closed all
        the same; a dataset created by this object that never committed is removed again.
        """
        if not self._core.closed:
            self.last_write_report = json.loads(self._core.close())

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif not self._core.closed:
            self._core.abandon()  # an exception inside the block: keep the last committed state
        return False
