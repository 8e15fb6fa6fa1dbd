"""The plan of a collective write, simulated for any number of ranks in this one process (``hzio plan``):
the real planner that every rank of ``flush()`` runs, fed with the decomposition instead of an all-gather,
then summarized level by level. Local; needs hzio built with MPI (the planner lives in its parallel layer),
but makes no MPI call.

Examples
--------
>>> import hzio  # doctest: +SKIP
>>> p = hzio.plan((64, 64, 64), grid=(2, 2, 2), dtype="float32")  # doctest: +SKIP
>>> p["ranks"], p["files"], [lv["aggregators"] for lv in p["levels"]][-1]  # doctest: +SKIP
(8, 1, 1)
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

from . import _core
from ._types import BoxLike, as_int, parse_dtype, to_xfirst
from .errors import InvalidArgumentError, UnsupportedError
from .index_templates import _xfirst_boxes, grid_boxes, rank_conforming_bitmask


def plan(shape: Sequence[int], *, grid: Sequence[int] | None = None, rank_boxes: Sequence[BoxLike] | None = None,
         order: str = "row-major", dtype: str = "float32", fields: int = 1, bitmask: str | None = None,
         rank_conforming: bool = False, bits_per_block: int | None = None, blocks_per_file: int | None = None,
         placement: str = "localized", aggregator_count: int = 0, aggregator_bytes: int = 256 << 20,
         partitions: int = 1) -> dict[str, Any]:
    """Local. Simulate the plan of a collective write of ``shape`` (``[z, y, x]``) by ranks laid out as
    ``grid`` (ranks per axis, numbered in ``order``; see :func:`hzio.grid_boxes`) or given their
    ``rank_boxes``, each writing ``fields`` fields of ``dtype`` in its box at one timestep.

    ``bitmask`` (default: the dataset's default) or ``rank_conforming=True`` (the bitmask of
    :func:`hzio.rank_conforming_bitmask`), ``bits_per_block``, ``blocks_per_file``, ``placement``,
    ``aggregator_count`` and ``aggregator_bytes`` mean what they mean to :func:`hzio.create` with
    ``comm``. ``partitions`` (a power of two) labels each rank with the partition its box starts in
    (the partition template is the bitmask's first ``log2(partitions)`` characters), so the summary
    counts the messages that cross partitions.

    Returns the summary as a dict: ``ranks``, ``files``, ``chunks``, ``aggregators``, ``rounds``,
    ``round_bytes_max`` (an aggregator's memory per round), ``bytes``, ``bitmask``, ``rank_conforming``,
    ``seconds`` (the planning time) and ``levels``: per level ``blocks``, ``files`` (per timestep),
    ``aggregators``, ``senders_max``/``senders_mean`` (ranks sending to one aggregator),
    ``messages``, ``messages_max``/``messages_mean`` (per aggregator; a message is what one rank sends
    one aggregator in one round), ``bytes``, ``bytes_max``/``bytes_mean``, ``cross_partition_messages``
    and ``chunk_bytes_max``.
    """
    if not hasattr(_core, "simulate_write_plan"):
        raise UnsupportedError("hzio plan needs hzio built with MPI (-Ccmake.define.HZIO_WITH_MPI=ON)")
    shape = tuple(as_int(v, "shape", 1) for v in shape)
    if not 1 <= len(shape) <= 3:
        raise InvalidArgumentError(f"shape needs 1 to 3 axes, got {shape}")
    if placement not in ("localized", "uniform"):
        raise InvalidArgumentError(f"placement must be 'localized' or 'uniform', got {placement!r}")
    if (grid is None) == (rank_boxes is None):
        raise InvalidArgumentError("give either grid= (ranks per axis) or rank_boxes=")
    boxes = grid_boxes(shape, grid, order) if grid is not None else list(rank_boxes or [])
    if rank_conforming:
        if bitmask is not None:
            raise InvalidArgumentError("give bitmask= or rank_conforming=True, not both")
        bitmask = rank_conforming_bitmask(shape, boxes)
    text = parse_dtype(dtype)[0]
    count = as_int(fields, "fields", 1)
    start = time.perf_counter()
    summary = json.loads(_core.simulate_write_plan(
        list(to_xfirst(shape, len(shape), 1)[: len(shape)]), _xfirst_boxes(boxes, len(shape)), [text] * count,
        bitmask or "", as_int(bits_per_block or 0, "bits_per_block", 0),
        as_int(blocks_per_file or 0, "blocks_per_file", -1), placement, as_int(aggregator_count, "aggregator_count", 0),
        as_int(aggregator_bytes, "aggregator_bytes", 1), as_int(partitions, "partitions", 1)))
    summary["seconds"] = time.perf_counter() - start
    return summary
