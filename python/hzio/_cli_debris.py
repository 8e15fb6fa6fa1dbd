"""Files a killed writer leaves behind, for ``hzio verify`` (which lists them) and ``hzio verify --repair``
(which removes them).

A writer stages each data file it changes as ``<data file>.log.<pid>`` and the commit writes ``<data
file>.tmp.<pid>``, ``<data file>.hzstats.tmp.<pid>`` and ``<dataset>.idx.tmp.<pid>`` before renaming them, and
puts a data file's old sidecar aside as ``<data file>.hzstats.old.<pid>`` while it renames the new one and the
data file (docs/design/commit.md). A writer that dies before its commit ends leaves them; readers never look
at them, and a later writer uses names of its own pid, so they only take space, except an old sidecar put
aside: when the writer died before its data file was renamed (its ``.tmp.<pid>`` or ``.log.<pid>`` is still
there), the old sidecar is the one that describes the data file, and repairing puts it back. A commit that
rewrites listed timesteps also leaves its marker ``<dataset>.idx.commit`` (text: pid and host), which readers
on that host ignore once the process is gone. Only these names of the dataset's own files (as its templates
name them, for any timestep) and of its .idx are considered (``Dataset.leftover_files`` in C++).
"""

from __future__ import annotations

import os
import socket
from typing import Any


def find_debris(ds: Any) -> list[dict[str, Any]]:
    """Local. The leftover files of ``ds`` (an open hzio.Dataset), in the folders of every timestep, listed
    or not: dicts with ``path``, ``pid`` and ``running`` (a process with that pid runs on this machine:
    maybe a live writer, never removed)."""
    found = []
    for path in ds._core.leftover_files():
        if path.endswith(".commit"):  # the commit marker: "<pid> <host>"
            pid, running = _marker_holder(path)
        else:
            pid = int(path.rpartition(".")[2])
            running = _running(pid)
        if os.path.isfile(path):
            found.append({"path": path, "pid": pid, "running": running})
    return found


def _marker_holder(path: str) -> tuple[int, bool]:
    """The pid in a commit marker, and whether its process may run (one of another host always may)."""
    try:
        with open(path) as f:
            pid_text, host = f.read().split()[:2]
        pid = int(pid_text)
    except (OSError, ValueError):
        return 0, True  # being written, or not ours to judge: kept
    return pid, host != socket.gethostname() or _running(pid)


def remove_debris(debris: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Local. Removes the files of writers no longer running, and puts back the old sidecars they had put
    aside before renaming their data files; returns (removed or restored, kept) paths."""
    removed, kept = [], []
    # Old sidecars first: whether one goes back depends on the writer's staged data file still being there.
    for d in sorted(debris, key=lambda d: ".hzstats.old." not in d["path"], reverse=False):
        if d["running"]:
            kept.append(d["path"])
            continue
        try:
            _, marker, pid = d["path"].rpartition(".hzstats.old.")
            if marker and _staged_data_file(d["path"][:-len(marker + pid)], pid):
                os.replace(d["path"], d["path"][:-len(".old." + pid)])
            else:
                os.remove(d["path"])
            removed.append(d["path"])
        except FileNotFoundError:
            pass  # gone meanwhile
    return removed, kept


def _staged_data_file(data_file: str, pid: str) -> bool:
    return any(os.path.exists(f"{data_file}{s}{pid}") for s in (".tmp.", ".log."))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True

