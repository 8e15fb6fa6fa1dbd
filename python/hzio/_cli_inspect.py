"""The ``hzio info`` and ``hzio read`` subcommands: describe a dataset, and read a box to a .npy file."""

import numpy as np

import hzio

from ._cli_util import axes_text, dataset_box, parse_box, print_fields, print_json, print_table, shape_text


def describe(ds):
    """Return a JSON-ready dict describing an open dataset (what ``hzio info --json`` prints).

    Parameters
    ----------
    ds : hzio.Dataset
        An open dataset.

    Returns
    -------
    dict
        ``path``, ``shape`` ([z, y, x]), ``origin`` (lower corner of the box), ``ndim``, ``fields``
        (name to dtype, codec and layout), ``times``, ``max_level``, ``bitmask``, ``bits_per_block``,
        ``blocks_per_file``, ``block_count`` (per field and timestep), ``files_per_timestep``,
        ``file_count`` and ``levels`` (level and grid shape).

    Examples
    --------
    >>> with hzio.open(path) as ds:  # doctest: +SKIP
    ...     describe(ds)["levels"][0]
    {'level': 0, 'shape': [1, 1, 1]}
    """
    codecs, layouts = ds.codecs, ds.layouts
    fields = {name: {"dtype": dtype, "codec": codecs[name], "layout": layouts[name]}
              for name, dtype in ds.fields.items()}
    files_per_timestep = -(-ds.block_count // max(1, ds.blocks_per_file))
    return {
        "path": ds.path,
        "shape": list(ds.grid_shape),
        "origin": list(dataset_box(ds)[0]),
        "ndim": ds.grid_ndim,
        "fields": fields,
        "times": list(ds.times),
        "max_level": ds.max_level,
        "bitmask": ds.bitmask,
        "bits_per_block": ds.bits_per_block,
        "blocks_per_file": ds.blocks_per_file,
        "block_count": ds.block_count,
        "files_per_timestep": files_per_timestep,
        "file_count": files_per_timestep * len(ds.times),
        "levels": [{"level": h, "shape": list(ds.level_shape(h))} for h in range(ds.max_level + 1)],
    }


def info(args):
    """Run ``hzio info``: print a dataset's metadata as aligned text, or as JSON with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset`` (path of the .idx) and ``json`` (bool).

    Returns
    -------
    int
        The exit status, 0.
    """
    with hzio.open(args.dataset) as ds:
        d = describe(ds)
    if args.json:
        print_json(d)
    else:
        print_description(d)
    return 0


def print_description(d):
    """Print the dict of :func:`describe` as human-readable aligned text."""
    print(d["path"])
    print_fields([
        ("shape", f"{shape_text(d['shape'])}  ({axes_text(d['ndim'])}, {d['ndim']}-D)"
                  + (f", origin {tuple(d['origin'])}" if any(d["origin"]) else "")),
        ("timesteps", f"{times_text(d['times'])}  ({len(d['times'])} in all)"),
        ("max_level", str(d["max_level"])),
        ("bitmask", d["bitmask"]),
        ("bits_per_block", f"{d['bits_per_block']}  ({1 << d['bits_per_block']} samples per block)"),
        ("blocks_per_file", str(d["blocks_per_file"])),
        ("block_count", f"{d['block_count']}  (per field and timestep)"),
        ("file_count", f"{d['file_count']}  ({d['files_per_timestep']} per timestep)"),
    ])
    print("fields")
    rows = [["name", "dtype", "codec", "layout"]]
    rows += [[name, f["dtype"], f["codec"], f["layout"]] for name, f in d["fields"].items()]
    print_table(rows)
    print("levels")
    print_table([["level", "shape"]] + [[str(lv["level"]), shape_text(lv["shape"])] for lv in d["levels"]])


def times_text(times, limit=8):
    """``[0, 1, 2]`` -> ``"0, 1, 2"``; long lists keep the first and last few values.

    Examples
    --------
    >>> times_text(list(range(100)))
    '0, 1, 2, 3, ..., 96, 97, 98, 99'
    """
    if len(times) <= limit:
        return ", ".join(str(t) for t in times)
    half = limit // 2
    return ", ".join([str(t) for t in times[:half]] + ["..."] + [str(t) for t in times[-half:]])


def read(args):
    """Run ``hzio read``: read a box at a level and save it with :func:`numpy.save`.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``output`` (.npy path), ``field``, ``time``, ``level``, ``box`` (text as in
        :func:`hzio._cli_util.parse_box`) and ``quiet``.

    Returns
    -------
    int
        The exit status, 0.
    """
    with hzio.open(args.dataset, verify=not args.no_verify) as ds:
        box = parse_box(args.box, *dataset_box(ds))
        array = ds.read(box=box, level=args.level, field=args.field, time=args.time)
        report = ds.last_read_report or {}
        level = ds.max_level if args.level is None else args.level
    output = str(args.output)
    output += "" if output.endswith(".npy") else ".npy"  # what np.save does
    np.save(output, array)
    if not args.quiet:
        print(f"wrote {output}: {array.dtype} array of shape {tuple(array.shape)} (level {level})")
        keys = ("files_opened", "blocks_read", "bytes_read") + (("requests", "bytes_received") if report.get("requests")
                                                                else ())
        print("read: " + ", ".join(f"{k} {report.get(k, '?')}" for k in keys))
    return 0
