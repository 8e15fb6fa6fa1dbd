"""The array objects of a dataset: :class:`Field` (``ds["name"]``, ``ds.field(name)``), one field at one
timestep at full resolution, and :class:`LevelView` (``ds.level(h)``, ``field.level(h)``), the same at a
coarser level, indexed in that level's own grid. Both follow NumPy's array protocol; their reads are
Local, and Collective on a dataset opened with ``comm``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ._indexing import plan_array
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .dataset import Dataset


def check_level(level: int, max_level: int) -> int:
    """Local. Return ``level`` as an int, or raise InvalidArgumentError outside ``[0, max_level]``."""
    try:
        level = int(level)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"level must be an integer, got {level!r}") from None
    if not 0 <= level <= max_level:
        raise InvalidArgumentError(f"level {level} is outside [0, {max_level}]")
    return level


class _ArrayView:
    """What NumPy, dask and xarray ask of an array, for one field and timestep: the subclasses give
    ``shape`` and ``__getitem__``."""

    #: ``np.asarray`` (``__array__``) of a view larger than this many bytes raises hzio.InvalidArgumentError
    #: instead of reading it all; set it on :class:`hzio.Field` to change it for every view.
    array_limit_bytes: int = 4 << 30

    def __init__(self, ds: Dataset, field: str, time: int | None) -> None:
        self._ds, self._field, self._time = ds, field, time

    shape: tuple[int, ...]

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy basic indexing over ``shape`` (Local; Collective on a dataset opened with comm)."""
        raise NotImplementedError

    @property
    def name(self) -> str:
        """Local. The field's name."""
        return self._field

    @property
    def time(self) -> int:
        """Local. The timestep read (the dataset's first unless chosen)."""
        return self._ds._time(self._time)

    @property
    def dtype(self) -> np.dtype:
        """Local. The NumPy dtype of one sample's component (``float32`` for a ``float32[3]`` field)."""
        return self._ds._fields[self._field][1]

    @property
    def components(self) -> int:
        """Local. Values per sample: 1, or the length of the last axis of a vector field."""
        return self._ds._fields[self._field][2]

    @property
    def ndim(self) -> int:
        """Local. ``len(shape)``: the grid's axes, plus one for a vector field's components."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Local. Number of values (``prod(shape)``)."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Local. Bytes of the whole array once read (``size * dtype.itemsize``)."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        """Local. Length of the first axis."""
        return self.shape[0]

    def __iter__(self) -> Iterator[np.ndarray]:
        """Planes along the first axis, one read each (Local; Collective on a dataset opened with comm)."""
        for i in range(len(self)):
            yield self[i]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Read the whole array (Local; Collective on a dataset opened with comm).

        Raises hzio.InvalidArgumentError when it would exceed ``array_limit_bytes`` (4 GiB by default):
        index a box (``view[...]`` reads everything on purpose) or a coarser level instead.
        """
        if self.nbytes > self.array_limit_bytes:
            raise InvalidArgumentError(
                f"converting {self!r} to a NumPy array would read {self.nbytes} bytes, more than "
                f"hzio.Field.array_limit_bytes ({self.array_limit_bytes}); index a box or a coarser level, or "
                "raise the limit")
        out = self[...]
        return out if dtype is None else out.astype(dtype, copy=False)


class Field(_ArrayView):
    """One field of a dataset at one timestep, as an array: ``ds["temperature"]`` or ``ds.field(name, time=t)``.

    ``shape`` is the dataset's grid (``[z, y, x]``, ``[y, x]`` or ``[x]``) plus a last axis of
    ``components`` for vector fields; indexing is NumPy's basic indexing over all of these axes
    (``f[..., 1]`` is component 1 of every sample), assignment takes step-1 slices and all components.

    Examples
    --------
    >>> import numpy as np, hzio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "wind.idx")
    >>> with hzio.create(path, shape=(4, 8, 8), fields={"wind": "float32[3]", "p": "f8"}) as ds:
    ...     ds["wind"][...] = np.ones((4, 8, 8, 3))
    ...     ds["p"][:, :, 2:] = 7.5
    >>> with hzio.open(path) as ds:
    ...     w = ds["wind"]
    ...     print(w.shape, w.dtype, w[0, 0, :2, 1], "p" in ds, np.asarray(ds["p"])[0, 0])
    (4, 8, 8, 3) float32 [1. 1.] True [0.  0.  7.5 7.5 7.5 7.5 7.5 7.5]
    """

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        """Local. The grid's shape, plus the component axis of vector fields."""
        comps = self.components
        return self._ds.grid_shape + ((comps,) if comps > 1 else ())

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy basic indexing (ints, slices with any step, ``...``) over :attr:`shape`.

        Local; Collective on a dataset opened with comm.
        """
        return self._ds._getitem(key, field=self._field, time=self._time)

    def __setitem__(self, key: Any, value: Any) -> None:
        """Local. ``f[z0:z1, y0:y1, x0:x1] = values`` for step-1 slices and ints, every component.

        ``values`` broadcasts as in NumPy and must fit the dtype (:func:`hzio.Dataset.write` says how).
        """
        self._ds._setitem(key, value, field=self._field, time=self._time)

    def read(self, box: Any = None, *, level: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """``ds.read(box, level=level, field=name, time=time)`` (Local; Collective on a dataset opened with comm)."""
        return self._ds.read(box, level=level, field=self._field, time=self._time, out=out)

    def level(self, level: int) -> LevelView:
        """Local. This field and timestep at a coarser level, indexed in that level's grid."""
        return LevelView(self._ds, check_level(level, self._ds.max_level), self._field, self._time)

    def __repr__(self) -> str:
        time = "first" if self._time is None else self._time
        return f"<hzio.Field {self._field!r} of {self._ds.path!r} time={time} shape={self.shape} dtype={self.dtype}>"


class LevelView(_ArrayView):
    """``ds.level(h)`` or ``field.level(h)``: the samples of levels ``0..h`` (the grid :meth:`hzio.Dataset.read`
    returns at level ``h``), indexed in that grid: ``view.shape`` is its shape and ``view[i]`` its plane ``i``.

    Examples
    --------
    >>> import numpy as np, hzio, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "ramp.idx")
    >>> with hzio.create(path, shape=(8, 8), fields={"t": "int32"}) as ds:
    ...     ds.write(np.arange(64, dtype=np.int32).reshape(8, 8))
    >>> with hzio.open(path) as ds:
    ...     lv = ds.level(4)
    ...     print(lv.shape, lv[-1].tolist(), lv.spacing)
    (4, 4) [48, 50, 52, 54] (2, 2)
    """

    def __init__(self, ds: Dataset, level: int, field: str | None, time: int | None) -> None:
        super().__init__(ds, ds._field(field), time)
        self._level = level
        self._origin, self._spacing, self._count = ds._level_grid(level)

    @property
    def level(self) -> int:
        """Local. The resolution level."""
        return self._level

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        """Local. The level grid's shape over the whole dataset, plus the component axis of vector fields."""
        comps = self.components
        return self._count + ((comps,) if comps > 1 else ())

    @property
    def spacing(self) -> tuple[int, ...]:
        """Local. Full-resolution samples between neighbours of this level, per grid axis."""
        return self._spacing

    @property
    def origin(self) -> tuple[int, ...]:
        """Local. Dataset coordinates of the level grid's sample ``[0, 0, 0]``."""
        return self._origin

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy basic indexing over :attr:`shape` (the level's own grid).

        Local; Collective on a dataset opened with comm.
        """
        def to_dataset_box():
            lo, hi, picks = plan_array(key, self._count, self.components)
            if lo is None:
                return None, None, picks
            box_lo = tuple(o + a * s for o, a, s in zip(self._origin, lo, self._spacing))
            box_hi = tuple(o + (b - 1) * s + 1 for o, b, s in zip(self._origin, hi, self._spacing))
            return box_lo, box_hi, picks

        return self._ds._read_selected(to_dataset_box, self._field, self._time, self._level)

    def __repr__(self) -> str:
        return f"<hzio.LevelView {self._field!r} level={self._level} of {self._ds.path!r} shape={self.shape}>"
