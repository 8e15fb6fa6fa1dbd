"""Datasets written with partitions in local index space (``hzio.create(..., comm=, partitions=R,
index_space="local")``): one IDX dataset per partition and an OpenVisus ``.midx`` mosaic placing them
(docs/guide/parallel-io.md "Partitions"), read as one dataset by :class:`MosaicDataset`.

Each part is indexed by the bitmask's characters after the first ``log2(R)`` (the partition template),
so level ``L >= log2(R)`` of the whole domain is level ``L - log2(R)`` of every part, sample for sample.
The coarser levels, which no part holds as such, are synthesised from the parts: a part's level 0 is
its first sample, which is a sample of every coarser level whose grid reaches it.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from . import _core
from ._indexing import empty_selection, plan_array, select
from ._types import BoxLike, empty_for_read, to_zyx
from ._views import check_level as _level
from .errors import FormatError, InvalidArgumentError, NotFoundError, UnsupportedError
from .parallel import ParallelDataset

_MAX_MOSAIC_BYTES = 256 << 20  # a line of about 120 bytes per part, up to hzio.mosaic's 2^20 partitions


def mosaic_path(path: str) -> str | None:
    """Local. The ``.midx`` that ``path`` names: itself, or the mosaic a local-index-space create wrote for
    it (``sim.idx`` gives ``sim.midx``) when no ``.idx`` is there; else None."""
    if path.endswith(".midx"):
        return path
    midx = _core.mosaic_path(path)
    return midx if not os.path.exists(path) and os.path.exists(midx) else None


def _read_mosaic(midx: str) -> dict[str, Any]:
    try:
        with open(midx, encoding="utf-8") as f:
            text = f.read(_MAX_MOSAIC_BYTES + 1)
    except FileNotFoundError:
        raise NotFoundError(f"no mosaic at {midx}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FormatError(f"cannot read the mosaic {midx}: {e}") from None
    if len(text) > _MAX_MOSAIC_BYTES:
        raise FormatError(f"mosaic {midx} is larger than {_MAX_MOSAIC_BYTES} bytes")
    ndim, dims, bitmask, bits_per_block, partitions, parts, part_bitmask = _core.parse_mosaic(text)
    return {"ndim": ndim, "shape": to_zyx(dims, ndim), "bitmask": bitmask, "bits_per_block": bits_per_block,
            "partitions": partitions, "part_bitmask": part_bitmask,
            "parts": [(p, os.path.join(os.path.dirname(midx), name), to_zyx(off, ndim), to_zyx(extent, ndim))
                      for p, name, off, extent in parts]}


def _spacing(bitmask: str, ndim: int, level: int) -> tuple[int, ...]:
    """``[z, y, x]`` spacing of the samples of levels ``0..level``: 2 to the number of each axis's
    characters after position ``level``."""
    after = bitmask[1 + level:]
    return tuple(1 << after.count(str(ndim - 1 - i)) for i in range(ndim))


def _grid(lo, hi, spacing):
    """Origin and count of the lattice of ``spacing`` within ``[lo, hi)``."""
    origin = tuple(-(-a // s) * s for a, s in zip(lo, spacing))
    count = tuple(max(0, -(-(h - o) // s)) for o, h, s in zip(origin, hi, spacing))
    return origin, count


class MosaicDataset:
    """A ``.midx`` mosaic of partition datasets, read as one dataset; a context manager. Its methods and
    properties are Local.

    ``read``, ``level_shape``, ``query``, ``blocks`` and ``ds[...]`` take the whole domain's
    ``[z, y, x]`` coordinates and levels, as :class:`hzio.Dataset` does; ``parts`` gives each part's
    partition, offset and :class:`hzio.Dataset`. ``times`` are the timesteps every part has committed.
    """

    def __init__(self, midx: str, **open_options: Any) -> None:
        from . import open as open_dataset  # the package's open, defined once hzio is imported

        info = _read_mosaic(midx)
        self.path = midx
        self._ndim: int = info["ndim"]
        self.grid_shape: tuple[int, ...] = tuple(info["shape"])
        self.bitmask: str = info["bitmask"]
        self.max_level: int = len(self.bitmask) - 1
        self.partitions: int = info["partitions"]
        self._k = self.partitions.bit_length() - 1
        self.parts: list[tuple[int, tuple[int, ...], Any]] = []
        try:
            for p, path, offset, extent in info["parts"]:
                ds = open_dataset(path, **open_options)
                self.parts.append((p, offset, ds))
                if ds.grid_shape != extent or ds.bitmask != info["part_bitmask"]:
                    raise FormatError(f"{path} is not the part {midx} places there: shape {ds.grid_shape} and "
                                      f"bitmask {ds.bitmask}, not {extent} and {info['part_bitmask']}")
        except Exception:
            self.close()
            raise
        first = self.parts[0][2]
        self._fields = dict(first._fields)
        self.last_read_report: Any = None

    # ------------------------------------------------------------------ metadata
    @property
    def fields(self) -> dict[str, str]:
        """Field names and dtypes, as the parts have them."""
        return self.parts[0][2].fields

    @property
    def times(self) -> list[int]:
        """The timesteps every part lists."""
        common = set(self.parts[0][2].times)
        for _, _, ds in self.parts[1:]:
            common &= set(ds.times)
        return sorted(common)

    @property
    def shape(self) -> tuple[int, ...]:
        comps = self._fields[next(iter(self._fields))][2]
        return self.grid_shape + ((comps,) if comps > 1 else ())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._fields[next(iter(self._fields))][1])

    def __repr__(self) -> str:
        return (f"<hzio.MosaicDataset {self.path!r} shape={self.shape} fields={self.fields} times={self.times} "
                f"max_level={self.max_level} bitmask={self.bitmask} parts={len(self.parts)}>")

    def close(self) -> None:
        """Close every part."""
        for _, _, ds in self.parts:
            ds.close()

    def __enter__(self) -> MosaicDataset:
        """Local. The mosaic itself, for a ``with`` block."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Local. :meth:`close`."""
        self.close()

    # ------------------------------------------------------------------ helpers
    def _field(self, field):
        if field is None:
            return next(iter(self._fields))
        if field not in self._fields:
            raise NotFoundError(f"dataset {self.path} has no field {field!r}; fields: {list(self._fields)}")
        return field

    def _time(self, time):
        times = self.times
        if time is None:
            if not times:
                raise NotFoundError(f"no timestep of {self.path} is committed in every part")
            return times[0]
        if int(time) not in times:
            raise NotFoundError(f"dataset {self.path} has no timestep {time} in every part (times: {times})")
        return int(time)

    def _box(self, box):
        if box is None:
            return (0,) * self._ndim, self.grid_shape
        try:
            lo, hi = (tuple(int(v) for v in c) for c in box)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"box must be ((z0, y0, x0), (z1, y1, x1)) with integers, got {box!r}") from None
        if len(lo) != self._ndim or len(hi) != self._ndim or not all(
                0 <= a < b <= n for a, b, n in zip(lo, hi, self.grid_shape)):
            raise InvalidArgumentError(f"box {box!r} ([z, y, x]) is empty or not inside the dataset box "
                                       f"{((0,) * self._ndim, self.grid_shape)}")
        return lo, hi

    def _pieces(self, lo, hi, level):
        """Per part reaching the box at ``level``: (dataset, its level, its box, where its samples go in
        the output grid, and the output grid's origin and count)."""
        spacing = _spacing(self.bitmask, self._ndim, level)
        origin, count = _grid(lo, hi, spacing)
        out = []
        for _, offset, ds in self.parts:
            plo = tuple(max(a, o) for a, o in zip(lo, offset))
            phi = tuple(min(b, o + n) for b, o, n in zip(hi, offset, ds.grid_shape))
            sub_origin, sub_count = _grid(plo, phi, spacing)
            if min(sub_count, default=1) <= 0:
                continue
            at = tuple((a - o) // s for a, o, s in zip(sub_origin, origin, spacing))
            local_lo = tuple(a - o for a, o in zip(sub_origin, offset))
            if level >= self._k:
                local_hi = tuple(b - o for b, o in zip(phi, offset))
                out.append((ds, level - self._k, (local_lo, local_hi), at, sub_count))
            elif all(v == 0 for v in local_lo):  # a coarse level: the part's first sample, if on the grid
                out.append((ds, 0, ((0,) * self._ndim, (1,) * self._ndim), at, (1,) * self._ndim))
        return origin, count, out

    # ------------------------------------------------------------------ reads
    def level_shape(self, level: int, box: BoxLike | None = None, *, field: str | None = None) -> tuple[int, ...]:
        """Local. Shape of ``read(box, level=level, field=field)`` (with the component axis)."""
        lo, hi = self._box(box)
        comps = self._fields[self._field(field)][2]
        _, count = _grid(lo, hi, _spacing(self.bitmask, self._ndim, _level(level, self.max_level)))
        return count + ((comps,) if comps > 1 else ())

    def read(self, box: BoxLike | None = None, *, level: int | None = None, field: str | None = None,
             time: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Local. The samples of levels ``0..level`` inside ``box``, as :meth:`hzio.Dataset.read`."""
        field, time = self._field(field), self._time(time)
        lo, hi = self._box(box)
        level = self.max_level if level is None else _level(level, self.max_level)
        _, count, pieces = self._pieces(lo, hi, level)
        _, scalar, comps = self._fields[field]
        shape = count + ((comps,) if comps > 1 else ())
        if out is None:
            out = empty_for_read(shape, scalar)
        elif out.shape != shape or out.dtype != scalar:
            raise InvalidArgumentError(f"out must be a {scalar} array of shape {shape}, got {out.dtype} {out.shape}")
        reports = []
        for ds, part_level, part_box, at, n in pieces:
            got = ds.read(part_box, level=part_level, field=field, time=time)
            out[tuple(slice(a, a + c) for a, c in zip(at, n))] = got[tuple(slice(0, c) for c in n)]
            reports.append(ds.last_read_report)
        self.last_read_report = tuple(reports)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        """Local. NumPy basic indexing of the first field at full resolution, as :class:`hzio.Dataset`."""
        field = next(iter(self._fields))
        lo, hi, picks = plan_array(key, self.grid_shape, self._fields[field][2])
        if lo is None:
            return empty_selection(picks, self._fields[field][1])
        return select(self.read((lo, hi), field=field), picks)

    def query(self, field: str | None, lo: float, hi: float, *, time: int | None = None, box: BoxLike | None = None,
              level: int | None = None, mask: bool = False,
              component: int | None = None) -> tuple[np.ndarray, np.ndarray] | np.ndarray:
        """Local. The samples whose value lies in ``[lo, hi]``, as :meth:`hzio.Dataset.query`: each part
        answers for its samples from its block statistics, reading only the blocks that may match."""
        field, time = self._field(field), self._time(time)
        blo, bhi = self._box(box)
        level = self.max_level if level is None else _level(level, self.max_level)
        spacing = _spacing(self.bitmask, self._ndim, level)
        origin, count, pieces = self._pieces(blo, bhi, level)
        result = np.zeros(count if mask else (0,) * self._ndim, dtype=bool)
        coords, values, reports = [], [], []
        for ds, part_level, part_box, at, n in pieces:
            if mask:
                m = ds.query(field, lo, hi, time=time, box=part_box, level=part_level, mask=True, component=component)
                result[tuple(slice(a, a + c) for a, c in zip(at, n))] = m[tuple(slice(0, c) for c in n)]
            else:
                c, v = ds.query(field, lo, hi, time=time, box=part_box, level=part_level, component=component)
                grid_lo = tuple(o + a * s for o, a, s in zip(origin, at, spacing))
                offset = np.asarray(grid_lo, dtype=np.int64) - np.asarray(part_box[0], dtype=np.int64)
                coords.append(c + offset)
                values.append(v)
            reports.append(ds.last_read_report)
        self.last_read_report = tuple(reports)
        if mask:
            return result
        _, scalar, comps = self._fields[field]
        if not coords:
            return np.empty((0, self._ndim), np.int64), np.empty((0, comps) if comps > 1 else (0,), scalar)
        pts, vals = np.concatenate(coords), np.concatenate(values)
        order = np.lexsort(pts.T[::-1])  # C order of the grid, as one dataset answers
        return np.ascontiguousarray(pts[order]), vals[order]

    def blocks(self, field: str | None = None, *, time: int | None = None) -> list[tuple[int, np.ndarray]]:
        """Local. Each part's block table (:meth:`hzio.Dataset.blocks`: files, offsets and statistics), as
        ``(partition, table)`` pairs."""
        field, time = self._field(field), self._time(time)
        return [(p, ds.blocks(field, time=time)) for p, _, ds in self.parts]


class ParallelMosaic(ParallelDataset):
    """The writer of a dataset with partitions in local index space (``hzio.create``/``hzio.open`` with
    ``comm`` and a ``.midx``): :meth:`write` (Local), :meth:`flush` and :meth:`close` (Collective) as
    :class:`hzio.parallel.ParallelDataset`, in the whole domain's coordinates. Reads go through
    :func:`hzio.open` without ``comm`` (a :class:`MosaicDataset`). Its other members are Local: the
    properties, and ``read``, ``query``, ``progressive`` and ``blocks``, which raise UnsupportedError."""

    def __init__(self, pcore: Any, comm: Any, midx: str) -> None:
        super().__init__(pcore, comm)
        info = _read_mosaic(midx)
        self._midx = midx
        self._grid = tuple(info["shape"])
        self._bitmask = info["bitmask"]

    @property
    def path(self) -> str:
        return self._midx

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return self._grid

    @property
    def origin(self) -> tuple[int, ...]:
        return (0,) * self._ndim

    @property
    def bitmask(self) -> str:
        return self._bitmask

    @property
    def max_level(self) -> int:
        return len(self._bitmask) - 1

    def _check_inside(self, lo: Sequence[int], hi: Sequence[int], what: str) -> None:
        if not all(0 <= a < b <= n for a, b, n in zip(lo, hi, self._grid)):
            raise InvalidArgumentError(f"{what} {tuple(lo)}..{tuple(hi)} ([z, y, x]) is empty or not inside the "
                                       f"dataset box {((0,) * self._ndim, self._grid)}")

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"{self._midx} holds one dataset per partition: read it with hzio.open({self._midx!r})"
                               " (without comm)")

    read = _refuse  # type: ignore[assignment]
    query = _refuse  # type: ignore[assignment]
    progressive = _refuse  # type: ignore[assignment]
    blocks = _refuse  # type: ignore[assignment]
