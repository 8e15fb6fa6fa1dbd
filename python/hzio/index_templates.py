"""Indexing templates: the bitmask that makes a decomposition of the domain among ranks rank-conforming
(every level's Z curve visits the ranks in increasing order, so localized aggregation spreads the
aggregators evenly in rank space), the test for it, and the boxes of a grid of ranks. All Local.

Examples
--------
>>> import hzio
>>> boxes = hzio.grid_boxes((32, 32), grid=(4, 4))      # 4 x 4 ranks of 8 x 8 samples, row-major
>>> hzio.rank_conforming_bitmask((32, 32), boxes)        # prefix yyxx, then yxyxyx inside a box
'V1100101010'
>>> hzio.is_rank_conforming("V1100101010", boxes), hzio.is_rank_conforming("V0101010101", boxes)
(True, False)
"""

from __future__ import annotations

import itertools
from typing import Sequence

from . import _core
from ._types import BoxLike, as_int, to_xfirst
from .errors import Error, InvalidArgumentError

ORDERS = ("row-major", "column-major", "morton")


def grid_boxes(shape: Sequence[int], grid: Sequence[int], order: str = "row-major") -> list[BoxLike]:
    """Local. The boxes (``((z0, y0, x0), (z1, y1, x1))``, in rank order) of ranks laid out as ``grid`` ranks
    per axis over ``shape`` samples.

    ``order`` numbers the ranks: ``"row-major"`` (x fastest, as MPI_Cart_create does), ``"column-major"``
    (z fastest) or ``"morton"`` (the bits of the grid position interleaved z, y, x from the top; needs
    power-of-two grid sides). Sides that do not divide evenly give the last ranks smaller boxes.
    """
    shape = tuple(as_int(v, "shape", 1) for v in shape)
    grid = tuple(as_int(v, "grid", 1) for v in grid)
    if len(grid) != len(shape):
        raise InvalidArgumentError(f"grid {grid} needs one rank count per axis of shape {shape}")
    if order not in ORDERS:
        raise InvalidArgumentError(f"order must be one of {ORDERS}, got {order!r}")
    side = tuple(-(-n // g) for n, g in zip(shape, grid))
    positions = list(itertools.product(*(range(g) for g in grid)))  # row-major: last axis fastest
    if order == "column-major":
        positions = [p[::-1] for p in itertools.product(*(range(g) for g in grid[::-1]))]
    elif order == "morton":
        if any(g & (g - 1) for g in grid):
            raise InvalidArgumentError(f"morton order needs power-of-two grid sides, got {grid}")
        positions.sort(key=lambda p: _morton_key(p, grid))
    boxes: list[BoxLike] = []
    for p in positions:
        lo = tuple(min(i * s, n) for i, s, n in zip(p, side, shape))
        hi = tuple(min((i + 1) * s, n) for i, s, n in zip(p, side, shape))
        boxes.append((lo, hi))
    return boxes


def _morton_key(position: tuple[int, ...], grid: tuple[int, ...]) -> int:
    bits = [g.bit_length() - 1 for g in grid]
    key = 0
    while any(bits):
        for a in range(len(grid)):  # the slowest axis (z) first
            if bits[a]:
                bits[a] -= 1
                key = (key << 1) | ((position[a] >> bits[a]) & 1)
    return key


def _xfirst_boxes(rank_boxes: Sequence[BoxLike], ndim: int) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    out = []
    for r, box in enumerate(rank_boxes):
        try:
            lo, hi = box
            if len(lo) != ndim or len(hi) != ndim:
                raise ValueError
            out.append((to_xfirst([as_int(v, "box") for v in lo], ndim, 0),
                        to_xfirst([as_int(v, "box") for v in hi], ndim, 1)))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"rank {r}'s box must be (lo, hi) with {ndim} integers each ([z, y, x]), "
                                       f"got {box!r}") from None
    return out


def rank_conforming_bitmask(shape: Sequence[int], rank_boxes: Sequence[BoxLike]) -> str:
    """Local. The bitmask whose first ``log2(len(rank_boxes))`` characters number the ranks' boxes in rank
    order and whose other characters interleave the samples of one box (x, y, z in turn from the finest
    level up), so that it is rank-conforming for ``rank_boxes`` (``[z, y, x]`` boxes in rank order).

    The boxes must tile ``shape`` as a grid of equal boxes with power-of-two sides and counts, numbered
    in an order a prefix can express (row-major, column-major, Morton, ...); else
    hzio.InvalidArgumentError says which rule breaks. Pass the result as ``bitmask=`` to
    :func:`hzio.create`: it is never chosen for you.
    """
    shape = tuple(as_int(v, "shape", 1) for v in shape)
    if not 1 <= len(shape) <= 3:
        raise InvalidArgumentError(f"shape needs 1 to 3 axes, got {shape}")
    boxes = _xfirst_boxes(rank_boxes, len(shape))
    return _core.rank_conforming_bitmask(len(shape), to_xfirst(shape, len(shape), 1), boxes)


def is_rank_conforming(bitmask: str, rank_boxes: Sequence[BoxLike]) -> bool:
    """Local. Whether ``bitmask`` is rank-conforming for ``rank_boxes`` (``[z, y, x]``, in rank order): rank
    ``r``'s box is exactly the aligned range of Z addresses numbered ``r`` by the bitmask's first
    ``log2(R)`` characters, which makes every level's curve visit the ranks in increasing order.
    :func:`why_not_rank_conforming` says why not."""
    return why_not_rank_conforming(bitmask, rank_boxes) is None


def why_not_rank_conforming(bitmask: str, rank_boxes: Sequence[BoxLike]) -> str | None:
    """Local. None if ``bitmask`` is rank-conforming for ``rank_boxes``, else the reason (which rank, why)."""
    ndim = len(rank_boxes[0][0]) if rank_boxes else 1
    boxes = _xfirst_boxes(rank_boxes, ndim)
    if not isinstance(bitmask, str):
        raise InvalidArgumentError(f"bitmask must be a str such as 'V012', got {bitmask!r}")
    try:
        _core.check_rank_conforming(bitmask, boxes)
    except InvalidArgumentError as e:
        return str(e)
    except Error:
        raise
    return None
