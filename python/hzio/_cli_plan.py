"""The ``hzio plan`` subcommand: the plan of a collective write simulated for any number of ranks
(:func:`hzio.plan`), as JSON or a table per level."""

import json
import os
import sys

from ._cli_util import UsageError, parse_ints


def plan(args):
    """Print the simulated plan of ``hzio plan``. Local.

    Parameters
    ----------
    args : argparse.Namespace
        ``global_shape``, ``grid`` (ranks per axis, z first) or ``rank_box``, ``order``, ``dtype`` (one, or
        one per field, comma-separated), ``fields``,
        ``bitmask``, ``template``, ``bits_per_block``, ``blocks_per_file``, ``placement``,
        ``aggregator_count``, ``aggregator_bytes``, ``partitions``, ``index_space`` and ``json``.

    Returns
    -------
    int
        0.
    """
    from .planning import plan as simulate

    shape = parse_ints(args.global_shape, "--global")
    if (args.grid is None) == (args.rank_box is None):
        raise UsageError("give --grid (ranks per axis) or --rank-box (each rank's box), not both")
    if args.rank_box is not None:
        box = parse_ints(args.rank_box, "--rank-box")
        if len(box) != len(shape) or any(n % b for n, b in zip(shape, box)):
            raise UsageError(f"--rank-box {args.rank_box!r} must divide --global {args.global_shape!r} on every axis")
        grid = tuple(n // b for n, b in zip(shape, box))
    else:
        grid = parse_ints(args.grid, "--grid")
    if len(grid) != len(shape):
        raise UsageError(f"--grid needs one rank count per axis of --global ({len(shape)}), got {args.grid!r}")
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    dtype = dtypes[0] if len(dtypes) == 1 else dtypes
    summary = simulate(shape, grid=grid, order=args.order, dtype=dtype, fields=args.fields,
                       bitmask=args.bitmask, rank_conforming=args.template, bits_per_block=args.bits_per_block,
                       blocks_per_file=args.blocks_per_file, placement=args.placement,
                       aggregator_count=args.aggregator_count, aggregator_bytes=args.aggregator_bytes,
                       partitions=args.partitions, index_space=args.index_space)
    if args.plot:
        from .planning import plot_aggregators, plot_partitions
        os.makedirs(args.plot, exist_ok=True)
        common = dict(order=args.order, dtype=dtype, fields=args.fields, bits_per_block=args.bits_per_block,
                      blocks_per_file=args.blocks_per_file, placement=args.placement,
                      aggregator_count=args.aggregator_count, aggregator_bytes=args.aggregator_bytes)
        png = plot_aggregators(os.path.join(args.plot, "plan_aggregators.png"), shape, grid, **common)
        print(f"wrote {png}", file=sys.stderr)
        counts = [1 << k for k in range(max(5, args.partitions.bit_length()))]
        png = plot_partitions(os.path.join(args.plot, "plan_partitions.png"), shape, grid, counts,
                              bitmask=args.bitmask, rank_conforming=args.template, **common)
        print(f"wrote {png}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
        return 0
    mib = 1 << 20
    conforming = "rank-conforming" if summary["rank_conforming"] else "not rank-conforming"
    fields = f"{args.fields} x {args.dtype}" if len(dtypes) == 1 else f"fields of {args.dtype}"
    print(f"{summary['ranks']} ranks, {len(shape)}-D {'x'.join(map(str, shape))}, {fields}, "
          f"bitmask {summary['bitmask']} ({conforming})")
    print(f"files {summary['files']}, chunks {summary['chunks']}, aggregators {summary['aggregators']}, "
          f"rounds {summary['rounds']}, at most {summary['round_bytes_max'] / mib:.1f} MiB per aggregator and round; "
          f"planned in {summary['seconds']:.2f} s")
    print(f"messages {summary['messages']}, largest aggregation group {summary['senders_max']} ranks, "
          f"busiest aggregator {summary['messages_max']} messages")
    if summary["groups"]:
        m = summary["merge"]
        sizes = [g["ranks"] for g in summary["groups"]]
        print(f"{summary['partitions']} partitions ({summary['index_space']} index space) in {len(sizes)} groups of "
              f"{min(sizes)} to {max(sizes)} ranks; "
              f"{summary['moved_messages']} parts of boxes moved ({summary['moved_bytes'] / mib:.1f} MiB); "
              f"merge: {m['files']} shared files by {m['mergers']} ranks, {m['messages']} messages, "
              f"{m['bytes'] / mib:.1f} MiB")
    head = (f"{'level':>5} {'blocks':>9} {'files':>6} {'aggs':>6} {'senders max':>11} {'mean':>8} {'msgs max':>9} "
            f"{'mean':>8} {'MiB max':>9} {'MiB mean':>9} {'cross-partition':>15}")
    print(head)
    for lv in summary["levels"]:
        print(f"{lv['level']:>5} {lv['blocks']:>9} {lv['files']:>6} {lv['aggregators']:>6} {lv['senders_max']:>11} "
              f"{lv['senders_mean']:>8.1f} {lv['messages_max']:>9} {lv['messages_mean']:>8.1f} "
              f"{lv['bytes_max'] / mib:>9.2f} {lv['bytes_mean'] / mib:>9.2f} {lv['cross_partition_messages']:>15}")
    return 0


def add_plan_arguments(p):
    """Local. The options of ``hzio plan`` on an argparse parser."""
    p.add_argument("--global", dest="global_shape", required=True, metavar="Z,Y,X",
                   help="the dataset's shape, z first (e.g. 4096,4096,8192)")
    p.add_argument("--grid", metavar="GZ,GY,GX", help="ranks per axis, z first (e.g. 32,64,64)")
    p.add_argument("--rank-box", metavar="Z,Y,X", help="instead of --grid: each rank's box, dividing --global")
    p.add_argument("--order", default="row-major", choices=["row-major", "column-major", "morton"],
                   help="how ranks are numbered over the grid (default row-major: x fastest)")
    p.add_argument("--dtype", default="float32",
                   help="every field's dtype, or one per field, comma-separated (default float32)")
    p.add_argument("--fields", type=int, default=1, help="number of fields (default 1)")
    p.add_argument("--bitmask", default=None, help="the dataset's bitmask (default: the default for the shape)")
    p.add_argument("--template", action="store_true",
                   help="use the rank-conforming bitmask of the grid (hzio.rank_conforming_bitmask)")
    p.add_argument("--bits-per-block", type=int, default=None)
    p.add_argument("--blocks-per-file", type=int, default=None)
    p.add_argument("--placement", default="localized", choices=["localized", "uniform"])
    p.add_argument("--aggregator-count", type=int, default=0, help="cap on distinct aggregators (0: none)")
    p.add_argument("--aggregator-bytes", type=int, default=256 << 20, help="an aggregator's memory per round")
    p.add_argument("--partitions", type=int, default=1,
                   help="simulate the partitioned write (a power of two; hzio.create(partitions=))")
    p.add_argument("--index-space", default="global", choices=["global", "local"],
                   help="with --partitions: one dataset (global) or one per partition and a .midx (local)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--plot", metavar="DIR", help="also draw DIR/plan_aggregators.png: the aggregators of each level in "
                   "rank space, with the default and the rank-conforming bitmask, and DIR/plan_partitions.png: the "
                   "largest aggregation group and busiest aggregator against 1, 2, 4, 8, 16 (up to --partitions) "
                   "partitions (matplotlib)")
