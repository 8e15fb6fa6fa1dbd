"""Conversions between hzio's dtype strings and NumPy dtypes, and between [z, y, x] and x-first boxes;
the type aliases of the public signatures."""

from __future__ import annotations

import math
import operator
import os
from typing import Any, Mapping, Sequence, Tuple, Union

import numpy as np

from . import _core
from .errors import InvalidArgumentError

#: A box ``((z0, y0, x0), (z1, y1, x1))`` with an exclusive upper corner (``[y, x]``, ``[x]`` in 2-D, 1-D).
BoxLike = Tuple[Sequence[int], Sequence[int]]
#: What :func:`parse_dtype` accepts: ``"float32"``, ``"float32[3]"``, ``"3*float32"``, NumPy dtypes and types.
DTypeLike = Union[str, np.dtype, type]
#: What ``fields=`` of :func:`hzio.create` accepts: ``{name: dtype}`` or a list of ``(name, dtype)`` and
#: ``(name, dtype, {"codec": ..., "layout": ..., "default_value": ...})``.
FieldsLike = Union[Mapping[str, DTypeLike], Sequence[Tuple[Any, ...]]]

_SCALARS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64")


def parse_dtype(spec: DTypeLike) -> tuple[str, np.dtype, int]:
    """Local. Return ``(canonical_text, numpy_scalar_dtype, components)`` for a dtype given as text or NumPy.

    Accepts what ``numpy.dtype`` accepts for the supported scalars (``"float32"``, ``"f4"``, ``"<f4"``,
    ``"u1"``, ``numpy.float32``, ``np.dtype("(3,)f4")``), plus the IDX forms ``"float32[3]"`` and
    ``"3*float32"`` for vector fields. Raises :class:`hzio.InvalidArgumentError` for anything else,
    including big-endian dtypes (IDX stores little-endian samples).

    Examples
    --------
    >>> import hzio, numpy as np
    >>> hzio.parse_dtype("3*uint8")
    ('uint8[3]', dtype('uint8'), 3)
    >>> hzio.parse_dtype("<f4")[0], hzio.parse_dtype(np.float32)[0], hzio.parse_dtype("(2,)i2")[0]
    ('float32', 'float32', 'int16[2]')
    """
    if not isinstance(spec, str):
        try:
            dt = np.dtype(spec)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"not a dtype: {spec!r}") from e
        return _from_numpy(dt, spec)
    text = spec.strip().lower()
    comps = 1
    if "*" in text:
        n, _, text = text.partition("*")
        comps = _count(n, spec)
    elif text.endswith("]") and "[" in text:
        text, _, n = text[:-1].partition("[")
        comps = _count(n, spec)
    if text not in _SCALARS:
        try:
            dt = np.dtype(spec.strip() if comps == 1 else text)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"unknown dtype {spec!r} (expected int8..uint64, float32 or float64 in "
                                       "any form numpy.dtype accepts, optionally [N] for N components)") from None
        name, scalar, inner = _from_numpy(dt, spec)
        if inner > 1 and comps > 1:
            raise InvalidArgumentError(f"dtype {spec!r} gives the component count twice")
        text, comps = scalar.name, max(comps, inner)
    canonical = text if comps == 1 else f"{text}[{comps}]"
    return canonical, np.dtype(text), comps


def _from_numpy(dt: np.dtype, spec: Any) -> tuple[str, np.dtype, int]:
    comps = 1
    if dt.subdtype is not None:
        dt, shape = dt.subdtype
        if len(shape) != 1 or not 1 <= shape[0] <= 64:
            raise InvalidArgumentError(f"dtype {spec!r} must have one component axis of 1 to 64 components")
        comps = int(shape[0])
    if dt.byteorder == ">":
        raise InvalidArgumentError(f"dtype {spec!r} is big-endian; IDX stores little-endian samples (use "
                                   f"{dt.newbyteorder('<').str!r})")
    if dt.name not in _SCALARS:
        raise InvalidArgumentError(f"dtype {spec!r} ({dt}) is not supported (expected int8..uint64, float32 or "
                                   "float64)")
    canonical = dt.name if comps == 1 else f"{dt.name}[{comps}]"
    return canonical, np.dtype(dt.name), comps


def _count(n: str, spec: Any) -> int:
    try:
        c = int(n)
    except ValueError:
        c = 0
    if not 1 <= c <= 64:
        raise InvalidArgumentError(f"bad component count in dtype {spec!r}")
    return c


def fit_samples(array: Any, scalar: np.dtype, what: str) -> np.ndarray:
    """Local. ``array`` as a C-contiguous array of ``scalar``, if every value fits; else InvalidArgumentError.

    A value fits when it converts without overflow (floats) and exactly (integers, and integers stored
    as floats): float64 data goes into a float32 field as NumPy rounds it, but ``1e40`` does not, nor
    ``300`` into uint8, ``1.5`` into an integer field or ``2**60`` into float32 with another value.
    ``what`` names the target in the message.
    """
    src = np.asarray(array)
    if src.dtype.kind not in "biuf":
        if src.ndim == 0 and isinstance(src.item(), int):  # a Python int beyond 64 bits
            raise InvalidArgumentError(f"value {src.item()!r} does not fit {what} of dtype {scalar}")
        raise InvalidArgumentError(f"cannot write {src.dtype} data to {what} of dtype {scalar}")
    if np.can_cast(src.dtype, scalar, casting="safe"):
        return np.asarray(src, dtype=scalar, order="C")
    if src.dtype.kind == "f" and scalar.kind in "iu":
        raise InvalidArgumentError(f"cannot write {src.dtype} data to {what} of dtype {scalar}: convert it to "
                                   "integers explicitly")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(src, dtype=scalar, order="C")
        if src.dtype.kind == "f":  # float to a narrower float: only overflow loses a value
            bad = np.isfinite(src) & ~np.isfinite(out)
        elif scalar.kind in "iu":  # integers to narrower (or other-signed) integers: in range
            info = np.iinfo(scalar)
            bad = (src < info.min) | (src > info.max)
        else:  # integers to floats: must convert back exactly
            bad = out.astype(src.dtype) != src
    if np.any(bad):
        first = src[bad].flat[0] if src.ndim else src.item()
        raise InvalidArgumentError(f"value {first!r} does not fit {what} of dtype {scalar}")
    return out


def check_samples(array: Any, field: str, scalar: np.dtype, comps: int, ndim: int) -> np.ndarray:
    """Local. ``array`` as a C-contiguous ``scalar`` array, if its values fit (see :func:`fit_samples`) and it
    has the axes of ``field``'s samples."""
    array = np.asarray(array)
    if array.ndim != ndim + (comps > 1) or (comps > 1 and array.shape[-1] != comps):
        extra = f" plus a last axis of {comps}" if comps > 1 else ""
        raise InvalidArgumentError(f"field {field!r} needs an array of {ndim} axes{extra}, got shape {array.shape}")
    return fit_samples(array, scalar, f"field {field!r}")


def as_int(value: Any, what: str, minimum: int | None = None) -> int:
    """Local. ``value`` as an int (``operator.index``: ints and NumPy integers, not floats or text), at least
    ``minimum``; else InvalidArgumentError naming ``what``."""
    try:
        out = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} must be an integer, got {value!r}") from None
    if minimum is not None and out < minimum:
        raise InvalidArgumentError(f"{what} must be at least {minimum}, got {out}")
    return out


def as_path(path: Any) -> str:
    """Local. ``os.fspath(path)`` as text, or InvalidArgumentError for anything that is not a path."""
    try:
        out = os.fspath(path)
    except TypeError:
        raise InvalidArgumentError(f"path must be a str or os.PathLike, got {path!r}") from None
    if isinstance(out, bytes):
        out = os.fsdecode(out)
    if not out or "\0" in out:
        raise InvalidArgumentError(f"path {path!r} is empty or holds a NUL character")
    return out


def to_xfirst(zyx: Sequence[int], ndim: int, fill: int) -> tuple[int, int, int]:
    """Reverse a [z, y, x] tuple (length ndim) to an x-first triple padded with ``fill``."""
    vals = [int(v) for v in reversed(tuple(zyx))] + [fill] * (3 - ndim)
    return vals[0], vals[1], vals[2]


def to_zyx(xfirst: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Reverse an x-first triple to a [z, y, x] tuple of length ndim."""
    return tuple(int(v) for v in reversed(tuple(xfirst)[:ndim]))


# Reads of at least this many bytes get their array from hzio's memory cache (see empty_for_read).
_ALIGNED_READ_BYTES = 8 << 20


def empty_for_read(shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A new C-order array for a read's output.

    Large outputs come from hzio's memory cache (``hzio::ReadBuffer``): they start on a page, so hzio
    stores whole cache lines of them without reading them first, and when the array is freed its
    memory is kept for the next large read, which then skips the kernel's zeroing of fresh pages. Such
    an array is a view of a uint8 buffer (its ``base``); it behaves as any NumPy array otherwise.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(int(n) for n in shape) * dtype.itemsize  # Python integers: no overflow
    try:
        if nbytes < _ALIGNED_READ_BYTES:
            return np.empty(shape, dtype=dtype)
        return _core.read_buffer(nbytes).view(dtype).reshape(shape)
    except MemoryError:
        shown = "x".join(map(str, shape))
        raise MemoryError(f"a read of {shown} {dtype} samples needs {nbytes} bytes, more memory than this "
                          "process can have; read a smaller box or a coarser level") from None
