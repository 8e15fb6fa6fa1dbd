"""What ``hzio convert`` reads: the input's format, its variables (one field each), the time axis (one
timestep per index) and the component axis, checked against each other.

:func:`open_input` returns an :class:`Input`, whose :meth:`Input.read` gives one field's samples in a box
at one time index as a native-endian C-order array. The file formats are in :mod:`hzio._convert_formats`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ._cli_util import UsageError, parse_dtype_option, parse_ints
from ._convert_formats import Hdf5File, MappedArray, NetcdfFile, Variable, ZarrStore

FORMATS = ("npy", "raw", "hdf5", "netcdf", "zarr")
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_NETCDF_SUFFIXES = (".nc", ".nc4", ".cdf", ".netcdf")
_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5")


def detect_format(path: str) -> str:
    """Local. Name the format of ``path``: a Zarr store (folder), .npy, HDF5, NetCDF, else raw.

    NetCDF-4 files are HDF5 files: the suffix (.nc, .nc4, .cdf) sends them to the NetCDF reader.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npy"); np.save(p, np.zeros(3))
    >>> detect_format(p)
    'npy'
    """
    if os.path.isdir(path):
        if any(os.path.exists(os.path.join(path, m)) for m in ("zarr.json", ".zgroup", ".zarray")):
            return "zarr"
        raise UsageError(f"{path} is a folder but not a Zarr store (no zarr.json, .zgroup or .zarray)")
    with open(path, "rb") as f:
        head = f.read(8)
    suffix = os.path.splitext(path)[1].lower()
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head[:4] in (b"CDF\x01", b"CDF\x02", b"CDF\x05") or (head == _HDF5_MAGIC and suffix in _NETCDF_SUFFIXES):
        return "netcdf"
    if head == _HDF5_MAGIC or _hdf5_with_user_block(path):
        return "hdf5"
    if suffix in _NETCDF_SUFFIXES + _HDF5_SUFFIXES + (".npy",):
        raise UsageError(f"{path} is not a {suffix[1:]} file (its first bytes are {head!r})")
    return "raw"


def _hdf5_with_user_block(path: str) -> bool:
    # HDF5 allows a user block before the superblock, of 512, 1024, 2048, ... bytes.
    size, at = os.path.getsize(path), 512
    with open(path, "rb") as f:
        while at + 8 <= size and at <= 1 << 20:
            f.seek(at)
            if f.read(8) == _HDF5_MAGIC:
                return True
            at *= 2
    return False


class Input:
    """Local. The fields, spatial shape and timesteps a convert writes, and their samples box by box.

    Attributes
    ----------
    path, format : str
    fields : list of (str, str)
        Field name and hzio dtype text (``"float32"``, ``"uint8[3]"``), one per variable.
    spatial : tuple of int
        The dataset shape, ``[z, y, x]`` (1 to 3 axes).
    times : list of int
        The timesteps, one per index of the time axis (``[0]`` without one).
    timed : bool
        Whether there is a time axis (then the dataset gets a time folder per timestep).
    """

    def __init__(self, path: str, fmt: str, store: Any, variables: list[Variable], field_names: list[str],
                 time_axis: int | None, components: int, scalar: np.dtype | None) -> None:
        self.path, self.format, self._store, self._vars = path, fmt, store, variables
        self._time_axis, self._comps = time_axis, components
        first = variables[0]
        spatial_axes = [a for a in range(len(first.shape)) if a != time_axis]
        self._spatial_axes = spatial_axes[:-1] if components > 1 else spatial_axes
        self.spatial = tuple(first.shape[a] for a in self._spatial_axes)
        self._dtypes = [_field_dtype(v, scalar, path) for v in variables]
        suffix = f"[{components}]" if components > 1 else ""
        self.fields = [(name, dt.name + suffix) for name, dt in zip(field_names, self._dtypes)]
        self.timed = time_axis is not None
        self.times = _timesteps(store, first, time_axis) if self.timed else [0]

    @property
    def sample_bytes(self) -> int:
        """Bytes of one sample of every field together (a box of N samples reads N times this)."""
        return sum(dt.itemsize for dt in self._dtypes) * self._comps

    def field_sample_bytes(self, i: int) -> int:
        """Bytes of one sample of field ``i``."""
        return self._dtypes[i].itemsize * self._comps

    def read(self, field: int, time_index: int, lo: tuple[int, ...], hi: tuple[int, ...]) -> np.ndarray:
        """Local. The samples of field ``field`` in the box ``[lo, hi)`` ([z, y, x]) at ``time_index``,
        C-contiguous, in the field's native dtype, with the component axis last."""
        var = self._vars[field]
        index: list[Any] = [slice(None)] * len(var.shape)
        if self._time_axis is not None:
            index[self._time_axis] = time_index
        for axis, a, b in zip(self._spatial_axes, lo, hi):
            index[axis] = slice(a, b)
        try:
            block = np.asarray(var.read(tuple(index)))
        except (UsageError, MemoryError, KeyboardInterrupt):
            raise
        except Exception as e:  # h5py, netCDF4 and zarr raise many types for unreadable data
            raise UsageError(f"reading {var.name} from {self.path} failed: {e}") from None
        samples = np.ascontiguousarray(block, dtype=self._dtypes[field])
        return samples if samples.flags.writeable else samples.copy()  # Dataset.write takes writable arrays

    def close(self) -> None:
        """Local. Close the input file."""
        self._store.close()


def open_input(path: str, *, fmt: str | None = None, variables: str | None = None, time_dim: str | None = None,
               shape: str | None = None, dtype: str | None = None, field: str | None = None) -> Input:
    """Local. Open ``path`` and check what ``hzio convert`` will write from it.

    Parameters
    ----------
    path : str
        The input file or Zarr store.
    fmt : str, optional
        One of :data:`FORMATS`; found by :func:`detect_format` when None.
    variables : str, optional
        ``"a,b=name,..."``: the input variables (HDF5 dataset paths, NetCDF variables, Zarr array paths),
        each becoming a field named after it (or after ``=``). Default: the only one there is.
    time_dim : str, optional
        The dimension (name, or axis number from 0) whose indices become timesteps.
    shape, dtype : str, optional
        ``--shape`` (headerless input only) and ``--dtype`` (the field dtype, ``T[N]`` for N components
        on the last axis; the input must cast to it without loss).
    field : str, optional
        The field name of a single-variable input (default: the variable's name, ``data`` for npy/raw).

    Raises
    ------
    hzio._cli_util.UsageError
        For anything the input or the options get wrong, with a message that says what.
    """
    fmt = fmt or detect_format(path)
    if shape is not None and fmt != "raw":
        raise UsageError(f"--shape is only for headerless binary input; {path} is {fmt}, which records its shape")
    scalar, comps = parse_dtype_option(dtype) if dtype else (None, 1)
    store = _open_store(path, fmt, shape, scalar, comps, field)
    try:
        pairs = _pick_variables(store, path, variables, field)
        chosen = [store.variable(name) for name, _ in pairs]
        time_axis = _time_axis(chosen, time_dim, path)
        _check_shapes(chosen, time_axis, comps, path)
        return Input(path, fmt, store, chosen, [f for _, f in pairs], time_axis, comps, scalar)
    except BaseException:
        store.close()
        raise


def _open_store(path, fmt, shape, scalar, comps, field):
    if fmt == "npy":
        return MappedArray(path, field or "data")
    if fmt == "raw":
        if shape is None or scalar is None:
            raise UsageError(f"{path} is not a .npy, HDF5, NetCDF or Zarr input: headerless binary input needs "
                             "--shape Z,Y,X and --dtype")
        dims = parse_ints(shape, "--shape") + ((comps,) if comps > 1 else ())
        expected = int(np.prod(dims, dtype=np.int64)) * scalar.itemsize
        actual = os.path.getsize(path)
        if actual != expected:
            raise UsageError(f"headerless input {path} is {actual} bytes, but --shape {shape} with --dtype "
                             f"{scalar.name}{f'[{comps}]' if comps > 1 else ''} needs {expected} bytes")
        return MappedArray(path, field or "data", dims, scalar)
    opener = {"hdf5": Hdf5File, "netcdf": NetcdfFile, "zarr": ZarrStore}.get(fmt)
    if opener is None:
        raise UsageError(f"unknown input format {fmt!r}; formats: {', '.join(FORMATS)}")
    return opener(path)


def _pick_variables(store, path, text, field):
    if text is None:
        names = store.names()
        if len(names) != 1:
            listed = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            raise UsageError(f"{path} holds {len(names)} variables ({listed or 'none'}); choose with --variables "
                             "a,b (each becomes a field)")
        pairs = [(names[0], field or names[0].rsplit("/", 1)[-1])]
    else:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise UsageError(f"--variables expects comma-separated names, got {text!r}")
        pairs = [(n.strip(), (f.strip() if sep else n.strip().strip("/").rsplit("/", 1)[-1]))
                 for n, sep, f in (item.partition("=") for item in items)]
        if field is not None:
            if len(pairs) > 1:
                raise UsageError("--field names the field of a single variable; with several, write "
                                 "--variables a=name1,b=name2")
            pairs = [(pairs[0][0], field)]
    seen = [f for _, f in pairs]
    if len(set(seen)) != len(seen):
        raise UsageError(f"two variables would become the same field ({', '.join(seen)}); rename them with "
                         "--variables a=name1,b=name2")
    return pairs


def _time_axis(chosen, time_dim, path):
    if time_dim is None:
        return None
    axes = []
    for v in chosen:
        if time_dim.lstrip("-").isdigit():
            axis = int(time_dim)
            if not -len(v.shape) <= axis < len(v.shape):
                raise UsageError(f"--time-dim {time_dim}: {v.name} in {path} has only {len(v.shape)} axes")
            axis %= len(v.shape)
        elif time_dim in v.dims:
            axis = v.dims.index(time_dim)
        else:
            named = ", ".join(str(d) for d in v.dims) if any(v.dims) else "no names; give an axis number"
            raise UsageError(f"{v.name} in {path} has no dimension {time_dim!r} (its dimensions: {named})")
        axes.append(axis)
    if len(set(axes)) != 1:
        raise UsageError(f"the time dimension {time_dim!r} is not the same axis of every variable")
    return axes[0]


def _check_shapes(chosen, time_axis, comps, path):
    for v in chosen:
        rest = [n for a, n in enumerate(v.shape) if a != time_axis]
        if comps > 1:
            if not rest or rest[-1] != comps:
                raise UsageError(f"--dtype with [{comps}] needs a last axis of {comps} components, but {v.name} in "
                                 f"{path} has shape {v.shape}")
            rest = rest[:-1]
        if not 1 <= len(rest) <= 3:
            hint = " (pass --time-dim for a time axis, or --dtype T[N] for a component axis)" if len(rest) > 3 else ""
            raise UsageError(f"{v.name} in {path} has shape {v.shape}: a dataset needs 1 to 3 spatial axes{hint}")
        if 0 in rest or (time_axis is not None and v.shape[time_axis] == 0):
            raise UsageError(f"{v.name} in {path} has shape {v.shape}: no samples")
    first = chosen[0]
    for v in chosen[1:]:
        if v.shape != first.shape:
            raise UsageError(f"variables of one dataset must share their shape: {first.name} is {first.shape}, "
                             f"{v.name} is {v.shape} (in {path})")


_SUPPORTED = "int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32 or float64"


def _field_dtype(var: Variable, scalar: np.dtype | None, path: str) -> np.dtype:
    """The native dtype a field of ``var`` gets: ``--dtype`` if given (a lossless cast), else the variable's,
    with big-endian input turned little-endian (the values are the same)."""
    src = var.dtype
    if scalar is not None:
        if not np.can_cast(src, scalar, casting="safe"):
            raise UsageError(f"{var.name} in {path} holds {src} values, which --dtype {scalar.name} cannot hold "
                             "exactly")
        return scalar.newbyteorder("=")
    if src.kind in "iu" or (src.kind == "f" and src.itemsize in (4, 8)):
        return src.newbyteorder("=")
    hint = (f"; pass --dtype to convert it without loss, e.g. --dtype {'uint8' if src.kind == 'b' else 'float32'}"
            if src.kind == "b" or (src.kind == "f" and src.itemsize == 2) else "")
    raise UsageError(f"{var.name} in {path} holds {src} samples; hzio fields hold {_SUPPORTED}{hint}")


def _timesteps(store, var, axis):
    """Timesteps of the time axis: the coordinate values when they are distinct non-negative whole numbers
    (integers, or floats without a fraction), otherwise the indices 0..n-1."""
    n = var.shape[axis]
    try:
        values = store.coordinate(var, axis)
    except Exception:  # a broken coordinate is no reason to fail: the indices serve
        values = None
    if values is None or values.shape != (n,) or values.dtype.kind not in "iuf":
        return list(range(n))
    if values.dtype.kind == "f" and not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
        return list(range(n))
    ints = [int(v) for v in values]
    if min(ints) < 0 or max(ints) >= 1 << 31 or len(set(ints)) != n:
        return list(range(n))
    return ints
