"""Files a killed writer leaves behind, for ``hzio verify`` (which lists them) and ``hzio verify --repair``
(which removes them).

A writer stages each data file it changes as ``<data file>.log.<pid>`` and the commit writes
``<data file>.tmp.<pid>``, ``<data file>.hzstats.tmp.<pid>`` and ``<dataset>.idx.tmp.<pid>`` before renaming
them (docs/design/commit.md). A writer that dies before its commit ends leaves them; readers never look
at them, and a later writer uses names of its own pid, so they only take space. Only these names, next
to the dataset's own files, are considered.
"""

from __future__ import annotations

import glob
import os
from typing import Any

import hzio

_SUFFIXES = (".log.", ".tmp.", ".hzstats.tmp.")


def find_debris(ds: Any) -> list[dict[str, Any]]:
    """Local. The leftover files of ``ds`` (an open hzio.Dataset): dicts with ``path``, ``pid`` and
    ``running`` (a process with that pid runs on this machine: maybe a live writer, never removed)."""
    bases = {ds.path}
    first_field = next(iter(ds.fields))  # every field's blocks of a timestep lie in the same data files
    for time in ds.times:
        try:
            bases.update(str(f) for f in ds.blocks(field=first_field, time=time)["file"])
        except hzio.Error:
            continue  # an unreadable header table: verify reports it, and that timestep is not searched
    found = []
    for base in sorted(bases):
        for suffix in _SUFFIXES:
            prefix = base + suffix
            for path in sorted(glob.glob(glob.escape(prefix) + "*")):
                tail = path[len(prefix):]
                if tail.isdigit() and os.path.isfile(path):
                    found.append({"path": path, "pid": int(tail), "running": _running(int(tail))})
    return found


def remove_debris(debris: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Local. Removes the files of writers no longer running; returns (removed, kept) paths."""
    removed, kept = [], []
    for d in debris:
        if d["running"]:
            kept.append(d["path"])
            continue
        try:
            os.remove(d["path"])
            removed.append(d["path"])
        except FileNotFoundError:
            pass  # gone meanwhile
    return removed, kept


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True

