"""The ``hzio convert`` subcommand: .npy, headerless binary, HDF5, NetCDF or Zarr input to a new IDX dataset,
streamed box by box in bounded memory, on one process or collectively under ``mpiexec``.

The input is read by :mod:`hzio._convert_sources`; the boxes follow the dataset's bitmask
(:func:`hzio._slabs.hz_boxes`), so each block is written once, except one coarse block per box.
"""

from __future__ import annotations

import os
import time

import numpy as np

import hzio

from ._cli_index import world_comm
from ._cli_util import MIB, UsageError, print_json
from ._convert_sources import open_input
from ._progress import progress_bar, wanted
from ._slabs import hz_boxes, parse_bytes

SLAB_BYTES = 64 * MIB
# One process commits once the coarse blocks its boxes share, held decoded until a commit, reach this
# (or --slab-bytes when larger): a bound on that memory that costs few commits (each rewrites those blocks).
COMMIT_BYTES = 16 * MIB


def convert(args):
    """Run ``hzio convert``: write INPUT's variables (fields) and time axis (timesteps) into OUTPUT.idx.

    Local on one process; Collective under ``mpiexec`` with several ranks (``MPI.COMM_WORLD``): the
    boxes are shared round robin, every rank reads its own from the input, and each round of boxes is
    written and committed collectively. The files are the same bytes either way.

    Parameters
    ----------
    args : argparse.Namespace
        ``input``, ``output``, ``format``, ``variables``, ``time_dim``, ``shape``, ``dtype``, ``field``,
        ``codec``, ``layout``, ``bits_per_block``, ``blocks_per_file``, ``slab_bytes``, ``overwrite``,
        ``progress`` (None: only on a terminal) and ``json``.

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    hzio._cli_util.UsageError
        Bad options, an input hzio cannot take (missing variable, shapes that differ, more than three
        spatial axes, an unsupported dtype), or an existing OUTPUT without ``--overwrite``.
    hzio.Error, OSError
        From reading the input or writing the dataset.
    """
    if os.path.isfile(args.output) and not args.overwrite:  # other path problems: hzio.create says what is wrong
        raise UsageError(f"dataset {args.output} exists; pass --overwrite to replace it")
    slab_bytes = SLAB_BYTES if args.slab_bytes is None else parse_bytes(args.slab_bytes, "--slab-bytes")
    comm = world_comm()
    source = open_input(args.input, fmt=args.format, variables=args.variables, time_dim=args.time_dim,
                        shape=args.shape, dtype=args.dtype, field=args.field)
    try:
        result = _convert(args, source, comm, slab_bytes)
    finally:
        source.close()
    if comm is not None and comm.Get_rank() != 0:
        return 0
    if args.json:
        print_json(result)
    else:
        mib = result["bytes"] / MIB
        fields = ", ".join(f"{n}: {d}" for n, d in result["fields"].items())
        times = f", {len(result['times'])} timesteps" if source.timed else ""
        print(f"wrote {result['output']} (fields {fields}; codec {args.codec}, shape "
              f"{'x'.join(map(str, result['shape']))}{times}): {mib:.1f} MiB in {result['seconds']:.2f} s "
              f"({mib / max(result['seconds'], 1e-9):.1f} MiB/s)")
    return 0


def _convert(args, source, comm, slab_bytes):
    rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
    if comm is None and (args.partitions != 1 or args.index_space != "global"):
        raise UsageError("--partitions and --index-space take effect under mpiexec only")
    extra = {} if comm is None else {"comm": comm, "aggregator_bytes": slab_bytes, "partitions": args.partitions,
                                     "index_space": args.index_space}
    start = time.perf_counter()
    total = source.sample_bytes * int(np.prod(source.spatial)) * len(source.times)
    with hzio.create(args.output, shape=source.spatial, fields=source.fields, codec=args.codec,
                     layout=args.layout, bits_per_block=args.bits_per_block, blocks_per_file=args.blocks_per_file,
                     times=source.times if source.timed else None, overwrite=args.overwrite, **extra) as ds:
        boxes = hz_boxes(ds.bitmask, source.spatial, source.sample_bytes, slab_bytes)
        with progress_bar(wanted(args.progress, rank), total, "convert") as bar:
            if comm is None:
                _write_alone(ds, source, boxes, bar, slab_bytes)
            else:
                _write_together(ds, source, boxes, bar, comm)
            bar.set_postfix_str("committing")
        output = ds.path
    return {"output": output, "input": source.path, "format": source.format, "fields": dict(source.fields),
            "shape": list(source.spatial), "times": list(source.times), "boxes": len(boxes), "bytes": total,
            "ranks": size, "seconds": round(time.perf_counter() - start, 3)}


def _write_alone(ds, source, boxes, bar, slab_bytes):
    """One process: every box of every timestep; commit whenever the coarse blocks the boxes share (about one
    block per box and field) pass :data:`COMMIT_BYTES` or ``slab_bytes``."""
    shared_per_box = sum(source.field_sample_bytes(i) for i in range(len(source.fields))) << ds.bits_per_block
    held = 0
    for ti, t in enumerate(source.times):
        for lo, hi in boxes:
            for f, (name, _) in enumerate(source.fields):
                samples = source.read(f, ti, lo, hi)
                ds.write(samples, offset=lo, field=name, time=t)
                bar.update(samples.nbytes)
                del samples
            held += shared_per_box if len(boxes) > 1 else 0
            if held > max(slab_bytes, COMMIT_BYTES):
                ds.flush()
                held = 0


def _write_together(ds, source, boxes, bar, comm):
    """MPI: in rounds, rank r writes box ``round * ranks + r`` (all fields), then all commit together. A rank
    that fails to read its box tells the others before the commit, so that every rank stops."""
    rank, size = comm.Get_rank(), comm.Get_size()
    box_bytes = [source.sample_bytes * int(np.prod([h - l for l, h in zip(lo, hi)])) for lo, hi in boxes]
    for ti, t in enumerate(source.times):
        for first in range(0, len(boxes), size):
            error = None
            if first + rank < len(boxes):
                lo, hi = boxes[first + rank]
                try:
                    for f, (name, _) in enumerate(source.fields):
                        ds.write(source.read(f, ti, lo, hi), offset=lo, field=name, time=t, copy=False)
                except (UsageError, hzio.Error, OSError, MemoryError) as e:
                    error = e
            failures = comm.allgather(None if error is None else str(error))
            if error is not None:
                raise error
            failed = next((i for i, e in enumerate(failures) if e), None)
            if failed is not None:
                raise UsageError(f"rank {failed} failed: {failures[failed]}")
            ds.flush()
            bar.update(sum(box_bytes[first:first + size]))
