"""The xarray backend, registered as engine ``"hzio"``: ``xr.open_dataset(path, engine="hzio")`` gives a lazy
Dataset of every field over every timestep; ``xr.open_datatree(path, engine="hzio")`` one group per
resolution level, with multiscales metadata in the style of OME-NGFF. Opening is Local.

Examples
--------
>>> import numpy as np, hzio, xarray as xr, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.idx")
>>> with hzio.create(path, shape=(8, 8, 8), fields={"t": "float32", "w": "float32[3]"}, times=[0, 1]) as ds:
...     ds.write(np.ones((8, 8, 8), np.float32), time=1)
>>> xds = xr.open_dataset(path, engine="hzio")
>>> xds["t"].dims, xds["w"].dims, float(xds["t"].sel(time=1).mean())
(('time', 'z', 'y', 'x'), ('time', 'z', 'y', 'x', 'component'), 1.0)
>>> xds.close()
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._lazy import AXES, Opener, axis_coordinates, block_chunks
from .dataset import Dataset
from .errors import InvalidArgumentError


class FieldArray(BackendArray):
    """One field over all timesteps at one level, ``(time, [z,] [y,] x[, component])``: lazy, outer indexing.
    Its methods are Local: indexing reads the selected samples of each timestep."""

    def __init__(self, opener: Opener, field: str, times: list[int], level: int | None,
                 shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.opener, self.field, self.times, self.level = opener, field, times, level
        self.shape = (len(times),) + tuple(shape)
        self.dtype = dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._outer)

    def _outer(self, key: tuple) -> np.ndarray:
        return self.opener.read_times(self.field, self.times, self.level, key, self.shape, self.dtype)


def _component_dims(ds: Dataset) -> dict[str, str]:
    """The component dimension of each vector field: ``component``, or ``component_<n>`` when vector fields
    differ in their number of components."""
    counts = {name: spec[2] for name, spec in ds._fields.items() if spec[2] > 1}
    shared = len(set(counts.values())) <= 1
    return {name: "component" if shared else f"component_{n}" for name, n in counts.items()}


def level_dataset(ds: Dataset, opener: Opener, level: int, drop_variables: Iterable[str] = ()) -> xr.Dataset:
    """Local. The lazy xarray Dataset of ``ds`` at ``level`` (see :func:`open_dataset`)."""
    dims = AXES[3 - ds.grid_ndim:]
    times = ds.times
    _, _, count = ds._level_grid(level)
    chunks = block_chunks(ds, level)
    comp_dims = _component_dims(ds)
    coords: dict[str, Any] = {"time": ("time", np.asarray(times, dtype=np.int64), {"long_name": "timestep"})}
    for name, values, attrs in axis_coordinates(ds, level):
        coords[name] = (name, values, attrs)
    full = level == ds.max_level
    variables = {}
    for name, (text, scalar, comps) in ds._fields.items():
        if name in drop_variables:
            continue
        shape = count + ((comps,) if comps > 1 else ())
        var_dims = ("time",) + dims + ((comp_dims[name],) if comps > 1 else ())
        array = FieldArray(opener, name, times, None if full else level, shape, scalar)
        preferred = {"time": 1, **{d: min(c, n) for d, c, n in zip(dims, chunks, count)}}
        if comps > 1:
            preferred[comp_dims[name]] = comps
        attrs = {"hzio_dtype": text, "codec": ds.codecs[name], "layout": ds.layouts[name]}
        variables[name] = xr.Variable(var_dims, indexing.LazilyIndexedArray(array), attrs,
                                      encoding={"preferred_chunks": preferred, "dtype": scalar})
    attrs = {"hzio_path": ds.path, "bitmask": ds.bitmask, "max_level": ds.max_level, "level": level,
             "bits_per_block": ds.bits_per_block, "blocks_per_file": ds.blocks_per_file,
             "codecs": json.dumps(ds.codecs)}
    if ds.logic_to_physic is not None:
        attrs["logic_to_physic"] = ds.logic_to_physic.ravel().tolist()
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def open_dataset(path: str | os.PathLike, *, level: int | None = None, verify: bool = True,
                 drop_variables: Iterable[str] = ()) -> xr.Dataset:
    """Local. The lazy xarray Dataset of an IDX dataset: one variable per field, dims ``time, z, y, x`` (or
    ``time, y, x``) plus ``component`` for vector fields; indexing reads only the box indexed.

    ``level`` (default: full resolution) opens the grid of that level; coordinates follow the .idx's
    physical box (or axis-aligned ``logic_to_physic``), else sample coordinates of the full grid.
    ``chunks=`` in :func:`xarray.open_dataset` gives dask arrays; ``chunks={}`` uses the block structure.
    """
    path = os.fspath(path)
    opener = Opener(path, verify)
    ds = opener.dataset()
    try:
        if level is None:
            level = ds.max_level
        level = int(level)
        if not 0 <= level <= ds.max_level:
            raise InvalidArgumentError(f"level {level} is outside [0, {ds.max_level}]")
        out = level_dataset(ds, opener, level, drop_variables)
    except Exception:
        opener.close()
        raise
    out.set_close(opener.close)
    return out


def pyramid_levels(ds: Dataset) -> list[int]:
    """Local. Levels from ``max_level`` down, each the finest whose spacing doubles on every axis the previous
    one still resolves (more than one sample), until one sample is left or level 0."""
    levels = [ds.max_level]
    _, spacing, count = ds._level_grid(ds.max_level)
    for h in range(ds.max_level - 1, -1, -1):
        _, sp, _ = ds._level_grid(h)
        if all(s >= 2 * p or n == 1 for s, p, n in zip(sp, spacing, count)):
            levels.append(h)
            _, spacing, count = ds._level_grid(h)
            if all(n == 1 for n in count):
                break
    return levels


def open_datatree(path: str | os.PathLike, *, verify: bool = True, drop_variables: Iterable[str] = ()) -> Any:
    """Local. An xarray DataTree with one group per resolution level (``"0"`` full resolution, ``"1"`` half
    along every axis, ...) and OME-NGFF-style ``multiscales`` metadata in the root's attributes."""
    path = os.fspath(path)
    opener = Opener(path, verify)
    ds = opener.dataset()
    try:
        groups: dict[str, xr.Dataset] = {}
        datasets = []
        dims = AXES[3 - ds.grid_ndim:]
        for i, level in enumerate(pyramid_levels(ds)):
            groups[str(i)] = level_dataset(ds, opener, level, drop_variables)
            origin, spacing, _ = ds._level_grid(level)
            coords = {name: values for name, values, _ in axis_coordinates(ds, level)}
            step = [float(coords[d][1] - coords[d][0]) if len(coords[d]) > 1 else float(s)
                    for d, s in zip(dims, spacing)]
            datasets.append({"path": str(i), "level": level, "coordinateTransformations": [
                {"type": "scale", "scale": [1.0] + step},
                {"type": "translation", "translation": [0.0] + [float(coords[d][0]) for d in dims]}]})
        axes = [{"name": "time", "type": "time"}] + [{"name": d, "type": "space"} for d in dims]
        root = xr.Dataset(attrs={"multiscales": json.dumps([{"version": "0.4", "name": os.path.basename(path),
                                                            "axes": axes, "datasets": datasets}]),
                                 "hzio_path": ds.path, "bitmask": ds.bitmask, "max_level": ds.max_level})
        tree = xr.DataTree.from_dict({"/": root, **{f"/{k}": v for k, v in groups.items()}})
    except Exception:
        opener.close()
        raise
    tree.set_close(opener.close)
    return tree


class HzioBackendEntrypoint(BackendEntrypoint):
    """Local. The ``hzio`` engine of :func:`xarray.open_dataset` and :func:`xarray.open_datatree`."""

    description = "IDX datasets (hierarchical Z order) through hzio"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "level", "verify")
    supports_groups = True

    def open_dataset(self, filename_or_obj: Any, *, drop_variables: Any = None, level: int | None = None,
                     verify: bool = True) -> xr.Dataset:
        """Local. See :func:`hzio.xarray_backend.open_dataset`."""
        return open_dataset(filename_or_obj, level=level, verify=verify, drop_variables=drop_variables or ())

    def open_datatree(self, filename_or_obj: Any, *, drop_variables: Any = None, verify: bool = True,
                      **kwargs: Any) -> Any:
        """Local. See :func:`hzio.xarray_backend.open_datatree`."""
        return open_datatree(filename_or_obj, verify=verify, drop_variables=drop_variables or ())

    def open_groups_as_dict(self, filename_or_obj: Any, *, drop_variables: Any = None, verify: bool = True,
                            **kwargs: Any) -> dict[str, xr.Dataset]:
        """Local. The groups of :meth:`open_datatree` as a dict of path to Dataset."""
        tree = self.open_datatree(filename_or_obj, drop_variables=drop_variables, verify=verify)
        return {node.path: node.to_dataset() for node in tree.subtree}

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Local. True for a path or URL ending in ``.idx``."""
        try:
            return os.fspath(filename_or_obj).lower().endswith(".idx")
        except TypeError:
            return False
