"""What the xarray backend and the dask helpers share: a picklable way to reopen a dataset in any process,
outer indexing on hzio's arrays, the grid of chunks that follows the block structure, and coordinates.
Every function here is Local."""

from __future__ import annotations

import threading
from typing import Any, Iterator

import numpy as np

from .dataset import Dataset
from .errors import InvalidArgumentError

AXES = ("z", "y", "x")


class Opener:
    """Opens a dataset read-only on first use in each process and shares it between threads (reads take
    a lock). Pickles as its path and options only, so every dask worker opens the dataset itself."""

    def __init__(self, path: str, verify: bool = True) -> None:
        self.path, self.verify = path, verify
        self._ds: Dataset | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "verify": self.verify}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["verify"])  # type: ignore[misc]

    def dataset(self) -> Dataset:
        """Local. The open dataset (opened now if this process has not yet)."""
        if self._ds is None:
            from . import open as hzio_open
            self._ds = hzio_open(self.path, verify=self.verify)
        return self._ds

    def read(self, field: str, time: int, level: int | None, key: tuple) -> np.ndarray:
        """Local. ``key`` (ints, slices, 1-D integer arrays: outer indexing) of a field, timestep and level."""
        with self._lock:
            ds = self.dataset()
            view = ds.field(field, time=time)
            return outer_index(view if level is None or level == ds.max_level else view.level(level), key)

    def read_times(self, field: str, times: list[int], level: int | None, key: tuple, shape: tuple[int, ...],
                   dtype: np.dtype) -> np.ndarray:
        """Local. ``key`` over an array of ``shape`` whose first axis runs over ``times`` (outer indexing): one
        timestep's read, or a stack of them; an empty selection of timesteps reads nothing."""
        picked = np.arange(len(times))[key[0]]
        if picked.ndim == 0:
            return self.read(field, times[int(picked)], level, key[1:])
        if picked.size == 0:
            plane = outer_index(np.broadcast_to(np.zeros((), dtype=bool), shape[1:]), key[1:]).shape
            return np.empty((0,) + plane, dtype=dtype)
        return np.stack([self.read(field, times[int(i)], level, key[1:]) for i in picked])

    def close(self) -> None:
        """Local. Close the dataset if this process opened it."""
        with self._lock:
            if self._ds is not None:
                self._ds.close()
                self._ds = None


def outer_index(array: Any, key: tuple) -> np.ndarray:
    """Outer indexing (each 1-D integer array picks along its own axis) on an object with basic indexing:
    one read of the box the arrays span, then the picks inside it."""
    basic, picks = [], []
    for k in key:
        if isinstance(k, (slice, int, np.integer)):
            basic.append(k)
            continue
        k = np.asarray(k)
        if k.ndim != 1 or k.dtype.kind not in "iu":
            raise InvalidArgumentError(f"outer indexing takes ints, slices and 1-D integer arrays, got {k!r}")
        if k.size == 0:
            basic.append(slice(0, 0))
            continue
        lo = int(k.min())
        basic.append(slice(lo, int(k.max()) + 1))
        picks.append((sum(not isinstance(b, (int, np.integer)) for b in basic) - 1, k - lo))
    out = array[tuple(basic)]
    for axis, pick in picks:
        out = np.take(out, pick, axis=axis)
    return out


def block_chunks(ds: Dataset, level: int) -> tuple[int, ...]:
    """Samples per grid axis ([z, y, x]) of the level-``level`` grid that one block of that level covers:
    chunks of this shape, aligned to 0, read whole blocks of the level (coarser levels are shared)."""
    chars = ds.bitmask[1: level + 1]
    tail = chars[max(0, level - ds.bits_per_block):]
    nd = ds.grid_ndim
    counts = [tail.count(str(nd - 1 - a)) for a in range(nd)]  # bitmask digit 0 is x
    return tuple(1 << c for c in counts)


def axis_coordinates(ds: Dataset, level: int) -> Iterator[tuple[str, np.ndarray, dict[str, Any]]]:
    """``(name, values, attrs)`` per grid axis at ``level``: physical positions when the .idx has a
    ``(physic_box)`` or an axis-aligned ``(logic_to_physic)``, sample coordinates otherwise."""
    origin, spacing, count = ds._level_grid(level)
    names = AXES[3 - ds.grid_ndim:]
    box_lo, shape = ds.origin, ds.grid_shape
    physic, matrix = ds.physic_box, ds.logic_to_physic
    if matrix is not None and np.count_nonzero(matrix[:-1, :-1] - np.diag(np.diag(matrix[:-1, :-1]))):
        matrix = None  # rotated or sheared: no coordinate per axis (the matrix is in the attributes)
    for a, name in enumerate(names):
        index = origin[a] + spacing[a] * np.arange(count[a], dtype=np.int64)
        if physic is not None:
            p0, p1 = physic[0][a], physic[1][a]
            values = p0 + (index - box_lo[a]) * ((p1 - p0) / shape[a])
            attrs = {"hzio_source": "physic_box"}
        elif matrix is not None:
            ax = ds.grid_ndim - 1 - a  # the matrix acts on x-first coordinates
            values = matrix[ax, ax] * index + matrix[ax, -1]
            attrs = {"hzio_source": "logic_to_physic"}
        else:
            values, attrs = index, {"hzio_source": "sample index"}
        yield name, values, attrs
