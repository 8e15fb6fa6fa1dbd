"""Views returned by :meth:`hzio.Dataset.level` and :meth:`hzio.Dataset.field`: NumPy-style slicing at a
resolution level or on another field. Their ``[...]`` reads are Local, and Collective on a dataset opened
with ``comm``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._indexing import box_of_slices
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .dataset import Dataset


def check_level(level: int, max_level: int) -> int:
    """Local. Return ``level`` as an int, or raise InvalidArgumentError outside ``[0, max_level]``."""
    level = int(level)
    if not 0 <= level <= max_level:
        raise InvalidArgumentError(f"level {level} is outside [0, {max_level}]")
    return level


class LevelView:
    """``ds.level(h)``: slicing in full-resolution coordinates returning the samples of levels 0..h."""

    def __init__(self, ds: Dataset, level: int, field: str | None, time: int | None) -> None:
        self._ds, self._level, self._field, self._time = ds, level, field, time

    def __getitem__(self, key: Any) -> np.ndarray:
        """Read the level's samples inside a full-resolution box of step-1 slices, ints and ``...``.

        Local; Collective on a dataset opened with comm. An int selects a plane and drops its axis;
        raises IndexError if that plane holds no sample of the level.
        """
        lo, hi, dropped = box_of_slices(key, self._ds.shape, f"ds.level({self._level})[...]")
        origin = self._ds.origin
        lo = tuple(a + o for a, o in zip(lo, origin))
        hi = tuple(a + o for a, o in zip(hi, origin))
        arr = self._ds.read((lo, hi), level=self._level, field=self._field, time=self._time)
        for a in reversed(dropped):
            if arr.shape[a] == 0:
                raise IndexError(f"plane {lo[a]} along axis {a} holds no samples of level {self._level}")
            arr = np.take(arr, 0, axis=a)
        return arr

    @property
    def shape(self) -> tuple[int, ...]:
        """Local. Shape of the level's grid over the whole dataset (``ds.level_shape(h)``)."""
        return self._ds.level_shape(self._level)


class FieldView:
    """``ds.field(name)``: the same slicing for another field (and timestep)."""

    def __init__(self, ds: Dataset, field: str, time: int | None) -> None:
        self._ds, self._field, self._time = ds, field, time

    def __getitem__(self, key: Any) -> np.ndarray:
        """Full-resolution read of this field with NumPy's basic indexing, as ``ds[...]``.

        Local; Collective on a dataset opened with comm.
        """
        return self._ds._getitem(key, field=self._field, time=self._time)

    def level(self, level: int) -> LevelView:
        """Local. The view ``ds.level(level)`` of this field and timestep; its ``[...]`` is as ``LevelView``'s."""
        return LevelView(self._ds, check_level(level, self._ds.max_level), self._field, self._time)
