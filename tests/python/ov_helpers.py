"""Thin wrappers around OpenVisus (PyPI ``OpenVisusNoGui``) for interop tests.

All coordinates here follow the hzio / numpy convention: C-order shapes
``(z, y, x)`` (or ``(y, x)``) and boxes ``((z0, y0, x0), (z1, y1, x1))`` with
exclusive upper bounds.  The wrappers translate to OpenVisus' x-first ``dims``
and ``logic_box``.  OpenVisus is imported lazily, so importing this module
never fails; call :func:`have_openvisus` or use the ``openvisus`` fixture.

OpenVisus 2.2.149 quirks met while writing these helpers
---------------------------------------------------------
* ``ov.Field("b", "3*float32").dtype.toString()`` **segfaults**: ``dtype`` is a
  reference into the temporary ``Field``.  Keep every ``Field`` in a variable.
* ``db.read`` on a box that holds no sample of the requested resolution raises
  ``Exception("begin query failed cannot find a good end_resolution to start
  with")`` instead of returning an empty array (e.g. 16x8 ``V0101010``,
  ``logic_box=([1, 1], [3, 3]), max_resolution=3``).  :func:`ov_read` raises
  :class:`EmptyLevelQuery` for that case.
* A 2-D dataset needs a 2-D ``logic_box`` (``([x0, y0], [x1, y1])``); a 3-D box
  on it fails with "user_box not valid".
* Read results keep singleton axes (``(1, 32, 32)`` for a one-slice box) and
  vector fields get a trailing component axis (``uint8[3]`` -> ``(..., 3)``).
* ``CreateIdx`` with a trailing singleton dimension (dims ``[16, 8, 1]``, i.e.
  numpy shape ``(1, 8, 16)``; or ``[16, 1]``) guesses a bitmask with too few
  axes and writes ``(version) -1``; the following load raises a SystemError
  "invalid version".  Pass an explicit bitmask such as ``V01010102``.
* ``CreateIdx(time=[A, B, template])`` only declares the contiguous range
  ``A..B``; wrong times or fields raise plain ``Exception`` ("wrong time",
  "field not valid").
* ``db.write`` always stores raw blocks; ``compressDataset(codec)`` rewrites
  the files afterwards (zip in Python, others through the C++ path) and
  rewrites the ``.idx`` with ``default_compression(codec)``.
* ``Array.fromNumPy`` needs C-contiguous input (``np.ascontiguousarray``).
* ``default_value(N)`` is applied **byte-wise** (memset of ``N & 0xFF``): an
  ``int16`` field with ``default_value(7)`` reads ``1799`` (0x0707) in unwritten
  samples, ``default_value(-5)`` reads ``-1029``; a ``float32`` one reads
  ``1.0158e-34``.  The writer stores these bytes inside partially written
  blocks, so only 1-byte dtypes have an unambiguous default in interop tests.
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("VISUS_CPP_VERBOSE", "0")

_OV = None


class EmptyLevelQuery(Exception):
    """OpenVisus refused a read because the box has no sample at that level."""


def have_openvisus() -> bool:
    """True if ``import OpenVisus`` works."""
    try:
        _ov()
    except ImportError:
        return False
    return True


def _ov():
    global _OV
    if _OV is None:
        import OpenVisus  # noqa: PLC0415  (lazy on purpose)

        _OV = OpenVisus
    return _OV


def _xfirst(seq):
    return [int(v) for v in reversed(tuple(seq))]


def _ov_dtype(arr: np.ndarray, ndim: int) -> str:
    if arr.ndim == ndim:
        return arr.dtype.name
    if arr.ndim == ndim + 1:
        return f"{arr.dtype.name}[{arr.shape[-1]}]"
    raise ValueError(f"array of shape {arr.shape} does not fit a {ndim}-D dataset")


def _ov_layout(layout: str) -> str:
    if layout in ("hzorder", "hz"):
        return "hzorder"
    if layout in ("rowmajor", "row_major", "", None):
        return ""
    raise ValueError(f"unknown layout {layout!r}")


def _time_range(times):
    times = sorted(int(t) for t in times)
    if times != list(range(times[0], times[-1] + 1)):
        raise ValueError(f"OpenVisus CreateIdx only declares contiguous times, got {times}")
    return times[0], times[-1]


def ov_write(path, arrays_by_field_and_time, dims, bitmask=None, bpb=None, bpf=None,
             layout="hzorder", codec="raw", times=None, *, default_values=None,
             offsets=None, field_dtypes=None):
    """Create an IDX dataset with OpenVisus and write arrays into it.

    Parameters
    ----------
    path : str or os.PathLike
        Destination ``.idx`` file (made absolute).
    arrays_by_field_and_time : dict
        ``{(field, time): ndarray}``.  Field order is first appearance.  The
        dtype comes from the array (an extra trailing axis makes a vector
        field ``dtype[n]``) unless ``field_dtypes`` gives it.
    dims : tuple of int
        Numpy-order shape ``(z, y, x)`` or ``(y, x)`` (same as ``hzio.create``).
    bitmask, bpb, bpf : optional
        ``None`` lets OpenVisus choose (``CreateIdx`` defaults).
    layout : {"hzorder", "rowmajor"}
    codec : str
        ``"raw"`` or a name for ``compressDataset`` (``"zip"``, ``"lz4"``,
        ``"zfp-reversible-reversible"``).
    times : iterable of int, optional
        Contiguous timesteps; ``None`` means no time template (time 0).
    default_values : dict, optional
        ``{field: int}`` written as ``default_value(N)``.
    offsets : dict, optional
        ``{(field, time): (z, y, x)}`` to write an array at an offset.
    field_dtypes : dict, optional
        ``{field: "uint8[3]"}`` for fields whose arrays are not all given.

    Returns
    -------
    str
        Absolute path of the ``.idx`` file.
    """
    ov = _ov()
    path = os.path.abspath(os.fspath(path))
    ndim = len(dims)
    field_dtypes = dict(field_dtypes or {})
    for (name, _t), arr in arrays_by_field_and_time.items():
        field_dtypes.setdefault(name, _ov_dtype(np.asarray(arr), ndim))
    default_values = default_values or {}
    lay = _ov_layout(layout)
    fields = []  # keep references: Field temporaries are unsafe (see module notes)
    for name, dtype in field_dtypes.items():
        text = f"{name} {dtype} default_layout({lay}) default_value({int(default_values.get(name, 0))})"
        fields.append(ov.Field.fromString(text))
    kwargs = dict(url=path, dims=_xfirst(dims), fields=fields)
    if bitmask is not None:
        kwargs["bitmask"] = bitmask
    if bpb is not None:
        kwargs["bitsperblock"] = int(bpb)
    if bpf is not None:
        kwargs["blocksperfile"] = int(bpf)
    if times is not None:
        first, last = _time_range(times)
        kwargs["time"] = [first, last, "time_%04d/"]
    db = ov.CreateIdx(**kwargs)
    offsets = offsets or {}
    for (name, t), arr in arrays_by_field_and_time.items():
        off = offsets.get((name, t), (0,) * ndim)
        x = _xfirst(off) + [0] * (3 - ndim)
        db.write(np.ascontiguousarray(arr), x=x[0], y=x[1], z=x[2], field=name,
                 time=int(t) if times is not None else None)
    if codec not in (None, "", "raw"):
        db.compressDataset(codec)
    return path


def ov_open(path):
    """``ov.LoadDataset`` on an absolute path."""
    return _ov().LoadDataset(os.path.abspath(os.fspath(path)))


def ov_read(path, field=None, time=None, box_zyx=None, level=None, db=None):
    """Read with OpenVisus and return a numpy array in ``[z, y, x(, c)]`` order.

    Parameters
    ----------
    path : str or os.PathLike
        ``.idx`` file (ignored when ``db`` is given).
    field, time : optional
        ``None`` = OpenVisus default (first field, first timestep).
    box_zyx : tuple, optional
        ``((z0, y0, x0), (z1, y1, x1))``, exclusive ``hi``; ``None`` = whole box.
    level : int, optional
        ``max_resolution``; ``None`` = full resolution.
    db : PyDataset, optional
        Reuse an already loaded dataset.

    Raises
    ------
    EmptyLevelQuery
        The box holds no sample of ``level`` (OpenVisus cannot return it).
    """
    db = db if db is not None else ov_open(path)
    kwargs = {}
    if field is not None:
        kwargs["field"] = field
    if time is not None:
        kwargs["time"] = int(time)
    if box_zyx is not None:
        lo, hi = box_zyx
        kwargs["logic_box"] = (_xfirst(lo), _xfirst(hi))
    if level is not None:
        kwargs["max_resolution"] = int(level)
    try:
        return np.asarray(db.read(**kwargs))
    except Exception as exc:  # OpenVisus raises bare Exception
        if "cannot find a good end_resolution" in str(exc):
            raise EmptyLevelQuery(str(exc)) from exc
        raise


def ov_info(path):
    """Metadata as OpenVisus sees it (numpy order for ``shape``)."""
    db = ov_open(path)
    lo, hi = db.getLogicBox()
    return {
        "shape": tuple(int(h) - int(l) for l, h in zip(reversed(lo), reversed(hi))),
        "bitmask": db.getBitmask().toString(),
        "max_level": int(db.getMaxResolution()),
        "bits_per_block": int(db.getDefaultBitsPerBlock()),
        "blocks_per_file": int(db.db.idxfile.blocksperfile),
        "times": [int(t) for t in db.getTimesteps()],
        "fields": list(db.getFields()),
    }
