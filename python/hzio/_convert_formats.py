"""The files ``hzio convert`` reads, one class per format: .npy and headerless binary (memory-mapped),
HDF5 (h5py), NetCDF (netCDF4) and Zarr v2 and v3 (zarr).

Each class lists its arrays (:meth:`names`), gives one as a :class:`Variable` (shape, dtype, dimension
names, a reader of NumPy basic indices) and finds the coordinate values of a dimension. Choosing the
variables, the time and component axes and checking them is :mod:`hzio._convert_sources`'s job.
"""

from __future__ import annotations

import importlib
import mmap
import os
from typing import Any, Callable

import numpy as np

from ._cli_util import UsageError

_MAPPED_SPAN_BYTES = 8 << 20  # mapped input bytes a copy touches before it hands them back to the kernel


class Variable:
    """One array of an input file: ``name``, ``shape``, ``dtype``, ``dims`` (a name or None per axis) and
    ``read(index)``, which returns the samples of a tuple of ints and slices as a NumPy array."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: np.dtype, dims: tuple[str | None, ...],
                 read: Callable[[tuple], np.ndarray]) -> None:
        self.name, self.shape, self.dtype, self.dims, self.read = name, tuple(shape), np.dtype(dtype), dims, read


def _need(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"reading {what} needs the {module} package (pip install {module}, or pip install "
                         "'hzio[convert]')") from None


def _unknown(path: str, name: str, names: list[str]) -> UsageError:
    shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    return UsageError(f"{path} has no variable {name!r}; its variables: {shown or '(none)'}")


class MappedArray:
    """A .npy or headerless binary file, memory-mapped read-only: one variable.

    Reads copy the mapped samples a few MiB at a time and then drop those pages from this process
    (``madvise(MADV_DONTNEED)``; they stay in the page cache), so the input never adds more than
    about 8 MiB to the resident memory, however large it is.
    """

    def __init__(self, path: str, name: str, shape: tuple[int, ...] | None = None, dtype: Any = None) -> None:
        self.path, self.name = path, name
        offset = 0
        if shape is None:  # .npy: its header gives shape, dtype and where the samples start
            try:
                header = np.load(path, mmap_mode="r", allow_pickle=False)
            except ValueError as e:
                raise UsageError(f"cannot read {path} as .npy: {e}") from None
            if header.ndim > 1 and not header.flags.c_contiguous:
                raise UsageError(f"{path} is stored in Fortran order; hzio convert reads C-order arrays "
                                 "(save it with np.save(path, np.ascontiguousarray(a)))")
            shape, dtype, offset = header.shape, header.dtype, int(getattr(header, "offset", 0))
            del header
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)
        if os.path.getsize(path) == 0 or 0 in self.shape:
            raise UsageError(f"{path} holds no samples (shape {self.shape})")
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._offset = offset
        self._array: np.ndarray | None = np.ndarray(self.shape, self.dtype, buffer=self._map, offset=offset)

    def names(self) -> list[str]:
        """Local. The one variable's name."""
        return [self.name]

    def variable(self, name: str) -> Variable:
        """Local. The array (``name`` must be :attr:`name`)."""
        if name != self.name:
            raise UsageError(f"{self.path} holds one array, so --variables does not apply (--field names its field)")
        return Variable(name, self.shape, self.dtype, (None,) * len(self.shape), self._read)

    def coordinate(self, var: Variable, axis: int) -> np.ndarray | None:
        """Local. None: a bare array has no coordinates."""
        return None

    def _read(self, index: tuple) -> np.ndarray:
        assert self._array is not None
        view = self._array[index]
        out = np.empty(view.shape, view.dtype)
        if view.ndim == 0:
            out[...] = view
            return out
        rows = max(1, _MAPPED_SPAN_BYTES // max(1, abs(view.strides[0])))
        base = self._array.__array_interface__["data"][0] - self._offset
        for i in range(0, view.shape[0], rows):
            part = view[i:i + rows]
            out[i:i + rows] = part
            self._drop(part, base)
        return out

    def _drop(self, part: np.ndarray, base: int) -> None:
        if not hasattr(mmap, "MADV_DONTNEED") or part.size == 0:
            return
        start = part.__array_interface__["data"][0] - base
        low = sum(min(0, s * (n - 1)) for s, n in zip(part.strides, part.shape))
        high = sum(max(0, s * (n - 1)) for s, n in zip(part.strides, part.shape)) + part.itemsize
        first = (start + low) // mmap.PAGESIZE * mmap.PAGESIZE
        self._map.madvise(mmap.MADV_DONTNEED, first, start + high - first)

    def close(self) -> None:
        """Local. Unmap the file."""
        self._array = None
        self._map.close()


class Hdf5File:
    """An HDF5 file (h5py): its datasets are the variables, named by their path (``group/name``).

    Dimension names come from dimension labels or attached dimension scales, whose values are the
    coordinates.
    """

    def __init__(self, path: str) -> None:
        self._h5py = _need("h5py", "HDF5")
        self.path = path
        try:
            self._file = self._h5py.File(path, "r")
        except OSError as e:
            raise UsageError(f"cannot open {path} as HDF5: {e}") from None

    def _is_scale(self, obj: Any) -> bool:
        return bool(self._h5py.h5ds.is_scale(obj.id))

    def names(self) -> list[str]:
        """Local. The paths of the datasets that are not dimension scales."""
        found: list[str] = []

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, self._h5py.Dataset) and not self._is_scale(obj):
                found.append(name)

        self._file.visititems(visit)
        return found

    def variable(self, name: str) -> Variable:
        """Local. The dataset at path ``name``."""
        obj = self._file.get(name.strip("/"))
        if not isinstance(obj, self._h5py.Dataset):
            raise _unknown(self.path, name, self.names())
        dims = []
        for axis in obj.dims:
            label = axis.label or (axis[0].name.rsplit("/", 1)[-1] if len(axis) else "")
            dims.append(label or None)
        return Variable(name.strip("/"), obj.shape, obj.dtype, tuple(dims), obj.__getitem__)

    def coordinate(self, var: Variable, axis: int) -> np.ndarray | None:
        """Local. The values of the dimension scale attached to ``axis`` of ``var``, if any."""
        scales = self._file[var.name].dims[axis]
        return np.asarray(scales[0][()]) if len(scales) else None

    def close(self) -> None:
        """Local. Close the file."""
        self._file.close()


class NetcdfFile:
    """A NetCDF file, classic or NetCDF-4 (netCDF4): its variables other than coordinate variables, named
    ``group/name`` inside groups. Values are read as stored: no masking, scale_factor or add_offset."""

    def __init__(self, path: str) -> None:
        nc = _need("netCDF4", "NetCDF")
        self.path = path
        try:
            self._ds = nc.Dataset(path, "r")
        except OSError as e:
            raise UsageError(f"cannot open {path} as NetCDF: {e}") from None
        self._ds.set_auto_maskandscale(False)

    def _groups(self) -> list[tuple[str, Any]]:
        out, todo = [], [("", self._ds)]
        while todo:
            prefix, group = todo.pop(0)
            out.append((prefix, group))
            todo += [(f"{prefix}{name}/", g) for name, g in group.groups.items()]
        return out

    def names(self) -> list[str]:
        """Local. The variables that are not coordinate variables (1-D and named after their dimension)."""
        return [prefix + name for prefix, group in self._groups() for name, v in group.variables.items()
                if v.dimensions != (name,)]

    def variable(self, name: str) -> Variable:
        """Local. The variable at ``group/name``."""
        *groups, last = name.strip("/").split("/")
        group = self._ds
        for g in groups:
            group = group.groups.get(g)
            if group is None:
                raise _unknown(self.path, name, self.names())
        v = group.variables.get(last)
        if v is None:
            raise _unknown(self.path, name, self.names())
        dtype = v.dtype if isinstance(v.dtype, np.dtype) else np.dtype(object)  # str for string variables
        return Variable(name.strip("/"), v.shape, dtype, tuple(v.dimensions), v.__getitem__)

    def coordinate(self, var: Variable, axis: int) -> np.ndarray | None:
        """Local. The coordinate variable of dimension ``axis`` of ``var`` (in its group or a parent)."""
        dim = var.dims[axis]
        *groups, _ = var.name.split("/")
        chain = [self._ds]
        for g in groups:
            chain.append(chain[-1].groups[g])
        for group in reversed(chain):
            v = group.variables.get(dim)
            if v is not None and v.dimensions == (dim,):
                return np.asarray(v[:])
        return None

    def close(self) -> None:
        """Local. Close the file."""
        self._ds.close()


class ZarrStore:
    """A Zarr store, format 2 or 3 (zarr): a lone array, or the arrays of a group and its subgroups, named
    by their path. Dimension names are Zarr 3's ``dimension_names`` or Zarr 2's ``_ARRAY_DIMENSIONS``
    attribute (as xarray writes it); the coordinates of a dimension are the 1-D array of its name."""

    def __init__(self, path: str) -> None:
        self._zarr = _need("zarr", "Zarr")
        self.path = path
        try:
            self._root = self._zarr.open(path, mode="r")
        except Exception as e:  # zarr raises several types for stores it cannot read
            raise UsageError(f"cannot open {path} as Zarr: {e}") from None

    def _arrays(self) -> list[tuple[str, Any]]:
        if isinstance(self._root, self._zarr.Array):
            return [(os.path.basename(os.path.normpath(self.path)).removesuffix(".zarr") or "data", self._root)]
        return [(n, a) for n, a in self._root.members(max_depth=None) if isinstance(a, self._zarr.Array)]

    @staticmethod
    def _dims(array: Any) -> tuple[str | None, ...]:
        names = getattr(array.metadata, "dimension_names", None) or array.attrs.get("_ARRAY_DIMENSIONS")
        names = list(names) if names else []
        return tuple(names) if len(names) == array.ndim else (None,) * array.ndim

    def names(self) -> list[str]:
        """Local. The arrays that are not coordinates (1-D and named after their dimension)."""
        return [n for n, a in self._arrays() if self._dims(a) != (n.rsplit("/", 1)[-1],)]

    def variable(self, name: str) -> Variable:
        """Local. The array at path ``name``."""
        found = dict(self._arrays()).get(name.strip("/"))
        if found is None:
            raise _unknown(self.path, name, self.names())
        return Variable(name.strip("/"), found.shape, found.dtype, self._dims(found), found.__getitem__)

    def coordinate(self, var: Variable, axis: int) -> np.ndarray | None:
        """Local. The 1-D array named after dimension ``axis`` of ``var``, beside it in its group."""
        parent = var.name.rsplit("/", 1)[0] + "/" if "/" in var.name else ""
        found = dict(self._arrays()).get(f"{parent}{var.dims[axis]}")
        return None if found is None or found.ndim != 1 else np.asarray(found[:])

    def close(self) -> None:
        """Local. Nothing to release."""
