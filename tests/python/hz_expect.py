"""Independent, numpy-only expectations for IDX datasets.

Nothing here imports ``hzio`` or ``OpenVisus``: these functions restate
``shared/reference/idx-format.md`` (sections 4.5 and 5) so that the tests can
compute what a read must return without trusting either implementation.

Conventions
-----------
* ``shape`` is a C-order numpy shape ``(z, y, x)`` or ``(y, x)``.
* A bitmask digit ``a`` names the OpenVisus axis ``a`` (0 = x).  Numpy axis
  ``i`` of an ``ndim``-dimensional array is OpenVisus axis ``ndim - 1 - i``.
* Boxes are ``(lo, hi)`` in numpy axis order with exclusive ``hi``.
"""

from __future__ import annotations

import math

import numpy as np

INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
SCALAR_DTYPES = INT_DTYPES + ("float32", "float64")
VECTOR_DTYPES = ("float32[3]", "uint8[3]", "int16[2]", "float64[4]")


def pow2_bits(n: int) -> int:
    """Number of bitmask digits an axis of size ``n`` needs (``ceil(log2 n)``)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def needs_explicit_bitmask(shape) -> bool:
    """True when OpenVisus' guessed bitmask is invalid for ``shape``.

    The guess gives a size-1 axis no digit, so when the *last* OpenVisus axis
    (numpy axis 0) is 1 the bitmask has fewer axes than the box and
    ``CreateIdx`` writes ``(version) -1`` (idx-format.md section 5).
    """
    return shape[0] == 1


def guess_bitmask(shape) -> str:
    """OpenVisus 2.2.149 default bitmask for ``shape`` (idx-format.md section 5, rule 2)."""
    p = [1 << pow2_bits(n) for n in reversed(shape)]  # x first
    digits = []
    while any(v > 1 for v in p):
        for a in range(len(p)):
            if p[a] > 1:
                digits.append(str(a))
                p[a] //= 2
    return "V" + "".join(digits)


def random_bitmask(rng: np.random.Generator, shape, extra: int = 0) -> str:
    """A random valid bitmask covering ``shape``.

    Every axis gets ``ceil(log2 size)`` digits (the last OpenVisus axis at
    least one, so that ``pdim == len(shape)``), plus ``extra`` surplus digits
    on random axes (a power-of-two box larger than needed is legal), shuffled.
    """
    ndim = len(shape)
    counts = [pow2_bits(n) for n in reversed(shape)]
    counts[ndim - 1] = max(1, counts[ndim - 1])
    for _ in range(extra):
        counts[int(rng.integers(ndim))] += 1
    digits = [str(a) for a in range(ndim) for _ in range(counts[a])]
    rng.shuffle(digits)
    return "V" + "".join(digits)


def covers(bitmask: str, shape) -> bool:
    """True if the bitmask has ``len(shape)`` axes and its power-of-two box holds ``shape``."""
    digits = bitmask[1:]
    if not digits or max(int(c) for c in digits) != len(shape) - 1:
        return False
    return all(2 ** digits.count(str(len(shape) - 1 - i)) >= n for i, n in enumerate(shape))


def max_level(bitmask: str) -> int:
    """``maxh``: the finest resolution level."""
    return len(bitmask) - 1


def spacing(bitmask: str, level: int, ndim: int) -> tuple:
    """Grid spacing of resolution ``level``, per numpy axis.

    ``s_H[a] = 2 ** #{K in (H, maxh] : B[K] == a}`` (idx-format.md section 4.5).
    """
    maxh = max_level(bitmask)
    if not 0 <= level <= maxh:
        raise ValueError(f"level {level} outside 0..{maxh}")
    tail = bitmask[level + 1:]
    per_ov_axis = [1 << tail.count(str(a)) for a in range(ndim)]
    return tuple(reversed(per_ov_axis))


def level_slices(bitmask: str, box, level: int) -> tuple:
    """Numpy slices selecting the resolution-``level`` grid inside ``box``.

    The grid is aligned to 0: along each axis the first sample is the first
    multiple of the spacing that is ``>= lo``.
    """
    lo, hi = box
    steps = spacing(bitmask, level, len(lo))
    out = []
    for l, h, s in zip(lo, hi, steps):
        first = -(-l // s) * s
        out.append(slice(first, h, s))
    return tuple(out)


def level_shape(bitmask: str, box, level: int) -> tuple:
    """Shape (without component axis) of ``level_slices``; a 0 means an empty grid."""
    lo, hi = box
    return tuple(len(range(s.start, h, s.step))
                 for s, h in zip(level_slices(bitmask, box, level), hi))


def expected_level(src: np.ndarray, bitmask: str, box, level: int) -> np.ndarray:
    """``src`` (full-resolution array) restricted to the level grid inside ``box``."""
    return src[level_slices(bitmask, box, level)]


def hz_address(bitmask: str, index_arrays) -> np.ndarray:
    """HZ address of points given as numpy-order index arrays (section 4.2-4.3).

    ``index_arrays`` is e.g. ``np.indices(shape)``; the result has their shape.
    """
    maxh = max_level(bitmask)
    ndim = len(index_arrays)
    rem = [np.asarray(index_arrays[ndim - 1 - a], dtype=np.int64).copy() for a in range(ndim)]
    z = np.zeros_like(rem[0])
    for s in range(maxh):
        a = int(bitmask[maxh - s])
        z |= (rem[a] & 1) << s
        rem[a] >>= 1
    zz = z | (1 << maxh)
    ctz = np.log2(zz & -zz).astype(np.int64)
    return zz >> (ctz + 1)


def random_box(rng: np.random.Generator, shape):
    """A random non-empty box inside ``shape``: ``(lo, hi)`` tuples."""
    lo, hi = [], []
    for n in shape:
        a, b = sorted(int(v) for v in rng.integers(0, n + 1, size=2))
        if a == b:
            a, b = (a - 1, a) if a == n else (a, a + 1)
        lo.append(a)
        hi.append(b)
    return tuple(lo), tuple(hi)


def random_array(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Random data covering the whole range of ``dtype`` (``"float32[3]"`` adds an axis)."""
    base, ncomp = split_dtype(dtype)
    full = tuple(shape) + ((ncomp,) if ncomp > 1 else ())
    if base.startswith("float"):
        arr = rng.standard_normal(full) * 1e3
        return arr.astype(base)
    info = np.iinfo(base)
    return rng.integers(info.min, info.max, size=full, dtype=base, endpoint=True)


def split_dtype(dtype: str):
    """``"float32[3]"`` -> ``("float32", 3)``; ``"3*uint8"`` -> ``("uint8", 3)``."""
    dtype = str(dtype).strip()
    if "*" in dtype:
        n, base = dtype.split("*", 1)
        return base.strip(), int(n)
    if dtype.endswith("]"):
        base, n = dtype[:-1].split("[")
        return base, int(n)
    return dtype, 1


def sample_value(name: str, shape, field: str = None, time: int = 0) -> np.ndarray:
    """Full-resolution values of the OpenVisus samples, from the README formulas."""
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    if len(shape) == 2:
        y, x = grids
        z = 0
    else:
        z, y, x = grids
    if name == "u8x3_2d_hzorder_zip":
        return np.stack([x, y, x + y], axis=-1).astype(np.uint8)
    if name == "u8_2d_time":
        return (x + 10 * y + 100 * time).astype(np.uint8)
    if name == "u8_2d_partial_missing":
        v = (x + 10 * y).astype(np.uint8)
        v[4:, :] = 7
        v[:, 8:] = 7
        return v
    if name.startswith("u8_2d"):
        return (x + 10 * y).astype(np.uint8)
    if name == "i16_3d_npot_rowmajor_raw":
        return (x + 100 * y + 1000 * z).astype(np.int16)
    if name.startswith("f32_3d"):
        if field == "b":
            return (x - y + 0.5 * z).astype(np.float32)
        return (x + 100 * y + 10000 * z).astype(np.float32)
    raise KeyError(name)
