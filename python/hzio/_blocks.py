"""The table :meth:`hzio.Dataset.blocks` returns: one row per block, from the ``BlockInfo`` results of
``hzio._core``, as a NumPy structured array."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _core


def block_table(rows: Sequence[Any], comps: int, blocks_per_file: int) -> np.ndarray:
    """Local. The structured array of ``rows`` (``_core.BlockInfo``) of a field of ``comps`` components.

    Statistics read as unknown (``stats_known`` false, NaN) unless a sidecar gave them; a missing block
    with known statistics has ``count`` 0 and NaN ``min``/``max``.
    """
    width = max([len(r.file) for r in rows] + [1])
    vshape = (comps,) if comps > 1 else ()
    dt = np.dtype([("block", np.int64), ("level", np.int32), ("file", f"U{width}"), ("present", bool),
                   ("offset", np.uint64), ("size", np.uint32), ("codec", np.uint8), ("rowmajor", bool),
                   ("slot", np.int64), ("entry", np.int64), ("stats_known", bool), ("checksummed", bool),
                   ("count", np.uint64),
                   ("min", np.float64, vshape), ("max", np.float64, vshape)])
    out = np.zeros(len(rows), dtype=dt)
    for i, r in enumerate(rows):
        present = r.offset != 0 and r.size != 0
        known = r.stats_known and (r.count > 0 or not present)
        mn = r.min if known and r.count > 0 else [np.nan] * comps
        mx = r.max if known and r.count > 0 else [np.nan] * comps
        out[i] = (r.block, r.level, r.file, present, r.offset, r.size, r.flags & _core.BLOCK_FLAG_CODEC_MASK,
                  bool(r.flags & _core.BLOCK_FLAG_ROW_MAJOR), r.entry % blocks_per_file, r.entry, known,
                  r.checksums_known, r.count if known else 0, mn if comps > 1 else mn[0], mx if comps > 1 else mx[0])
    return out
