"""``hzio serve``: a read-only web server for IDX datasets, with the browser viewer of ``hzio/viewer/``.

The server (aiohttp) answers four kinds of request, all GET (and HEAD):

* ``/`` and ``/viewer/<file>``: the viewer's page and ES modules (the files of ``hzio/viewer/``);
* ``/api/datasets`` and ``/api/datasets/<name>``: what each dataset holds (JSON), read anew whenever
  its ``.idx`` changes, so that a running simulation's new timesteps appear;
* ``/api/datasets/<name>/slice``: a 2-D slice of a box at a level as a binary array (below), and
  ``/api/datasets/<name>/stats``: value range, robust limits and histogram from the block statistics;
* ``/files/<name>/<path>``: the dataset's own files (``.idx``, data files, sidecars) with byte ranges,
  so that ``hzio.open("http://host:port/files/<name>/<name>.idx")`` reads it remotely.

Slice responses (``application/octet-stream``): a little-endian uint32 ``n``, then ``n`` bytes of UTF-8
JSON (padded with spaces to a multiple of 8 bytes), then ``height * width`` samples, rows first, of the
JSON's ``dtype`` (``float32``, or ``float64`` for 64-bit fields), little-endian. The JSON names the level,
the plane read, and the grid: ``u0``/``v0`` (coordinates of the first column and row), ``du``/``dv``
(spacing), ``width``/``height``.

Safety: nothing writes; only the files of the datasets given are served (the ``.idx``, and the data
files and sidecars its blocks name, resolved without leaving the ``.idx``'s folder); a slice is bounded
to :data:`MAX_SLICE_SAMPLES` samples; each dataset reads at most :data:`HANDLES_PER_DATASET` requests at
once on a thread pool large enough for all datasets, so a slow or stuck dataset holds neither another
dataset's requests nor the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import math
import os
import queue
import stat
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import numpy as np

import hzio

from ._types import parse_dtype
from .errors import Error, InvalidArgumentError, NotFoundError

MAX_SLICE_SAMPLES = 4096 * 4096  # one slice response at most (a 64 MiB float32 array)
MAX_SLICE_READ_BYTES = 256 << 20  # what a slice may read (samples x components x sample size)
MAX_LISTED_FILES = 1 << 20  # data files (timesteps x files) listed for datasets whose files lie beside the .idx
DESCRIBE_SECONDS = 10.0  # /api/datasets waits this long for each dataset, then lists it with an error
STATS_CACHED = 256  # block_statistics answers kept per .idx version
HANDLES_PER_DATASET = 4  # requests of one dataset that read at once, each on its own open handle
SPARE_THREADS = 8  # threads beyond the datasets' slots, for descriptions (which stat and reopen the .idx)
HISTOGRAM_BINS = 64
ROBUST_QUANTILES = (0.005, 0.995)  # the default colour range: these quantiles of the block statistics
VIEWER_DIR = Path(__file__).with_name("viewer")
AXES = {"z": (0, 1, 2), "y": (1, 0, 2), "x": (2, 0, 1)}  # plane axis, then rows and columns ([z, y, x] indices)


def _idx_identity(path: str) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns


@dataclass
class _Generation:
    """What one version of a dataset's .idx says, and the handles opened on it."""

    identity: tuple[int, int, int, int]
    info: dict[str, Any]
    idle: list[hzio.Dataset] = field(default_factory=list)
    # Which files /files serves besides the .idx (computed at the first request for one): the data files
    # of every listed timestep, existing or not yet, and their sidecars; or, for datasets that list
    # more than MAX_LISTED_FILES of them, every regular file below `data_root`, a folder inside the
    # .idx's that holds them all (the usual NAME/ folder).
    files: set[str] | None = None
    data_root: str | None = None
    stats: dict[tuple[str, int, str], dict[str, Any]] = field(default_factory=dict)  # block_statistics answers


class ServedDataset:
    """One dataset being served. Local; thread-safe."""

    def __init__(self, key: str, path: str, verify: bool) -> None:
        self.key = key
        self.path = os.path.realpath(path)
        self.folder = os.path.dirname(self.path)
        self.verify = verify
        self._lock = threading.Lock()
        # Requests of this dataset that may hold a handle at once; taken in the event loop before a
        # request goes to the thread pool, so that a stuck dataset cannot fill the pool.
        self.slots = asyncio.Semaphore(HANDLES_PER_DATASET)
        self._gen: _Generation | None = None
        self.current()  # fails now, not at the first request, if the dataset does not open

    def current(self) -> _Generation:
        """Local. The generation of the .idx as it is now (opening it anew when it changed)."""
        identity = _idx_identity(self.path)
        with self._lock:
            if self._gen is not None and self._gen.identity == identity:
                return self._gen
        ds = hzio.open(self.path, verify=self.verify)
        gen = _Generation(identity, self._describe(ds), [ds])
        with self._lock:
            if self._gen is not None and self._gen.identity == identity:  # another request got here first
                closing, gen = [ds], self._gen
            else:
                closing = self._replace(gen)
        for h in closing:
            h.close()
        return gen

    def _replace(self, gen: _Generation | None) -> list[hzio.Dataset]:
        """Call with _lock held. Makes `gen` current; returns the previous generation's idle handles for the
        caller to close (handles in use are closed by their borrowers: handle())."""
        old, self._gen = self._gen, gen
        if old is None:
            return []
        closing, old.idle = old.idle, []
        return closing

    def _file_rule(self, ds: hzio.Dataset) -> tuple[set[str], str | None]:
        """The files of a generation (see _Generation.files). The data root, for datasets with too many
        files to list, is the common folder of the first and last file of the first and last timestep
        (the templates number files and timesteps in order), if it lies below the .idx's folder."""
        core = ds._core
        firsts = list(core.file_first_blocks)
        times = [int(t) for t in ds.times]
        if not times or not firsts:
            return set(), None
        inside = lambda f: os.path.commonpath([f, self.folder]) == self.folder  # noqa: E731
        if len(times) * len(firsts) > MAX_LISTED_FILES:
            corners = {os.path.dirname(os.path.realpath(core.data_file_path(t, b)))
                       for t in {times[0], times[-1]} for b in {firsts[0], firsts[-1]}}
            root = os.path.commonpath(sorted(corners))
            return set(), root if root != self.folder and inside(root) else None
        files = {os.path.realpath(core.data_file_path(t, b)) for t in times for b in firsts}
        return {f for f in files | {f + ".hzstats" for f in files} if inside(f)}, None

    def close(self) -> None:
        """Local. Close the idle handles; handles in use close when their requests return them. A later
        request opens the dataset anew."""
        with self._lock:
            closing = self._replace(None)
        for h in closing:
            h.close()

    @contextlib.contextmanager
    def handle(self) -> Iterator[hzio.Dataset]:
        """Local. Borrow an open handle of the current generation (one per request holding a slot)."""
        gen = self.current()
        with self._lock:
            ds = gen.idle.pop() if gen.idle and self._gen is gen else None
        if ds is None:
            ds = hzio.open(self.path, verify=self.verify)
        try:
            yield ds
        finally:
            with self._lock:
                keep = self._gen is gen
                if keep:
                    gen.idle.append(ds)
            if not keep:
                ds.close()

    def _describe(self, ds: hzio.Dataset) -> dict[str, Any]:
        shape3 = (1,) * (3 - ds.grid_ndim) + tuple(ds.grid_shape)
        origin3 = (0,) * (3 - ds.grid_ndim) + tuple(ds.origin)
        levels = []
        lo_x = (origin3[2], origin3[1], origin3[0])  # the core takes x-first corners
        hi_x = (lo_x[0] + shape3[2], lo_x[1] + shape3[1], lo_x[2] + shape3[0])
        for level in range(ds.max_level + 1):
            levels.append(list(reversed(ds._core.level_grid(lo_x, hi_x, level).spacing)))
        fields = []
        for name, dtype in ds.fields.items():
            fields.append({"name": name, "dtype": dtype, "components": parse_dtype(dtype)[2]})
        return {"name": self.key, "file": os.path.basename(self.path), "ndim": ds.grid_ndim, "shape": list(shape3),
                "origin": list(origin3), "fields": fields, "times": [int(t) for t in ds.times],
                "max_level": ds.max_level, "bitmask": ds.bitmask, "level_spacing": levels,
                "files_url": f"/files/{quote(self.key)}/{quote(os.path.basename(self.path))}"}

    def info(self) -> dict[str, Any]:
        """Local. The JSON description of the dataset as its .idx says now."""
        return self.current().info

    def file_path(self, relative: str) -> str | None:
        """Local. The real path of one of the dataset's files named relative to the .idx's folder, or
        None when ``relative`` names anything else (or leaves the folder)."""
        if not relative or "\0" in relative or relative.startswith("/") or "\\" in relative:
            return None
        parts = relative.split("/")
        if any(p in ("", ".", "..") for p in parts):
            return None
        real = os.path.realpath(os.path.join(self.folder, relative))
        if os.path.commonpath([real, self.folder]) != self.folder:
            return None
        try:
            if not stat.S_ISREG(os.stat(real).st_mode):  # a folder, a FIFO or a device is never served
                return None
        except OSError:
            return None
        if real == self.path:
            return real
        gen = self.current()
        if gen.files is None:
            with self.handle() as ds:
                files, root = self._file_rule(ds)
            with self._lock:
                gen.files, gen.data_root = files, root
        if gen.data_root is not None:
            return real if os.path.commonpath([real, gen.data_root]) == gen.data_root else None
        return real if real in gen.files else None


class BadRequest(Exception):
    """A request the server refuses: its message goes back to the client with the status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _int_arg(query: Any, name: str, default: int | None = None) -> int:
    text = query.get(name)
    if text is None:
        if default is None:
            raise BadRequest(400, f"missing parameter {name!r}")
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(400, f"parameter {name!r} must be an integer, got {text[:40]!r}") from None


def _field_of(info: dict[str, Any], query: Any) -> dict[str, Any]:
    name = query.get("field")
    if name is None:
        return info["fields"][0]
    for f in info["fields"]:
        if f["name"] == name:
            return f
    raise BadRequest(404, f"dataset {info['name']!r} has no field {name[:80]!r}")


def _time_of(info: dict[str, Any], query: Any) -> int:
    if not info["times"]:
        raise BadRequest(404, f"dataset {info['name']!r} has no timestep yet")
    t = _int_arg(query, "time", info["times"][0])
    if t not in info["times"]:
        raise BadRequest(404, f"dataset {info['name']!r} has no timestep {t}")
    return t


def _component_of(f: dict[str, Any], query: Any) -> int | None:
    """The component asked for (None: the magnitude) of a vector field; 0 for a scalar one."""
    text = query.get("component", "0" if f["components"] == 1 else "magnitude")
    if f["components"] == 1:
        if text != "0":
            raise BadRequest(400, f"field {f['name']!r} is a scalar: component must be 0, not {text[:20]!r}")
        return 0
    if text == "magnitude":
        return None
    c = _int_arg(query, "component")
    if not 0 <= c < f["components"]:
        raise BadRequest(400, f"field {f['name']!r} has components 0..{f['components'] - 1}, not {c}")
    return c


def read_slice(sd: ServedDataset, query: Any) -> bytes:
    """Local. The binary slice response for a query (see the module's docstring)."""
    info = sd.info()
    f = _field_of(info, query)
    time = _time_of(info, query)
    component = _component_of(f, query)
    axis = query.get("axis", "z")
    if axis not in AXES:
        raise BadRequest(400, f"axis must be x, y or z, not {axis[:20]!r}")
    a, row_axis, col_axis = AXES[axis]
    if info["ndim"] < 3 and axis != "z":
        raise BadRequest(400, f"dataset {info['name']!r} is {info['ndim']}-D: only axis z has slices")
    level = _int_arg(query, "level", info["max_level"])
    if not 0 <= level <= info["max_level"]:
        raise BadRequest(400, f"level must lie in 0..{info['max_level']}, not {level}")
    lo3 = list(info["origin"])
    hi3 = [o + n for o, n in zip(info["origin"], info["shape"])]
    spacing = info["level_spacing"][level]
    # The plane: the level's sample at or below the index asked for (a coarse level holds every
    # spacing-th plane).
    index = min(max(_int_arg(query, "index", lo3[a]), lo3[a]), hi3[a] - 1)
    plane = index - (index % spacing[a])
    if plane < lo3[a]:
        plane += spacing[a]
    if plane >= hi3[a]:  # a coarse level of a dataset that does not start at 0 may hold no plane at all
        plane = None
    box_lo, box_hi = list(lo3), list(hi3)
    box_lo[a], box_hi[a] = (plane, plane + 1) if plane is not None else (lo3[a], lo3[a])
    for ax, (p0, p1) in ((col_axis, ("u0", "u1")), (row_axis, ("v0", "v1"))):
        box_lo[ax] = min(max(_int_arg(query, p0, lo3[ax]), lo3[ax]), hi3[ax])
        box_hi[ax] = min(max(_int_arg(query, p1, hi3[ax]), box_lo[ax]), hi3[ax])
    box = (tuple(box_lo[3 - info["ndim"]:]), tuple(box_hi[3 - info["ndim"]:]))
    scalar = parse_dtype(f["dtype"])[1]
    with sd.handle() as ds:
        counts = ds.level_shape(level, box) if plane is not None else (0,) * info["ndim"]
        samples = math.prod(counts)
        if samples > MAX_SLICE_SAMPLES or samples * f["components"] * scalar.itemsize > MAX_SLICE_READ_BYTES:
            raise BadRequest(413, f"the slice holds {samples} samples of {f['dtype']} at level {level}; at most "
                                  f"{MAX_SLICE_SAMPLES} samples and {MAX_SLICE_READ_BYTES >> 20} MiB per request: "
                                  "ask for a coarser level or a smaller box")
        values = ds.read(box, level=level, field=f["name"], time=time) if samples else None
    counts3 = (1,) * (3 - info["ndim"]) + tuple(counts)
    out_dtype = np.dtype("<f8") if scalar.itemsize == 8 else np.dtype("<f4")
    if values is None:
        plane2d = np.zeros((counts3[row_axis], counts3[col_axis]), out_dtype)
    else:
        v = values.reshape(counts3 + ((f["components"],) if f["components"] > 1 else ()))
        if f["components"] > 1 and component is None:  # the magnitude, in the output's precision
            w: np.ndarray[Any, np.dtype[np.floating[Any]]] = v.astype(out_dtype, copy=False)
            v = np.sqrt(np.einsum("...i,...i->...", w, w))
        elif f["components"] > 1:
            v = v[..., component]
        v = np.moveaxis(v, a, 0)[0]  # rows and columns stay in [z, y, x] order
        plane2d = np.ascontiguousarray(v, dtype=out_dtype)

    def first(ax: int) -> int:  # the level's first sample at or above the box's corner
        s = spacing[ax]
        return -(-box_lo[ax] // s) * s

    header = {"level": level, "axis": axis, "plane": plane, "index": index, "field": f["name"], "time": time,
              "component": "magnitude" if component is None else component, "dtype": out_dtype.name,
              "width": int(plane2d.shape[1]), "height": int(plane2d.shape[0]),
              "u0": first(col_axis), "v0": first(row_axis), "du": spacing[col_axis], "dv": spacing[row_axis]}
    text = json.dumps(header).encode()
    text += b" " * (-(4 + len(text)) % 8)
    return struct.pack("<I", len(text)) + text + plane2d.tobytes()


@np.errstate(over="ignore", invalid="ignore")  # ranges beyond the largest float become inf, then are left out
def block_statistics(sd: ServedDataset, query: Any) -> dict[str, Any]:
    """Local. Value range, robust limits and a histogram of a field and timestep from its block statistics.

    Each block with statistics counts its samples spread evenly over [min, max]: the histogram and the
    quantiles are those of that spread, which reading the samples would only sharpen. ``known`` is the
    share of the stored samples whose blocks have statistics.
    """
    gen = sd.current()
    info = gen.info
    f = _field_of(info, query)
    time = _time_of(info, query)
    component = _component_of(f, query)
    key = (f["name"], time, "magnitude" if component is None else str(component))
    cached = gen.stats.get(key)
    if cached is not None:
        return cached
    with sd.handle() as ds:
        b = ds.blocks(f["name"], time=time)
    b = b[b["present"]]
    known = b[b["stats_known"]]
    lo, hi = known["min"].astype(np.float64), known["max"].astype(np.float64)
    if lo.ndim == 2:
        if component is None:  # the magnitude: from 0 (or the nearest corner) to the farthest corner
            far = np.sqrt(np.sum(np.maximum(np.abs(lo), np.abs(hi)) ** 2, axis=1))
            near = np.sqrt(np.sum(np.where((lo <= 0) & (hi >= 0), 0, np.minimum(np.abs(lo), np.abs(hi))) ** 2,
                                  axis=1))
            lo, hi = near, far
        else:
            lo, hi = lo[:, component], hi[:, component]
    counts = known["count"].astype(np.float64)
    finite = np.isfinite(lo) & np.isfinite(hi) & (counts > 0)
    lo, hi, counts = lo[finite], hi[finite], counts[finite]
    total = float(b["count"].sum()) if len(b) else 0.0
    result: dict[str, Any] = {"field": f["name"], "time": time, "blocks": int(len(b)),
                              "known": float(counts.sum() / total) if total else 0.0}
    if not len(lo):
        result.update({"min": None, "max": None, "robust": None, "histogram": None})
    else:
        vmin, vmax = float(lo.min()), float(hi.max())
        robust = [_spread_quantile(lo, hi, counts, q) for q in ROBUST_QUANTILES]
        result.update({"min": vmin, "max": vmax, "robust": robust if all(map(math.isfinite, robust)) else None,
                       "histogram": _histogram(lo, hi, counts, vmin, vmax)})
    with sd._lock:
        if len(gen.stats) >= STATS_CACHED:
            gen.stats.clear()
        gen.stats[key] = result
    return result


def _histogram(lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, vmin: float, vmax: float) -> dict | None:
    """HISTOGRAM_BINS bins over [vmin, vmax] of samples spread evenly over each block's [lo, hi]; None when
    the bins' edges are not finite numbers (a range wider than the largest float)."""
    # Steps of (vmax / n - vmin / n): no overflow where vmax - vmin would.
    edges = vmin + (vmax / HISTOGRAM_BINS - vmin / HISTOGRAM_BINS) * np.arange(HISTOGRAM_BINS + 1)
    edges[-1] = vmax
    if vmax <= vmin:
        edges = np.array([vmin, vmin])
    if not np.all(np.isfinite(edges)):
        return None
    hist = np.zeros(len(edges) - 1)
    point = ~(hi > lo)
    if point.any():
        idx = np.clip(np.searchsorted(edges, lo[point], side="right") - 1, 0, len(hist) - 1)
        np.add.at(hist, idx, counts[point])
    spread = np.flatnonzero(~point)
    for start in range(0, len(spread), 4096):  # the share of each block in each bin, a chunk of blocks at a time
        s = spread[start:start + 4096]
        a, z, c = lo[s, None], hi[s, None], counts[s, None]
        overlap = np.clip(np.minimum(z, edges[None, 1:]) - np.maximum(a, edges[None, :-1]), 0, None)
        hist += (overlap / (z - a) * c).sum(axis=0)
    if not np.all(np.isfinite(hist)):
        return None
    return {"edges": edges.tolist(), "counts": hist.tolist()}


def _spread_quantile(lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, q: float) -> float:
    """The q-quantile of samples spread evenly over [lo, hi] per block (all at lo where hi == lo).

    The distribution function is piecewise linear between the blocks' bounds, with steps at point
    blocks: one sweep over the sorted bounds gives it exactly, however far an outlier lies.
    """
    xs = np.unique(np.concatenate([lo, hi]))
    spread = hi > lo
    slope_change = np.zeros(len(xs))
    np.add.at(slope_change, np.searchsorted(xs, lo[spread]), counts[spread] / (hi[spread] - lo[spread]))
    np.add.at(slope_change, np.searchsorted(xs, hi[spread]), -counts[spread] / (hi[spread] - lo[spread]))
    jump = np.zeros(len(xs))
    np.add.at(jump, np.searchsorted(xs, lo[~spread]), counts[~spread])
    slope = np.cumsum(slope_change)  # on the segment from xs[k] to xs[k + 1]
    segment = slope[:-1] * np.diff(xs)
    right = np.cumsum(jump + np.concatenate([[0.0], segment]))  # the function just after xs[k]
    target = q * counts.sum()
    k = min(int(np.searchsorted(right, target)), len(xs) - 1)
    if k > 0 and right[k] - jump[k] >= target and slope[k - 1] > 0:  # reached on the segment before xs[k]
        return float(min(xs[k], xs[k - 1] + (target - right[k - 1]) / slope[k - 1]))
    return float(xs[k])


def dataset_keys(paths: list[str]) -> list[tuple[str, str]]:
    """Local. A URL name for each .idx path: its stem, made unique with -2, -3..."""
    taken: set[str] = set()
    out = []
    for p in paths:
        stem = Path(p).stem or "dataset"
        key, n = stem, 1
        while key in taken:  # also past stems that look numbered themselves (x, x-2 and another x)
            n += 1
            key = f"{stem}-{n}"
        taken.add(key)
        out.append((key, p))
    return out


LOOPBACK_NAMES = {"localhost", "[::1]"}


def _is_loopback(host: str) -> bool:
    """Whether a host name or address (IPv6 in brackets or not) names this machine's loopback."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: only "localhost" is known to stay here (127.evil.example is anyone's)
        return False


def make_app(paths: list[str], *, verify: bool = True, host: str = "127.0.0.1") -> Any:
    """Local. The aiohttp application serving ``paths`` (.idx files) on ``host``. Raises hzio.Error when
    one does not open, and ImportError (naming the package) without aiohttp.

    On a loopback address, requests must name a loopback host (``Host`` header): a web page elsewhere
    that points its own domain name at 127.0.0.1 (DNS rebinding) gets 403, not the datasets.
    """
    try:
        from aiohttp import web
    except ImportError as e:  # pragma: no cover - the test environment has aiohttp
        raise ImportError("hzio serve needs aiohttp: pip install 'hzio[serve]' (or aiohttp)") from e
    datasets = {key: ServedDataset(key, p, verify) for key, p in dataset_keys(paths)}
    # Enough threads for every dataset's slots and a few for descriptions: a dataset whose reads are
    # stuck (a hung disk) holds its own slots' threads, never another dataset's.
    pool = ThreadPoolExecutor(max_workers=HANDLES_PER_DATASET * len(datasets) + SPARE_THREADS,
                              thread_name_prefix="hzio-serve")
    viewer_files = {p.name for p in VIEWER_DIR.iterdir() if p.is_file()} if VIEWER_DIR.is_dir() else set()
    content_types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}

    def error(status: int, message: str) -> Any:
        return web.json_response({"error": message}, status=status)

    async def in_pool(fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    async def with_handle(sd: ServedDataset, fn: Any, *args: Any) -> Any:
        async with sd.slots:
            return await in_pool(fn, sd, *args)

    def dataset_of(request: Any) -> ServedDataset:
        sd = datasets.get(request.match_info["name"])
        if sd is None:
            raise BadRequest(404, f"no dataset named {request.match_info['name'][:80]!r} is served here")
        return sd

    check_host = _is_loopback(host)

    @web.middleware
    async def errors(request: Any, handler: Any) -> Any:
        if check_host:
            name = request.host.rsplit(":", 1)[0] if not request.host.startswith("[") else \
                request.host[:request.host.find("]") + 1]
            if not _is_loopback(name):
                return error(403, f"host {request.host[:100]!r} is not this server's name: it answers requests "
                                  "for 127.0.0.1 or localhost only")
        try:
            return await handler(request)
        except BadRequest as e:
            return error(e.status, str(e))
        except web.HTTPException as e:  # no route, or a method other than GET and HEAD
            if e.status < 400:
                raise
            return error(e.status, f"{e.reason}: {request.method} {request.path[:200]}")
        except NotFoundError as e:
            return error(404, str(e))
        except InvalidArgumentError as e:
            return error(400, str(e))
        except (Error, OSError) as e:  # a corrupt block, a file gone: the server goes on
            return error(500, str(e))
        except MemoryError:
            return error(503, "out of memory")

    async def index(request: Any) -> Any:
        return await viewer_file_named("index.html")

    async def viewer_file(request: Any) -> Any:
        return await viewer_file_named(request.match_info["file"])

    async def viewer_file_named(name: str) -> Any:
        if name not in viewer_files:
            raise BadRequest(404, f"no viewer file {name[:80]!r}")
        body = (VIEWER_DIR / name).read_bytes()
        return web.Response(body=body, content_type=content_types.get(Path(name).suffix, "application/octet-stream"),
                            headers={"Cache-Control": "no-cache"})

    async def describe(sd: ServedDataset) -> Any:
        async with sd.slots:  # a dataset whose .idx hangs takes its own slots' threads only
            return await in_pool(sd.info)

    async def list_datasets(request: Any) -> Any:
        tasks = {sd.key: asyncio.ensure_future(describe(sd)) for sd in datasets.values()}
        await asyncio.wait(tasks.values(), timeout=DESCRIBE_SECONDS)  # the late ones go on, holding their slots
        out = []
        for key, task in tasks.items():
            if not task.done():
                out.append({"name": key, "error": f"no answer within {DESCRIBE_SECONDS:g} s"})
            elif task.exception() is not None:
                out.append({"name": key, "error": str(task.exception())})
            else:
                out.append(task.result())
        return web.json_response(out)

    async def one_dataset(request: Any) -> Any:
        return web.json_response(await describe(dataset_of(request)))

    async def slice_(request: Any) -> Any:
        body = await with_handle(dataset_of(request), read_slice, request.query)
        return web.Response(body=body, content_type="application/octet-stream", headers={"Cache-Control": "no-store"})

    async def stats(request: Any) -> Any:
        return web.json_response(await with_handle(dataset_of(request), block_statistics, request.query))

    async def files(request: Any) -> Any:
        sd = dataset_of(request)
        real = await with_handle(sd, ServedDataset.file_path, request.match_info["path"])
        if real is None:
            raise BadRequest(404, f"dataset {sd.key!r} has no file {request.match_info['path'][:200]!r}")
        return web.FileResponse(real, headers={"Cache-Control": "no-cache"})

    app = web.Application(middlewares=[errors], client_max_size=64 << 10)
    app.router.add_get("/", index)
    app.router.add_get("/viewer/{file}", viewer_file)
    app.router.add_get("/api/datasets", list_datasets)
    app.router.add_get("/api/datasets/{name}", one_dataset)
    app.router.add_get("/api/datasets/{name}/slice", slice_)
    app.router.add_get("/api/datasets/{name}/stats", stats)
    app.router.add_get("/files/{name}/{path:.+}", files)

    async def close(app: Any) -> None:
        pool.shutdown(wait=False, cancel_futures=True)
        for sd in datasets.values():  # their open files and caches go with the server
            sd.close()

    app.on_cleanup.append(close)
    return app


class Server:
    """A running ``hzio serve`` in a thread of this process (what tests and notebooks use).

    Local. ``url`` is where it listens; ``stop()`` (or leaving the ``with`` block) shuts it down and closes
    the dataset handles it opened, and the end of the process shuts it down too: the thread is a daemon.
    """

    def __init__(self, paths: list[str], *, host: str = "127.0.0.1", port: int = 0, verify: bool = True) -> None:
        from aiohttp import web

        self._app = make_app(paths, verify=verify, host=host)
        self._loop = asyncio.new_event_loop()
        started: queue.Queue[Any] = queue.Queue()

        async def start() -> Any:
            runner = web.AppRunner(self._app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host, port)
            await site.start()
            return runner

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._runner = self._loop.run_until_complete(start())
            except BaseException as e:  # noqa: BLE001 - handed to the constructor
                started.put(e)
                return
            started.put(None)
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="hzio-serve", daemon=True)
        self._thread.start()
        failure = started.get()
        if failure is not None:
            raise failure
        sock = self._runner.addresses[0]
        self.url = f"http://{_url_host(sock[0])}:{sock[1]}/"

    def stop(self) -> None:
        """Local. Stop serving and wait for the server's thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve_forever(paths: list[str], host: str, port: int, verify: bool, exit_after: float | None,
                  announce: Any) -> None:
    """Local. Serve until Ctrl-C (or ``exit_after`` seconds); ``announce(url)`` is called once listening."""
    with Server(paths, host=host, port=port, verify=verify) as server:
        announce(server.url)
        done = threading.Event()
        done.wait(exit_after)  # None: until KeyboardInterrupt
