"""Conversions between hzio's dtype strings and NumPy dtypes, and between [z, y, x] and x-first boxes;
the type aliases of the public signatures."""

from __future__ import annotations

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

    Accepts ``"float32"``, ``"float32[3]"``, ``"3*float32"``, ``numpy.float32`` or ``np.dtype("f4")``.
    Raises :class:`hzio.InvalidArgumentError` for anything else.

    Examples
    --------
    >>> import hzio, numpy as np
    >>> hzio.parse_dtype("3*uint8")
    ('uint8[3]', dtype('uint8'), 3)
    >>> hzio.parse_dtype(np.float32)[0]
    'float32'
    """
    if not isinstance(spec, str):
        try:
            dt = np.dtype(spec)
        except TypeError as e:
            raise InvalidArgumentError(f"not a dtype: {spec!r}") from e
        if dt.subdtype is not None:
            base, shape = dt.subdtype
            if len(shape) != 1:
                raise InvalidArgumentError(f"dtype {dt} must have one component axis")
            return parse_dtype(f"{base.name}[{shape[0]}]")
        spec = dt.name
    text = spec.strip().lower()
    comps = 1
    if "*" in text:
        n, _, text = text.partition("*")
        comps = _count(n, spec)
    elif text.endswith("]") and "[" in text:
        text, _, n = text[:-1].partition("[")
        comps = _count(n, spec)
    if text not in _SCALARS:
        raise InvalidArgumentError(f"unknown dtype {spec!r} (expected int8..uint64, float32 or float64, "
                                   "optionally [N])")
    canonical = text if comps == 1 else f"{text}[{comps}]"
    return canonical, np.dtype(text), comps


def _count(n: str, spec: Any) -> int:
    try:
        c = int(n)
    except ValueError:
        c = 0
    if not 1 <= c <= 64:
        raise InvalidArgumentError(f"bad component count in dtype {spec!r}")
    return c


def check_samples(array: Any, field: str, scalar: np.dtype, comps: int, ndim: int) -> np.ndarray:
    """Local. ``array`` as a NumPy array, if it casts safely to ``scalar`` and has the axes of ``field``'s samples."""
    array = np.asarray(array)
    if not np.can_cast(array.dtype, scalar, casting="safe"):
        raise InvalidArgumentError(f"cannot write {array.dtype} data to field {field!r} of dtype {scalar} "
                                   "without losing values; convert it explicitly")
    if array.ndim != ndim + (comps > 1) or (comps > 1 and array.shape[-1] != comps):
        extra = f" plus a last axis of {comps}" if comps > 1 else ""
        raise InvalidArgumentError(f"field {field!r} needs an array of {ndim} axes{extra}, got shape {array.shape}")
    return array


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
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    try:
        if nbytes < _ALIGNED_READ_BYTES:
            return np.empty(shape, dtype=dtype)
        return _core.read_buffer(nbytes).view(dtype).reshape(shape)
    except MemoryError:
        shown = "x".join(map(str, shape))
        raise MemoryError(f"a read of {shown} {dtype} samples needs {nbytes} bytes, more memory than this "
                          "process can have; read a smaller box or a coarser level") from None
