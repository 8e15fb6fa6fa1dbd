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
         order: str = "row-major", dtype: str | Sequence[str] = "float32", fields: int = 1,
         bitmask: str | None = None,
         rank_conforming: bool = False, bits_per_block: int | None = None, blocks_per_file: int | None = None,
         placement: str = "localized", aggregator_count: int = 0, aggregator_bytes: int = 256 << 20,
         partitions: int = 1, index_space: str = "global", details: bool = False) -> dict[str, Any]:
    """Local. Simulate the plan of a collective write of ``shape`` (``[z, y, x]``) by ranks laid out as
    ``grid`` (ranks per axis, numbered in ``order``; see :func:`hzio.grid_boxes`) or given their
    ``rank_boxes``, each writing ``fields`` fields of ``dtype`` in its box at one timestep (``dtype`` may
    also list one dtype per field).

    ``bitmask`` (default: the dataset's default) or ``rank_conforming=True`` (the bitmask of
    :func:`hzio.rank_conforming_bitmask`), ``bits_per_block``, ``blocks_per_file``, ``placement``,
    ``aggregator_count`` and ``aggregator_bytes`` mean what they mean to :func:`hzio.create` with
    ``comm``. ``partitions`` (a power of two) simulates the partitioned write of ``hzio.create(...,
    partitions=)``: the groups of ranks, the parts of boxes that straddle a partition plane moved to
    their group's leader, every group's own plan, and the merge of the shared files; with
    ``index_space="local"``, each group's plans of its partitions' datasets (nothing merged).

    Returns the summary as a dict: ``ranks``, ``files``, ``chunks``, ``aggregators``, ``rounds``,
    ``round_bytes_max`` (an aggregator's memory per round), ``bytes``, ``bitmask``, ``rank_conforming``,
    ``seconds`` (the planning time) and ``levels``: per level ``blocks``, ``files`` (per timestep),
    ``aggregators``, ``senders_max``/``senders_mean`` (ranks sending to one aggregator),
    ``messages``, ``messages_max``/``messages_mean`` (per aggregator; a message is what one rank sends
    one aggregator in one round), ``bytes``, ``bytes_max``/``bytes_mean``, ``cross_partition_messages``
    and ``chunk_bytes_max``; with ``details``, also ``aggregator_ranks`` (ascending). Over the whole
    write: ``messages``, ``senders_max`` (the largest aggregation group) and ``messages_max`` (the busiest
    aggregator's messages). Partitioned writes also give ``partitions``, ``groups`` (per group:
    ``partition``, ``partitions``, ``ranks``, ``aggregators``, ``files``, ``messages`` and ``bytes``, the
    sample bytes they move), ``moved_messages``/``moved_bytes`` and ``merge`` (``mergers``, ``files``,
    ``messages``, ``bytes``); messages crossing partitions are those between groups.
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
    count = as_int(fields, "fields", 1)
    if isinstance(dtype, str):
        texts = [parse_dtype(dtype)[0]] * count
    else:
        texts = [parse_dtype(d)[0] for d in dtype]
        if not texts or count not in (1, len(texts)):
            raise InvalidArgumentError(f"dtype lists {len(texts)} dtypes for {count} fields")
    start = time.perf_counter()
    summary = json.loads(_core.simulate_write_plan(
        list(to_xfirst(shape, len(shape), 1)[: len(shape)]), _xfirst_boxes(boxes, len(shape)), texts,
        bitmask or "", as_int(bits_per_block or 0, "bits_per_block", 0),
        as_int(blocks_per_file or 0, "blocks_per_file", -1), placement, as_int(aggregator_count, "aggregator_count", 0),
        as_int(aggregator_bytes, "aggregator_bytes", 1), as_int(partitions, "partitions", 1), bool(details),
        str(index_space)))
    summary["seconds"] = time.perf_counter() - start
    return summary


def plot_aggregators(png: str, shape: Sequence[int], grid: Sequence[int], **options: Any) -> str:
    """Local. Draw where the aggregators of each level sit in rank space (after seed 002's figure 6), for the
    dataset's default bitmask and, when the grid allows one, the rank-conforming bitmask, side by side;
    ``options`` as :func:`plan`. Writes ``png`` (matplotlib) and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [("default bitmask", dict(options)), ("rank-conforming bitmask", dict(options, rank_conforming=True))]
    fig, axes = plt.subplots(1, len(cases), figsize=(6.2 * len(cases), 4.6), squeeze=False)
    for ax, (title, opts) in zip(axes[0], cases):
        try:
            p = plan(shape, grid=grid, details=True, **opts)
        except InvalidArgumentError as e:
            ax.set_title(f"{title}: {e}", fontsize=8)
            continue
        for lv in p["levels"]:
            ranks = lv.get("aggregator_ranks", [])
            ax.plot([lv["level"]] * len(ranks), ranks, "s", ms=2.5, color="#1f77b4")
        ax.set_xlabel("level (block 0 holds levels 0 to bits per block)")
        ax.set_ylabel("aggregator rank")
        ax.set_ylim(-0.5, p["ranks"] - 0.5)
        ax.grid(alpha=0.3)
        ax.set_title(f"{title} {p['bitmask']}\n{p['aggregators']} aggregators, "
                     f"{'rank-conforming' if p['rank_conforming'] else 'not rank-conforming'}", fontsize=9)
    fig.suptitle(f"Aggregators in rank space per level: {'x'.join(map(str, shape))} over a {'x'.join(map(str, grid))} "
                 f"grid of ranks ({options.get('order', 'row-major')})", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def plot_partitions(png: str, shape: Sequence[int], grid: Sequence[int], counts: Sequence[int] = (1, 2, 4, 8, 16),
                    **options: Any) -> str:
    """Local. Draw the largest aggregation group and the busiest aggregator's messages against the partition
    count (after seed 002's figures 12 and 13, in messages instead of seconds), with the merge's messages;
    ``options`` as :func:`plan`. Counts the bitmask cannot take are left out. Writes ``png`` (matplotlib)
    and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for count in counts:
        try:
            rows.append((count, plan(shape, grid=grid, partitions=count, **options)))
        except InvalidArgumentError:
            continue
    if not rows:
        raise InvalidArgumentError(f"no partition count of {list(counts)} fits the bitmask")
    xs = [c for c, _ in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    series = [("largest aggregation group (ranks)", "senders_max", "o-"),
              ("busiest aggregator (messages)", "messages_max", "s-")]
    for label, key, style in series:
        ax.plot(xs, [p[key] for _, p in rows], style, label=label)
    merged = [(c, p["merge"]["messages"]) for c, p in rows if c > 1 and p["merge"]["messages"] > 0]
    if merged:  # one partition merges nothing
        ax.plot(*zip(*merged), "^--", label="merge messages (all mergers)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("partitions")
    ax.set_ylabel("count")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    first = rows[0][1]
    ax.set_title(f"{first['ranks']} ranks, {'x'.join(map(str, shape))}, bitmask {first['bitmask']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
