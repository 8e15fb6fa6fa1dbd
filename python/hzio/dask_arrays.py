"""dask arrays over IDX datasets: :func:`to_dask` reads lazily (on any scheduler, dask.distributed included:
each task opens the dataset in its own process), :func:`from_dask` writes a dask array into a dataset.

Examples
--------
>>> import numpy as np, hzio, tempfile, os
>>> import dask.array as da
>>> path = os.path.join(tempfile.mkdtemp(), "d.idx")
>>> hzio.create(path, shape=(16, 16, 16), fields={"t": "float32"}).close()
>>> hzio.from_dask(da.ones((16, 16, 16), chunks=8, dtype=np.float32), path, field="t")
>>> a = hzio.to_dask(path, field="t", time=0)
>>> a.chunks[0], float(a.sum().compute())
((16,), 4096.0)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._lazy import Opener, block_chunks
from ._types import as_int, as_path
from .errors import InvalidArgumentError


class _Source:
    """The array dask reads from: one field at one level, over all timesteps or one; pickles as its path."""

    def __init__(self, opener: Opener, field: str, times: list[int] | None, time: int, level: int | None,
                 shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.opener, self.field, self.times, self.time, self.level = opener, field, times, time, level
        self.shape, self.dtype, self.ndim = shape, dtype, len(shape)

    def __getitem__(self, key: tuple) -> np.ndarray:
        if self.times is None:
            return self.opener.read(self.field, self.time, self.level, key)
        return self.opener.read_times(self.field, self.times, self.level, key, self.shape, self.dtype)


def to_dask(path: str | os.PathLike, *, field: str | None = None, time: int | None = None, level: int | None = None,
            chunks: Any = None, verify: bool = True) -> Any:
    """Local. A dask array of one field: ``time=None`` gives every timestep as a first axis, ``time=t`` one
    timestep; ``level`` (default full resolution) the grid of that level, as :meth:`hzio.Dataset.read`.

    ``chunks`` defaults to the block structure (one chunk per block of ``level``, whole timesteps, all
    components); anything :func:`dask.array.from_array` accepts works. The array pickles as the
    dataset's path: on a ``dask.distributed`` cluster each worker opens the dataset itself.
    """
    import dask.array as da
    from dask.base import tokenize

    opener = Opener(as_path(path), bool(verify))
    ds = opener.dataset()
    name = ds._field(field)
    full = ds.max_level if level is None else as_int(level, "level")
    if not 0 <= full <= ds.max_level:
        raise InvalidArgumentError(f"level {full} is outside [0, {ds.max_level}]")
    _, scalar, comps = ds._fields[name]
    _, _, count = ds._level_grid(full)
    tail = (comps,) if comps > 1 else ()
    times = None if time is not None else ds.times
    one = ds._time(time) if time is not None else ds.times[0]
    if times is None and one not in ds.times:
        raise InvalidArgumentError(f"dataset {ds.path} has no timestep {one}; timesteps: {ds.times}")
    shape = ((len(times),) if times is not None else ()) + count + tail
    source = _Source(opener, name, times, one, None if full == ds.max_level else full, shape, scalar)
    if chunks is None:
        chunks = ((1,) if times is not None else ()) + tuple(min(c, n) for c, n in
                                                             zip(block_chunks(ds, full), count)) + tail
    token = tokenize(ds.path, name, times, one, full, verify, chunks)
    return da.from_array(source, chunks=chunks, asarray=False, fancy=False, meta=np.empty((0,) * len(shape), scalar),
                         name=f"hzio-{name}-{token}")


class _Target:
    """What :func:`dask.array.store` writes each chunk into: opens the dataset, writes, commits, closes."""

    def __init__(self, path: str, field: str, time: int | None, durable: bool) -> None:
        self.path, self.field, self.time, self.durable = path, field, time, durable

    def __setitem__(self, key: tuple, value: np.ndarray) -> None:
        from . import open as hzio_open
        with hzio_open(self.path, mode="r+", durable=self.durable) as ds:
            ds.field(self.field, time=self.time)[key] = value


def from_dask(array: Any, path: str | os.PathLike, *, field: str | None = None, time: int | None = None,
              lock: Any = True, durable: bool = True, compute: bool = True) -> Any:
    """Write a dask array into field ``field`` at timestep ``time`` (the first) of an existing dataset.

    Local (it runs on whichever scheduler is active). The array's shape must be the field's (grid plus
    components). Each chunk is written by a task that opens the dataset, writes and commits. A commit
    rewrites the .idx and blocks shared by neighbouring chunks (the coarse levels), so chunks must not
    be committed at once: ``lock=True`` (default) takes a :class:`distributed.Lock` named after the
    dataset when a ``dask.distributed`` client is active, else a lock of this process; pass your own
    lock, or ``False`` only if one task writes at a time. ``compute=False`` returns the delayed store.
    """
    import dask.array as da

    path = as_path(path)
    from . import open as hzio_open
    with hzio_open(path) as ds:
        name = ds._field(field)
        want = ds.field(name).shape
        when = None if time is None else ds._time(time)
    if tuple(array.shape) != tuple(want):
        raise InvalidArgumentError(f"a dask array of shape {tuple(array.shape)} cannot fill field {name!r} of shape "
                                   f"{want}")
    if lock is True:
        lock = _default_lock(path)
    target: Any = _Target(path, name, when, bool(durable))  # dask only calls target[region] = chunk
    return da.store(array, target, lock=lock or False, compute=compute)


def _default_lock(path: str) -> Any:
    try:
        from distributed import Lock, get_client
        get_client()
    except (ImportError, ValueError):
        from dask.utils import SerializableLock
        return SerializableLock(f"hzio:{os.path.abspath(path)}")
    return Lock(f"hzio:{os.path.abspath(path)}")
