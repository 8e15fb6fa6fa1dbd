"""The ``hzio dump`` subcommand: the .idx summary and every data file's block header table.

Output sections carry the names of docs/format.md: "The .idx file", "Data files", "Block header table",
"Block payload". Slots and entries follow that document: the entry of field ``f``, slot ``s`` is
``f * blocks_per_file + s`` (the ``entry`` column of :meth:`hzio.Dataset.blocks`).
"""

import os

import hzio

from ._cli_inspect import describe, times_text
from ._cli_util import axes_text, codec_name, layout_name, print_fields, print_json, print_table, selection, shape_text
from ._progress import progress_bar, wanted

_LISTED_FILES = 4096  # data files per timestep up to which absent ones are listed too


def dump(args):
    """Run ``hzio dump``: print the .idx summary and, per timestep and data file, its block header table.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``field`` and ``time`` (None: all), ``json`` (bool), ``progress`` (None: a bar of the
        timesteps listed only when stderr is a terminal).

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    hzio.CorruptError
        A header table points outside its file.
    """
    with hzio.open(args.dataset) as ds:
        summary = describe(ds)
        fields, times = selection(ds, args.field, args.time)
        timesteps = []
        with progress_bar(wanted(args.progress), len(times), "dump", unit="timestep") as bar:
            for t in times:
                timesteps.append(dump_timestep(ds, fields, t))
                bar.update(1)
    if args.json:
        print_json({"idx_file": summary, "timesteps": timesteps})
    else:
        print_dump(summary, timesteps)
    return 0


def dump_timestep(ds, fields, time):
    """Collect the header entries of ``fields`` at ``time``, grouped by data file in entry order.

    Returns
    -------
    dict
        ``time``, ``absent_files_not_listed`` (when the timestep declares more than 4096 data files,
        absent ones are only counted) and ``files``: a list of dicts with ``path``, ``exists``,
        ``size_bytes`` (None if the file is absent) and ``entries``, each with ``entry``, ``field``,
        ``slot``, ``block``, ``level``, ``present``, ``offset``, ``size``, ``codec`` (name from the flags
        low nibble) and ``layout``.
    """
    order = {name: i for i, name in enumerate(ds.fields)}
    files = {}
    present, absent, _ = ds._core.file_census(time, 0)
    # Absent files are listed (with their entries) only while they are few: a .idx may declare millions.
    existing_only = len(present) + absent > _LISTED_FILES
    for field in fields:
        first_entry = order[field] * ds.blocks_per_file
        for row in ds.blocks(field=field, time=time, existing_files_only=existing_only):
            files.setdefault(str(row["file"]), []).append(_entry(field, row, first_entry))
    return {"time": time, "files": [_file(path, entries) for path, entries in files.items()],
            "absent_files_not_listed": absent if existing_only else 0}


def _entry(field, row, first_entry):
    entry = int(row["entry"])
    return {"entry": entry, "field": field, "slot": int(row["slot"]), "block": int(row["block"]),
            "level": int(row["level"]), "present": bool(row["present"]), "offset": int(row["offset"]),
            "size": int(row["size"]), "codec": codec_name(row["codec"]), "layout": layout_name(row["rowmajor"])}


def _file(path, entries):
    exists = os.path.exists(path)
    return {"path": path, "exists": exists, "size_bytes": os.path.getsize(path) if exists else None,
            "entries": sorted(entries, key=lambda e: e["entry"])}


def print_dump(summary, timesteps):
    """Print the output of :func:`dump` as text under the docs/format.md section names."""
    print("The .idx file")
    fields = [f"{name} {f['dtype']} (codec {f['codec']}, layout {f['layout']})"
              for name, f in summary["fields"].items()]
    print_fields([("path", summary["path"]),
                  ("shape", f"{shape_text(summary['shape'])}  ({axes_text(summary['ndim'])})"),
                  ("fields", "; ".join(fields)), ("timesteps", times_text(summary["times"])),
                  ("bitmask", f"{summary['bitmask']}  (max_level {summary['max_level']})"),
                  ("bits_per_block", str(summary["bits_per_block"])),
                  ("blocks_per_file", str(summary["blocks_per_file"])), ("block_count", str(summary["block_count"]))])
    base = os.path.dirname(summary["path"])
    for step in timesteps:
        print(f"\nTimestep {step['time']}")
        _print_files(step["files"], base)
        if step["absent_files_not_listed"]:
            print(f"  ({step['absent_files_not_listed']} absent data files not listed)")
        for f in step["files"]:
            _print_header_table(f, base)
            _print_payload(f, base)


def _print_files(files, base):
    print("\nData files")
    rows = [["file", "exists", "bytes", "entries", "present"]]
    for f in files:
        rows.append([os.path.relpath(f["path"], base), "yes" if f["exists"] else "no",
                     "-" if f["size_bytes"] is None else str(f["size_bytes"]), str(len(f["entries"])),
                     str(sum(e["present"] for e in f["entries"]))])
    print_table(rows)


def _print_header_table(f, base):
    print(f"\nBlock header table: {os.path.relpath(f['path'], base)}" + ("" if f["exists"] else "  (file absent)"))
    rows = [["entry", "field", "slot", "block", "level", "offset", "size", "codec", "layout"]]
    for e in f["entries"]:
        if e["present"]:
            tail = [str(e["offset"]), str(e["size"]), e["codec"], e["layout"]]
        else:
            tail = ["-", "-", "missing", ""]
        rows.append([str(e["entry"]), e["field"], str(e["slot"]), str(e["block"]), str(e["level"])] + tail)
    print_table(rows)


def _print_payload(f, base):
    print(f"\nBlock payload: {os.path.relpath(f['path'], base)}")
    present = [e for e in f["entries"] if e["present"]]
    if not present:
        print("  no payloads")
        return
    total = sum(e["size"] for e in present)
    first, end = min(e["offset"] for e in present), max(e["offset"] + e["size"] for e in present)
    print(f"  {len(present)} payloads, {total} bytes, from offset {first} to {end}"
          + ("" if f["size_bytes"] is None else f" (file size {f['size_bytes']})"))
