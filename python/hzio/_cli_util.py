"""Helpers shared by the ``hzio`` command-line subcommands: usage errors, argument parsing, output.

Only the CLI modules (:mod:`hzio.cli` and ``hzio._cli_*``) import this; it uses hzio's public API only.
"""

import json
import os
import re
import shutil
import sys

import numpy as np

# Block-header flags low nibble to codec name (docs/format.md, "Block header table"); 5 was EXR, retired.
CODEC_NAMES = {0: "raw", 3: "zip", 4: "jpg", 6: "png", 7: "lz4", 8: "zfp"}
MIB = 1 << 20


class UsageError(Exception):
    """A bad command line (not an hzio error); the CLI prints it and exits with status 2."""


def codec_name(code):
    """Return the codec name of a block-header compression code (``"unknown"`` if not assigned).

    Examples
    --------
    >>> codec_name(3), codec_name(5)
    ('zip', 'unknown')
    """
    return CODEC_NAMES.get(int(code), "unknown")


def layout_name(rowmajor):
    """Return ``"rowmajor"`` or ``"hzorder"`` for a block's layout flag."""
    return "rowmajor" if rowmajor else "hzorder"


def parse_ints(text, option):
    """Parse ``"4,8,16"`` (or ``"4x8x16"``) into a tuple of positive ints.

    Examples
    --------
    >>> parse_ints("4,8,16", "--shape")
    (4, 8, 16)
    """
    parts = [p for p in re.split(r"[,x]", text.strip()) if p.strip()]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"{option} expects comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise UsageError(f"{option} expects positive integers, got {text!r}")
    return values


def dataset_box(ds):
    """Return the dataset's box ``(lo, hi)`` in [z, y, x] dataset coordinates (``lo`` is ``ds.origin``)."""
    lo = tuple(ds.origin)
    return lo, tuple(o + n for o, n in zip(lo, ds.grid_shape))


def parse_box(text, dataset_lo, dataset_hi):
    """Parse ``"z0:z1,y0:y1,x0:x1"`` into ``((z0, y0, x0), (z1, y1, x1))`` inside a dataset box.

    One item per axis in [z, y, x] order, dataset coordinates, exclusive ends; an omitted bound (``":"``,
    ``"2:"``, ``":5"``) means the dataset box's edge. Returns None for None.

    Examples
    --------
    >>> parse_box("0:2,:,4:", (0, 0, 0), (4, 8, 16))
    ((0, 0, 4), (2, 8, 16))
    """
    if text is None:
        return None
    items = text.split(",")
    if len(items) != len(dataset_lo):
        raise UsageError(f"--box needs {len(dataset_lo)} comma-separated ranges ([z, y, x] order, like "
                         f"{','.join(['lo:hi'] * len(dataset_lo))}), got {text!r}")
    lo, hi = [], []
    for item, first, end in zip(items, dataset_lo, dataset_hi):
        start, sep, stop = item.partition(":")
        if not sep:
            raise UsageError(f"--box range {item!r} needs a ':' (use ':' for the whole axis)")
        lo.append(_bound(start, first, text))
        hi.append(_bound(stop, end, text))
        if not first <= lo[-1] < hi[-1] <= end:
            raise UsageError(f"--box {text!r} is empty or outside the dataset box "
                             f"{_range_text(dataset_lo, dataset_hi)}")
    return tuple(lo), tuple(hi)


def _range_text(lo, hi):
    return ",".join(f"{a}:{b}" for a, b in zip(lo, hi)) + " ([z, y, x])"


def _bound(text, default, box):
    text = text.strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--box bounds must be integers, got {text!r} in {box!r}") from None
    if value < 0:
        raise UsageError(f"--box bounds must be non-negative, got {value} in {box!r}")
    return value


def parse_dtype_option(text):
    """Split ``"float32"``, ``"float32[3]"`` or ``"3*float32"`` into ``(numpy scalar dtype, components)``.

    The field dtype itself is validated by :func:`hzio.create`; this only sizes the headerless input.

    Examples
    --------
    >>> parse_dtype_option("uint8[3]")
    (dtype('uint8'), 3)
    """
    m = re.fullmatch(r"\s*(?:(\d+)\s*\*\s*)?([a-z0-9]+)\s*(?:\[\s*(\d+)\s*\])?\s*", text.lower())
    if not m or (m.group(1) and m.group(3)):
        raise UsageError(f"--dtype expects a name like float32, float32[3] or 3*float32, got {text!r}")
    try:
        scalar = np.dtype(m.group(2))
    except TypeError:
        raise UsageError(f"--dtype: unknown dtype {m.group(2)!r}") from None
    comps = int(m.group(1) or m.group(3) or 1)
    if comps < 1:
        raise UsageError(f"--dtype: the component count must be at least 1, got {text!r}")
    return scalar, comps


def print_json(obj):
    """Write ``obj`` as indented JSON to stdout."""
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(rows, indent="  "):
    """Print rows of strings (the first is the header) as aligned columns, all-number columns right-aligned."""
    if not rows:
        return
    columns = list(zip(*rows))
    widths = [max(len(c) for c in col) for col in columns]
    right = [all(_numeric(c) for c in col[1:] if c not in ("", "-")) for col in columns]
    for row in rows:
        cells = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)]
        print((indent + "  ".join(cells)).rstrip())


def _numeric(cell):
    return cell.replace(".", "", 1).isdigit()


def print_fields(pairs, indent="  "):
    """Print ``(label, value)`` pairs with the labels padded to one width."""
    width = max(len(label) for label, _ in pairs)
    for label, value in pairs:
        print(f"{indent}{label.ljust(width)}  {value}")


def shape_text(shape):
    """``(4, 8, 16)`` -> ``"4 x 8 x 16"``."""
    return " x ".join(str(n) for n in shape)


def axes_text(ndim):
    """``3`` -> ``"[z, y, x]"``, ``2`` -> ``"[y, x]"``: the axis order of shapes and boxes."""
    return "[" + ", ".join("zyx"[3 - ndim:]) + "]"


def selection(ds, field, time):
    """Return ``(fields, times)``: ``[field]`` and ``[time]``, or all of the dataset's for None.

    Raises UsageError naming the choices when the dataset has no such field or timestep.
    """
    return _pick(list(ds.fields), field, "field", ds.path), _pick(ds.times, time, "timestep", ds.path)


def _pick(values, wanted, what, dataset):
    if wanted is None:
        return list(values)
    if wanted not in values:
        raise UsageError(f"dataset {dataset} has no {what} {wanted!r}; {what}s: {list(values)}")
    return [wanted]


def check_output(path, overwrite, directory=False):
    """Local. Refuse to replace an existing ``path`` without ``overwrite`` (UsageError), and one of the wrong
    kind even with it: ``directory`` outputs (Zarr stores) replace only a Zarr store, files only a file."""
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise UsageError(f"{path} exists; pass --overwrite to replace it")
    zarr_store = os.path.isdir(path) and any(os.path.exists(os.path.join(path, m))
                                             for m in ("zarr.json", ".zgroup", ".zarray"))
    if directory and not zarr_store:
        raise UsageError(f"{path} exists and is not a Zarr store; remove it yourself or choose another name")
    if not directory and os.path.isdir(path):
        raise UsageError(f"{path} is a folder; remove it yourself or choose another name")


def temporary_path(path):
    """Local. The name an output is written under before :func:`replace_output` renames it: hidden, beside it."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.hzio-tmp-{os.getpid()}")


def remove_output(path):
    """Local. Remove a file or a folder tree (a temporary output that failed)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def replace_output(temp, output):
    """Local. Rename the finished ``temp`` to ``output``, replacing what :func:`check_output` allowed to replace."""
    if not os.path.isdir(temp):
        os.replace(temp, output)
        return
    old = temporary_path(output) + ".old"
    if os.path.lexists(output):  # a folder cannot be renamed over another: move the old one aside first
        os.rename(output, old)
    os.rename(temp, output)
    remove_output(old)
