"""The ``hzio query`` subcommand: the samples whose value lies in a range, read through block statistics.

It runs :meth:`hzio.Dataset.query` and compares the bytes it read with the bytes a full
:meth:`hzio.Dataset.read` of the same box and level reads (measured on a fresh open).
"""

import numpy as np

import hzio

from ._cli_util import (
    UsageError,
    check_output,
    dataset_box,
    parse_box,
    print_fields,
    print_json,
    print_table,
    remove_output,
    replace_output,
    selection,
    temporary_path,
)

_REPORT_KEYS = ("files_opened", "blocks_read", "blocks_skipped", "blocks_missing", "bytes_read")


def query(args):
    """Run ``hzio query``: count, bound and optionally save the samples with values in ``[LO, HI]``.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``field``, ``time``, ``range`` (two floats), ``level``, ``box`` (text as in
        :func:`hzio._cli_util.parse_box`), ``component``, ``out`` (.npz path or None; an existing one is
        replaced only with ``overwrite``), ``json`` and ``limit`` (matches to print, None for none).

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    hzio._cli_util.UsageError
        Unknown field or timestep, ``LO > HI``, a bad box, or a vector field without ``--component``.

    Examples
    --------
    ``hzio query data.idx --field t --range 1500 2000 --level 18 --out front.npz``
    """
    lo, hi = args.range
    if lo > hi:
        raise UsageError(f"--range needs LO <= HI, got {lo:g} {hi:g}")
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit must be non-negative, got {args.limit}")
    out = None if args.out is None else str(args.out) + ("" if str(args.out).endswith(".npz") else ".npz")
    if out is not None:
        check_output(out, args.overwrite)
    with hzio.open(args.dataset, verify=not args.no_verify) as ds:
        field, time = (s[0] for s in selection(ds, args.field, args.time))
        box = parse_box(args.box, *dataset_box(ds))
        component = _component(ds, field, args.component)
        level = ds.max_level if args.level is None else args.level
        coords, values = ds.query(field, lo, hi, time=time, box=box, level=level, component=component)
        report = dict(ds.last_read_report or {})
        path, ndim, box = ds.path, ds.grid_ndim, box or dataset_box(ds)
    # a fresh open, so that both byte counts include the header reads
    with hzio.open(args.dataset, verify=not args.no_verify) as ds:
        ds.read(box=box, level=level, field=field, time=time)
        full = dict(ds.last_read_report or {})
    if out is not None:
        temp = temporary_path(out)
        try:
            with open(temp, "wb") as f:
                np.savez(f, coords=coords, values=values)
        except BaseException:
            remove_output(temp)
            raise
        replace_output(temp, out)
    tested = values if values.ndim == 1 else values[:, component]
    result = {
        "path": path, "field": field, "time": time, "level": level, "box": [list(box[0]), list(box[1])],
        "range": [lo, hi], "component": component, "count": int(len(coords)),
        "bbox": None if not len(coords) else [coords.min(axis=0).tolist(), (coords.max(axis=0) + 1).tolist()],
        "value_min": _scalar(tested.min()) if len(tested) else None,
        "value_max": _scalar(tested.max()) if len(tested) else None,
        "report": {k: report[k] for k in _REPORT_KEYS if k in report},
        "full_read": {k: full[k] for k in _REPORT_KEYS if k in full},
        "out": out,
        "matches": [{"coord": c.tolist(), "value": _scalar(v) if np.ndim(v) == 0 else v.tolist()}
                    for c, v in zip(coords[:args.limit or 0], values[:args.limit or 0])],
    }
    full_bytes = result["full_read"].get("bytes_read")
    result["bytes_fraction"] = (report.get("bytes_read", 0) / full_bytes) if full_bytes else None
    if args.json:
        print_json(result)
    else:
        print_query(result, ndim)
    return 0


def _component(ds, field, component):
    comps = hzio.parse_dtype(ds.fields[field])[2]
    if comps == 1:
        if component not in (None, 0):
            raise UsageError(f"field {field!r} is scalar: --component must be 0 or absent, got {component}")
        return None
    if component is None:
        raise UsageError(f"field {field!r} has {comps} components: pass --component C (0 to {comps - 1})")
    if not 0 <= component < comps:
        raise UsageError(f"--component {component} is outside [0, {comps - 1}] for field {field!r}")
    return component


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def _box_text(lo, hi):
    return ",".join(f"{a}:{b}" for a, b in zip(lo, hi))


def print_query(r, ndim):
    """Print the dict of :func:`query` as text: matches, bounding box, value range, bytes against a full read."""
    axes = "[" + ", ".join("zyx"[3 - ndim:]) + "]"
    comp = "" if r["component"] is None else f", component {r['component']}"
    print(f"query {r['path']}: field {r['field']}{comp}, timestep {r['time']}, level {r['level']}, "
          f"box {_box_text(*r['box'])} {axes}, values in [{r['range'][0]:g}, {r['range'][1]:g}]")
    rep, full = r["report"], r["full_read"]
    pairs = [("matches", str(r["count"]))]
    if r["count"]:
        pairs += [("bounding box", f"{_box_text(*r['bbox'])}  ({axes}, exclusive ends)"),
                  ("values", f"min {r['value_min']:g}, max {r['value_max']:g}")]
    pairs += [("blocks", f"{rep.get('blocks_read', '?')} read, {rep.get('blocks_skipped', '?')} skipped by "
                         f"statistics (a full read reads {full.get('blocks_read', '?')})"),
              ("bytes read", f"{rep.get('bytes_read', '?')} of {full.get('bytes_read', '?')} for a full read"
                             + (f" ({100 * r['bytes_fraction']:.1f} %)" if r["bytes_fraction"] is not None else ""))]
    if r["out"]:
        pairs.append(("saved", f"{r['out']} (coords, values)"))
    print_fields(pairs)
    if r["matches"]:
        print(f"first {len(r['matches'])} matches")
        rows = [["coord " + axes, "value"]]
        rows += [[",".join(map(str, m["coord"])), _value_text(m["value"])] for m in r["matches"]]
        print_table(rows)


def _value_text(v):
    return ",".join(f"{x:g}" for x in v) if isinstance(v, list) else f"{v:g}"
