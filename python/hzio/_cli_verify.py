"""The ``hzio verify`` subcommand: check every header table and present block of a dataset against its
checksums, decode the blocks, and report what is wrong.

It walks :meth:`hzio.Dataset.blocks` for each field and timestep and calls :meth:`hzio.Dataset.verify_block`.
"""


import hzio

from ._cli_debris import find_debris, remove_debris
from ._cli_util import print_json, selection
from ._progress import grow, progress_bar, wanted

_LIST_LIMIT = 10  # missing files printed per table in text mode; blocks outside the box leave many files unwritten
_MISSING_LISTED = 1000  # missing file paths kept per table (the count is always exact)


def verify(args):
    """Run ``hzio verify``: decode every present block and report missing and corrupt ones.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``field`` and ``time`` (None: all), ``json``, ``allow_missing`` and ``repair`` (bool),
        ``progress`` (None: a bar of the blocks checked only when stderr is a terminal).

    Returns
    -------
    int
        0 when no block is corrupt and every timestep has data, 1 otherwise. Missing blocks and files
        are not corruption (datasets may be written sparsely), but a timestep in which every block of
        every checked field is missing holds no data at all, which is reported and fails unless
        ``allow_missing``. Blocks with a codec hzio does not implement (jpg, png) are listed as
        unsupported and do not fail. Files killed writers left (``debris``) are listed, and removed with
        ``repair``; they are not corruption.
    """
    with hzio.open(args.dataset) as ds:
        path = ds.path
        fields, times = selection(ds, args.field, args.time)
        with progress_bar(wanted(args.progress), 0, "verify", unit="block") as bar:
            tables = [verify_table(ds, f, t, bar) for f in fields for t in times]
        debris = find_debris(ds)
    removed, kept = remove_debris(debris) if args.repair else ([], [])
    empty = [t for t in times if not any(tb["present"] for tb in tables if tb["time"] == t)]
    result = {"path": path, "ok": not any(t["corrupt"] for t in tables) and (args.allow_missing or not empty),
              "empty_times": empty}
    for key in ("blocks", "present", "missing", "unchecked"):
        result[key] = sum(t[key] for t in tables)
    result["missing_files"] = sum(t["missing_file_count"] for t in tables)
    for key in ("corrupt", "unsupported"):
        result[key] = sum(len(t[key]) for t in tables)
    result["tables"] = tables
    result["debris"] = debris
    if args.repair:
        result["removed"], result["kept"] = removed, kept
    if args.json:
        print_json(result)
    else:
        print_verify(result)
    return 0 if result["ok"] else 1


def verify_table(ds, field, time, bar=None):
    """Check the blocks of one field and timestep (advancing the progress ``bar`` by each block checked).

    Returns
    -------
    dict
        ``field``, ``time``, counts ``blocks``/``present``/``missing``/``unchecked`` (present blocks
        without checksums: their files were written elsewhere and not indexed) and ``missing_file_count``,
        and lists ``missing_files`` (the first 1000 paths), ``corrupt`` and ``unsupported`` (dicts with
        ``block``, ``level``, ``file``, ``reason``).
        A header table that cannot be read gives one ``corrupt`` entry with ``block`` None.
    """
    out = {"field": field, "time": time, "blocks": ds.block_count, "present": 0, "missing": 0, "unchecked": 0,
           "missing_file_count": 0, "missing_files": [], "corrupt": [], "unsupported": []}
    # Only the files that exist are listed block by block: a .idx may declare far more than it has.
    present_files, out["missing_file_count"], out["missing_files"] = ds._core.file_census(time, _MISSING_LISTED)
    try:
        blocks = ds.blocks(field=field, time=time, existing_files_only=True) if present_files else []
    except hzio.CorruptError as e:
        out["corrupt"].append({"block": None, "level": None, "file": None, "reason": str(e)})
        return out
    if not present_files:
        out["missing"] = out["blocks"]
        return out
    out["present"] = int(blocks["present"].sum())
    out["missing"] = out["blocks"] - out["present"]
    out["unchecked"] = int((blocks["present"] & ~blocks["checksummed"]).sum())
    if bar is not None:
        grow(bar, out["present"])
    for row in blocks[blocks["present"]]:
        problem = _check_block(ds, int(row["block"]), field, time)
        if bar is not None:
            bar.update(1)
        if problem is not None:
            kind, reason = problem
            out[kind].append({"block": int(row["block"]), "level": int(row["level"]), "file": str(row["file"]),
                              "reason": reason})
    return out


def _check_block(ds, block, field, time):
    try:
        ds.verify_block(block, field=field, time=time)
    except hzio.CorruptError as e:
        return "corrupt", str(e)
    except hzio.UnsupportedError as e:
        return "unsupported", str(e)
    return None


def print_verify(result):
    """Print the dict of :func:`verify` as text: one line per field and timestep, then each problem."""
    print(f"verify {result['path']}")
    for t in result["tables"]:
        print(f"  field {t['field']}, timestep {t['time']}: {t['blocks']} blocks, {t['present']} present, "
              f"{t['missing']} missing, {t['missing_file_count']} missing files, {len(t['corrupt'])} corrupt"
              + (f", {len(t['unsupported'])} unsupported" if t["unsupported"] else "")
              + (f", {t['unchecked']} without checksums" if t["unchecked"] else ""))
        for f in t["missing_files"][:_LIST_LIMIT]:
            print(f"    missing file {f}")
        if t["missing_file_count"] > _LIST_LIMIT:
            print(f"    ... and {t['missing_file_count'] - _LIST_LIMIT} more missing files (--json lists the first "
                  f"{_MISSING_LISTED})")
        for kind in ("corrupt", "unsupported"):
            for p in t[kind]:
                where = "header table" if p["block"] is None else f"block {p['block']} (level {p['level']})"
                place = f" in {p['file']}" if p["file"] and p["file"] not in p["reason"] else ""
                print(f"    {kind} {where}{place}: {p['reason']}")
    if result["empty_times"]:
        shown = ", ".join(map(str, result["empty_times"][:_LIST_LIMIT]))
        more = ", ..." if len(result["empty_times"]) > _LIST_LIMIT else ""
        print(f"EMPTY: no block of any checked field is present in timestep(s) {shown}{more} "
              "(data files missing or never written; --allow-missing accepts this)")
    _print_debris(result)
    if result["unchecked"]:
        print(f"UNCHECKED: {result['unchecked']} present blocks have no checksums, so only their decoding was "
              "checked (hzio index adds checksums)")
    if result["ok"]:
        unchecked = f", {result['unsupported']} unsupported not decoded" if result["unsupported"] else ""
        print(f"OK: {result['present']} present blocks, none corrupt ({result['missing']} missing{unchecked})")
    elif result["corrupt"]:
        print(f"CORRUPT: {result['corrupt']} corrupt blocks or header tables ({result['present']} present blocks)")


def _print_debris(result):
    debris = result["debris"]
    if not debris:
        return
    if "removed" in result:
        print(f"removed {len(result['removed'])} files left by writers that did not finish")
        for path in result["kept"]:
            print(f"  kept {path}: its writer's process is still running")
        return
    print(f"DEBRIS: {len(debris)} files left by writers that did not finish (hzio verify --repair removes "
          "them when no writer runs):")
    for d in debris[:_LIST_LIMIT]:
        print(f"  {d['path']}" + (" (its process is running)" if d["running"] else ""))
    if len(debris) > _LIST_LIMIT:
        print(f"  ... and {len(debris) - _LIST_LIMIT} more (--json lists all)")
