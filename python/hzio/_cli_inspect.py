"""The ``hzio info`` and ``hzio read`` subcommands: describe a dataset, and read a box to a .npy file in slabs."""

import os

import numpy as np

import hzio

from ._cli_util import (
    MIB,
    axes_text,
    check_output,
    dataset_box,
    parse_box,
    print_fields,
    print_json,
    print_table,
    remove_output,
    replace_output,
    shape_text,
    temporary_path,
)
from ._progress import progress_bar, wanted
from ._slabs import level_slabs

READ_SLAB_BYTES = 64 * MIB


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


def describe_mosaic(ds):
    """Local. A dict describing a :class:`hzio.mosaic.MosaicDataset` and its parts (``hzio info`` of a .midx)."""
    return {"path": ds.path, "shape": list(ds.grid_shape), "fields": dict(ds.fields), "times": ds.times,
            "bitmask": ds.bitmask, "max_level": ds.max_level, "partitions": ds.partitions, "index_space": "local",
            "parts": [{"partition": p, "path": part.path, "offset": list(offset), "shape": list(part.grid_shape)}
                      for p, offset, part in ds.parts]}


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
    from .mosaic import MosaicDataset

    with hzio.open(args.dataset) as ds:
        d = describe_mosaic(ds) if isinstance(ds, MosaicDataset) else describe(ds)
    if args.json:
        print_json(d)
    elif "parts" in d:
        print(d["path"])
        print_fields([("shape", shape_text(d["shape"])),
                      ("fields", ", ".join(f"{k} {v}" for k, v in d["fields"].items())),
                      ("times", str(d["times"])), ("bitmask", d["bitmask"]),
                      ("partitions", f"{d['partitions']} (local index space), {len(d['parts'])} parts")])
        for part in d["parts"]:
            print(f"  partition {part['partition']}: {part['path']} at offset {tuple(part['offset'])}, "
                  f"shape {shape_text(part['shape'])}")
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
    """Run ``hzio read``: read a box at a level and save it as a .npy file, slab by slab. Local.

    Boxes larger than 64 MiB are read in slabs along their first axis and appended to the file, so memory
    stays bounded and a progress bar can follow. The file is written under a temporary name and renamed
    when complete; an existing one is replaced only with ``--overwrite``.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``output`` (.npy path; the suffix is added when missing, as numpy.save does),
        ``field``, ``time``, ``level``, ``box`` (text as in :func:`hzio._cli_util.parse_box`),
        ``no_verify``, ``overwrite``, ``progress`` and ``quiet``.

    Returns
    -------
    int
        The exit status, 0.
    """
    output = str(args.output)
    output += "" if output.endswith(".npy") else ".npy"
    check_output(output, args.overwrite)
    temp = temporary_path(output)
    try:
        with hzio.open(args.dataset, verify=not args.no_verify) as ds:
            shape, dtype, level, report, slabs = _read_to(ds, args, temp)
    except BaseException:
        remove_output(temp)
        raise
    replace_output(temp, output)
    if not args.quiet:
        print(f"wrote {output}: {dtype} array of shape {shape} (level {level})")
        keys = ("files_opened", "blocks_read", "bytes_read") + (("requests", "bytes_received") if report.get("requests")
                                                                else ())
        summed = f" (summed over {slabs} slab reads)" if slabs > 1 else ""
        print("read: " + ", ".join(f"{k} {report.get(k, '?')}" for k in keys) + summed)
    return 0


def _read_to(ds, args, path):
    box = parse_box(args.box, *dataset_box(ds)) or dataset_box(ds)
    field = ds.field(args.field if args.field is not None else next(iter(ds.fields)), time=args.time)
    level = ds.max_level if args.level is None else args.level
    shape = ds.level_shape(level, box, field=field.name)
    plane_bytes = int(np.prod(shape[1:])) * field.dtype.itemsize
    need = int(np.prod(shape)) * field.dtype.itemsize
    folder = os.path.dirname(os.path.abspath(path))
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    if need > free:  # refuse before writing rather than fill the disk
        raise hzio.IoError(f"the .npy of shape {shape} needs {need} bytes but {folder} has {free} free; read a "
                           "smaller box or a coarser level")
    slabs = level_slabs(ds, box, level, plane_bytes, READ_SLAB_BYTES)
    report = {}
    with open(path, "wb") as f, progress_bar(wanted(args.progress), int(np.prod(shape)) * field.dtype.itemsize,
                                             "read") as bar:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(field.dtype),
                                                 "fortran_order": False, "shape": shape})
        for _, _, slab in slabs:
            samples = ds.read(slab, level=level, field=field.name, time=field.time)
            f.write(memoryview(np.ascontiguousarray(samples)).cast("B"))
            bar.update(samples.nbytes)
            for key, value in (ds.last_read_report or {}).items():
                if isinstance(value, int):
                    report[key] = report.get(key, 0) + value
    return shape, field.dtype, level, report, len(slabs)
