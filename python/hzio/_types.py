"""Conversions between hzio's dtype strings and NumPy dtypes, and between [z, y, x] and x-first boxes."""

import numpy as np

from . import _core
from .errors import InvalidArgumentError

_SCALARS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64")


def parse_dtype(spec):
    """Return ``(canonical_text, numpy_scalar_dtype, components)`` for a dtype given as text or NumPy.

    Accepts ``"float32"``, ``"float32[3]"``, ``"3*float32"``, ``numpy.float32`` or ``np.dtype("f4")``.
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


def _count(n, spec):
    try:
        c = int(n)
    except ValueError:
        c = 0
    if not 1 <= c <= 64:
        raise InvalidArgumentError(f"bad component count in dtype {spec!r}")
    return c


def to_xfirst(zyx, ndim, fill):
    """Reverse a [z, y, x] tuple (length ndim) to an x-first triple padded with ``fill``."""
    vals = [int(v) for v in reversed(tuple(zyx))]
    return tuple(vals + [fill] * (3 - ndim))


def to_zyx(xfirst, ndim):
    """Reverse an x-first triple to a [z, y, x] tuple of length ndim."""
    return tuple(int(v) for v in reversed(tuple(xfirst)[:ndim]))


# Reads of at least this many bytes get their array from hzio's memory cache (see empty_for_read).
_ALIGNED_READ_BYTES = 8 << 20


def empty_for_read(shape, dtype):
    """A new C-order array for a read's output.

    Large outputs come from hzio's memory cache (``hzio::ReadBuffer``): they start on a page, so hzio
    stores whole cache lines of them without reading them first, and when the array is freed its
    memory is kept for the next large read, which then skips the kernel's zeroing of fresh pages. Such
    an array is a view of a uint8 buffer (its ``base``); it behaves as any NumPy array otherwise.
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < _ALIGNED_READ_BYTES:
        return np.empty(shape, dtype=dtype)
    return _core.read_buffer(nbytes).view(dtype).reshape(shape)
