"""The ``hzio export`` subcommand: a box of a dataset at a level, for some fields and timesteps, to a Zarr
store (v3 or v2, zarr) or a NetCDF-4 file (netCDF4), read and written in slabs.

The output has one variable per field with dimensions ``time, z, y, x`` (``time, y, x`` in 2-D; plus
``component`` for vector fields), as ``xr.open_dataset(..., engine="hzio")`` names them, and coordinates:
``time`` (the timesteps) and ``z``, ``y``, ``x`` (the dataset coordinates of the level's samples). It is
written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import importlib
import os
import time

import numpy as np

import hzio

from ._cli_util import (
    UsageError,
    check_output,
    dataset_box,
    parse_box,
    print_json,
    remove_output,
    replace_output,
    selection,
    temporary_path,
)
from ._progress import progress_bar, wanted
from ._slabs import MIB, level_axes, level_slabs, parse_bytes

SLAB_BYTES = 64 * MIB
_CHUNK_BYTES = 8 * MIB  # target size of one output chunk (uncompressed)
_SUFFIXES = {".zarr": "zarr", ".nc": "netcdf", ".nc4": "netcdf", ".netcdf": "netcdf"}


def export(args):
    """Run ``hzio export``: write a box at a level to Zarr or NetCDF. Local.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``output``, ``format`` (None: from the suffix), ``zarr_format`` (2 or 3), ``box``,
        ``level``, ``fields`` and ``times`` (comma lists, None for all), ``slab_bytes``, ``overwrite``,
        ``no_verify``, ``progress`` and ``json``.

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    hzio._cli_util.UsageError
        An existing OUTPUT without ``--overwrite``, an unknown format, field or timestep, a bad box or
        level, or a missing zarr/netCDF4 package.
    """
    fmt = args.format or _SUFFIXES.get(os.path.splitext(str(args.output).rstrip("/"))[1].lower())
    if fmt is None:
        raise UsageError(f"cannot tell the format of {args.output} from its suffix (.zarr, .nc); pass --format")
    output = str(args.output).rstrip("/")
    check_output(output, args.overwrite, directory=fmt == "zarr")
    slab_bytes = SLAB_BYTES if args.slab_bytes is None else parse_bytes(args.slab_bytes, "--slab-bytes")
    writer_class = ZarrWriter if fmt == "zarr" else NetcdfWriter
    start = time.perf_counter()
    with hzio.open(args.dataset, verify=not args.no_verify) as ds:
        box = parse_box(args.box, *dataset_box(ds)) or dataset_box(ds)
        level = ds.max_level if args.level is None else args.level
        if not 0 <= level <= ds.max_level:
            raise UsageError(f"--level {level} is outside 0..{ds.max_level} (the dataset's max_level)")
        fields, times = _pick(ds, args.fields, args.times)
        axes = level_axes(ds, box, level)
        grid = tuple(n for _, n, _, _ in axes)
        if 0 in grid:
            raise UsageError(f"the box holds no sample of level {level} (its grid would be {grid}); choose a finer "
                             "level or a larger box")
        coords = {name: np.array([o + (f + i) * s for i in range(n)], np.int64)
                  for name, (f, n, o, s) in zip("zyx"[3 - len(grid):], axes)}
        temp = temporary_path(output)
        writer = writer_class(temp, args, grid, times, coords)
        try:
            total = _write(ds, writer, fields, times, box, level, grid, slab_bytes, args)
            writer.attributes({"hzio_source": ds.path, "hzio_level": level, "hzio_max_level": ds.max_level,
                               "hzio_box": [list(box[0]), list(box[1])], "hzio_bitmask": ds.bitmask})
            writer.close()
        except BaseException:
            writer.close()
            remove_output(temp)
            raise
    replace_output(temp, output)
    result = {"output": output, "format": fmt, "zarr_format": args.zarr_format if fmt == "zarr" else None,
              "box": [list(box[0]), list(box[1])], "level": level, "shape": list(grid), "fields": fields,
              "times": times, "bytes": total, "seconds": round(time.perf_counter() - start, 3)}
    if args.json:
        print_json(result)
    else:
        print(f"wrote {output} ({fmt}; fields {', '.join(fields)}; {len(times)} timesteps; level {level}, shape "
              f"{'x'.join(map(str, grid))}): {total / MIB:.1f} MiB in {result['seconds']:.2f} s")
    return 0


def _pick(ds, fields_text, times_text):
    """The fields and timesteps to export: all of them, or those of the comma lists (each checked)."""
    fields = list(ds.fields) if fields_text is None else [
        selection(ds, name.strip(), None)[0][0] for name in fields_text.split(",") if name.strip()]
    if times_text is None:
        return fields, list(ds.times)
    try:
        wanted = [int(t) for t in times_text.split(",") if t.strip()]
    except ValueError:
        raise UsageError(f"--times expects comma-separated timesteps (integers), got {times_text!r}") from None
    return fields, [selection(ds, None, t)[1][0] for t in wanted]


def _write(ds, writer, fields, times, box, level, grid, slab_bytes, args):
    total = sum(int(np.prod(ds.level_shape(level, box, field=f))) * ds.field(f).dtype.itemsize
                for f in fields) * len(times)
    counts = {ds.level_shape(level, box, field=f)[len(grid):] for f in fields} - {()}
    component = {c: "component" if len(counts) == 1 else f"component_{c[0]}" for c in counts}
    with progress_bar(wanted(args.progress), total, "export") as bar:
        for f in fields:
            shape = ds.level_shape(level, box, field=f)
            dims = ("time",) + writer.dims + ((component[shape[len(grid):]],) if len(shape) > len(grid) else ())
            var = writer.variable(f, ds.field(f).dtype, shape, dims)
            plane_bytes = int(np.prod(shape[1:])) * ds.field(f).dtype.itemsize
            slabs = level_slabs(ds, box, level, plane_bytes, slab_bytes, multiple=writer.chunk_planes(f))
            for ti, t in enumerate(times):
                for a, b, slab_box in slabs:
                    samples = ds.read(slab_box, level=level, field=f, time=t)
                    writer.write(var, ti, a, b, samples)
                    bar.update(samples.nbytes)
    return total


def _chunks(shape, itemsize):
    """Chunk shape of a variable's grid (plus component axis): whole planes while they fit in 8 MiB, halving
    the first axes first, so that slabs along the first axis write whole chunks."""
    chunks = list(shape)
    for axis in range(len(chunks)):
        while int(np.prod(chunks)) * itemsize > _CHUNK_BYTES and chunks[axis] > 1:
            chunks[axis] = -(-chunks[axis] // 2)
    return tuple(chunks)


def _need(module, what):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"writing {what} needs the {module} package (pip install {module}, or pip install "
                         "'hzio[convert]')") from None


class _Writer:
    """What both output formats share: dimension names and chunk shapes."""

    def __init__(self, grid, times, coords):
        self.grid, self.times, self.coords = grid, times, coords
        self.dims = tuple(coords)
        self._chunks = {}

    def _check(self, name):
        if name in ("time",) + self.dims or name.startswith("component"):
            raise UsageError(f"field {name!r} has the name of a dimension of the export; export the others with "
                             "--fields")

    def chunk_planes(self, name):
        """Planes of the first grid axis in one chunk of field ``name``."""
        return self._chunks[name][1]


class ZarrWriter(_Writer):
    """A Zarr group (format 2 or 3) with one array per field and the coordinate arrays."""

    def __init__(self, path, args, grid, times, coords):
        super().__init__(grid, times, coords)
        self._zarr = _need("zarr", "Zarr")
        self._v3 = args.zarr_format == 3
        self.group = self._zarr.open_group(path, mode="w-", zarr_format=args.zarr_format)
        self._array("time", np.array(times, np.int64), ("time",))
        for name, values in coords.items():
            self._array(name, values, (name,))

    def _array(self, name, data, dims, dtype=None, chunks=None):
        # Zarr 3 names dimensions in its metadata; for Zarr 2, xarray's convention is an attribute.
        named = {"dimension_names": list(dims)} if self._v3 else {"attributes": {"_ARRAY_DIMENSIONS": list(dims)}}
        if data is not None:
            array = self.group.create_array(name, shape=data.shape, dtype=data.dtype, **named)
            array[...] = data
            return array
        return self.group.create_array(name, shape=chunks[0], dtype=dtype, chunks=chunks[1], **named)

    def variable(self, name, dtype, shape, dims):
        """Create the array of field ``name`` (level-grid ``shape`` with its component axis) and return it."""
        self._check(name)
        full = (len(self.times),) + tuple(shape)
        chunks = (1,) + _chunks(shape, dtype.itemsize)
        self._chunks[name] = chunks
        return self._array(name, None, dims, dtype=dtype, chunks=(full, chunks))

    def write(self, var, ti, a, b, samples):
        """Store ``samples`` as planes ``[a, b)`` of timestep index ``ti``."""
        var[ti, a:b] = samples

    def attributes(self, attrs):
        """Record ``attrs`` on the group."""
        self.group.attrs.update(attrs)

    def close(self):
        """Nothing to flush: every write went to the store."""


class NetcdfWriter(_Writer):
    """A NetCDF-4 file with one variable per field and the coordinate variables."""

    def __init__(self, path, args, grid, times, coords):
        super().__init__(grid, times, coords)
        nc = _need("netCDF4", "NetCDF")
        self.ds = nc.Dataset(path, "w", format="NETCDF4")
        self.ds.createDimension("time", len(times))
        self.ds.createVariable("time", "i8", ("time",))[:] = np.array(times, np.int64)
        for name, values in coords.items():
            self.ds.createDimension(name, len(values))
            self.ds.createVariable(name, "i8", (name,))[:] = values

    def variable(self, name, dtype, shape, dims):
        """Create the variable of field ``name`` (level-grid ``shape`` with its component axis) and return it."""
        self._check(name)
        if len(shape) > len(self.grid) and dims[-1] not in self.ds.dimensions:
            self.ds.createDimension(dims[-1], shape[-1])
        chunks = (1,) + _chunks(shape, dtype.itemsize)
        self._chunks[name] = chunks
        return self.ds.createVariable(name, dtype, dims, chunksizes=chunks)

    def write(self, var, ti, a, b, samples):
        """Store ``samples`` as planes ``[a, b)`` of timestep index ``ti``."""
        var[ti, a:b] = samples

    def attributes(self, attrs):
        """Record ``attrs`` as global attributes."""
        for key, value in attrs.items():
            self.ds.setncattr(key, np.array(value).ravel() if isinstance(value, list) else value)

    def close(self):
        """Close the file (idempotent)."""
        if self.ds.isopen():
            self.ds.close()
