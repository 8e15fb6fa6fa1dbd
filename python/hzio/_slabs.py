"""How the streaming verbs cut their work so that memory stays bounded: the boxes ``hzio convert`` writes,
which follow the dataset's bitmask, and the slabs of a level grid that ``hzio read`` and ``hzio export``
read.

A box of :func:`hz_boxes` is one cell of the first splits of the bitmask (docs/format.md, "Bitmask"), so it
holds whole blocks at every level finer than those splits: only one block per box, at the coarse levels,
is shared with other boxes. Slabs cut along the first axis of a level grid would instead leave almost every
block of the dataset partly written by several slabs.
"""

from __future__ import annotations

from typing import Any

MIB = 1 << 20


def hz_boxes(bitmask: str, shape: tuple[int, ...], sample_bytes: int,
             max_bytes: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Local. Cut a dataset into boxes of at most ``max_bytes`` along its bitmask, in HZ order.

    Parameters
    ----------
    bitmask : str
        The dataset's bitmask (``"V012..."``; digit 0 is x).
    shape : tuple of int
        The dataset shape ([z, y, x]).
    sample_bytes : int
        Bytes of one sample (of every field written together).
    max_bytes : int
        Largest box, in bytes; a box is never smaller than one sample.

    Returns
    -------
    list of ((lo...), (hi...))
        Boxes in [z, y, x] order with exclusive ends, clipped to ``shape`` (boxes wholly in the padding of
        a shape that is not a power of two are left out), in the order of their HZ addresses.

    Examples
    --------
    >>> hz_boxes("V0101", (4, 4), 1, 8)
    [((0, 0), (4, 2)), ((0, 2), (4, 4))]
    """
    digits = [int(c) for c in bitmask.lstrip("V")]
    ndim = len(shape)
    padded = [1 << digits.count(ndim - 1 - a) for a in range(ndim)]  # [z, y, x]; digit d splits axis ndim-1-d
    splits = 0
    while splits < len(digits) and (sample_bytes << (len(digits) - splits)) > max_bytes:
        splits += 1
    extent = list(padded)
    for d in digits[:splits]:
        extent[ndim - 1 - d] //= 2
    boxes = []
    for b in range(1 << splits):
        lo = [0] * ndim
        size = list(padded)
        for k, d in enumerate(digits[:splits]):
            a = ndim - 1 - d
            size[a] //= 2
            if (b >> (splits - 1 - k)) & 1:
                lo[a] += size[a]
        hi = [min(l + e, n) for l, e, n in zip(lo, extent, shape)]
        if all(l < h for l, h in zip(lo, hi)):
            boxes.append((tuple(lo), tuple(hi)))
    return boxes


def level_axes(ds: Any, box: tuple[tuple[int, ...], tuple[int, ...]], level: int) -> list[tuple[int, int, int, int]]:
    """Local. Per axis ([z, y, x]) of the grid that ``ds.read(box, level=level)`` returns:
    ``(first index, count, origin, spacing)``, where grid sample ``i`` of the whole dataset's level grid lies
    at dataset coordinate ``origin + i * spacing``."""
    view = ds.level(level)
    out = []
    for lo, hi, o, s in zip(box[0], box[1], view.origin, view.spacing):
        first = max(0, -(-(lo - o) // s))
        end = max(first, -(-(hi - o) // s))
        out.append((first, end - first, o, s))
    return out


def level_slabs(ds: Any, box: tuple[tuple[int, ...], tuple[int, ...]], level: int, plane_bytes: int,
                max_bytes: int, multiple: int = 1) -> list[tuple[int, int, tuple[tuple[int, ...], tuple[int, ...]]]]:
    """Local. Cut the level grid of ``box`` into slabs along its first axis, each about ``max_bytes``.

    ``plane_bytes`` is the size of one plane of the grid (all axes but the first); the plane count of a
    slab is a multiple of ``multiple`` (the chunk extent of a Zarr or NetCDF output, so that no chunk is
    written twice). Returns ``(a, b, slab_box)``: grid planes ``[a, b)`` (counted from the box's first
    plane), and the dataset box whose ``read(slab_box, level=level)`` gives them.
    """
    axes = level_axes(ds, box, level)
    first, count, origin, spacing = axes[0]
    planes = max(1, max_bytes // max(1, plane_bytes))
    planes = max(multiple, planes // multiple * multiple)
    out = []
    for a in range(0, count, planes):
        b = min(a + planes, count)
        z0 = origin + (first + a) * spacing
        z1 = origin + (first + b - 1) * spacing + 1
        out.append((a, b, ((z0,) + tuple(box[0][1:]), (z1,) + tuple(box[1][1:]))))
    return out


def parse_bytes(text: str, option: str) -> int:
    """Local. ``"64M"``, ``"1G"``, ``"512K"``, ``"64MiB"`` or a plain byte count, as an int (at least 1).

    Examples
    --------
    >>> parse_bytes("64M", "--slab-bytes"), parse_bytes("1GiB", "--slab-bytes"), parse_bytes("4096", "x")
    (67108864, 1073741824, 4096)
    """
    from ._cli_util import UsageError
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    try:
        value = int(float(t[:-1] if scale > 1 else t) * scale)
    except ValueError:
        raise UsageError(f"{option} expects a size such as 64M, 1G or 4096, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{option} must be positive, got {text!r}")
    return value
