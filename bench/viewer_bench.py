"""Benchmark: the browser viewer of ``hzio serve`` on a ``size``^3 float32 dataset, in headless Chromium driven
by Playwright: time to first paint and to full refinement of a slice, as the page itself records them.

The page (hzio/viewer/viewer.js) sets ``window.hzioViewer.timings.firstPaint`` (``performance.now()`` when it
draws its first array) and ``.refined`` (when the view is drawn at the level that matches the screen and nothing
loads; ``document.body.dataset.idle`` is "1" then). ``performance.now()`` counts from the navigation's start, so a
page load is timed from there; a zoom or an axis change from the call or the event that starts it. The page draws
an array in its own value range until the block statistics give the slice its robust colour range, so the
benchmark also reports when the final colours are on screen ("first coloured"): the later of firstPaint and the
moment the statistics are shown (a MutationObserver on ``#stats``, installed before the page's scripts).
Scenarios, each repeated ``--reps`` times in a new browser context and page (so nothing comes from the browser's
cache):

* (a) warm: the page opens on its default view (the middle z slice, fitted), served by ``hzio._serve.Server``
  in a thread of this process, which has already served every view of the benchmark once;
* (b) cold: the same from a fresh server process (a new ``python -c`` interpreter running the same Server,
  started for this one page load; it opens the dataset before listening), with the page cache dropped after
  it listens, just before the navigation;
* (c) fresh: the same from a fresh server process, page cache warm (what (b) owes to the disk is (b) - (c),
  what it owes to the new process is (c) - (a));
* (d) zoom (in-process server): once the default view is refined, ``hzioViewer.zoomAt`` by 4 at the canvas'
  centre, timed from that call to the first paint of a new (finer) layer and to idle. When the fitted slice
  has at least one screen pixel per sample (a 512^2 slice in the 1280x800 viewport has), the default view is
  drawn at full resolution already and this zoom loads nothing; ``--zoom-from 0.25`` opens the page on the
  fitted view zoomed out 4 times (through the URL's hash), so that the timed zoom has finer data to load;
* (e) axis (in-process server): once the default view is refined, the axis select set to x, timed from its
  change event to first paint and to idle.

The first page load of the run also pays for Chromium's first page and the in-process server's first reads:
it is reported apart ("first load") and left out of the medians. The finest layer drawn at the end of every
measurement is compared, at a few hundred samples, with the source array: a mismatch fails the run. Nothing
about the timings is asserted. See bench/README.md.

    .venv/bin/python bench/viewer_bench.py [--size 512] [--reps 5] [--dir DIR] [--json PATH] [--keep]
        [--zoom-from F] [--timeout S]
"""

import argparse
import collections
import datetime
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from typing import Any
from urllib.parse import urlencode

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import drop_page_cache, machine_facts, uptime_line, write_json
from hzio._serve import VIEWER_DIR, Server
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1280, "height": 800}
ZOOM_FACTOR = 4
CHECKED_SAMPLES = 256  # samples of the final layer compared with the source after each measurement
SCENARIOS = {
    "warm": "(a) warm: page load, in-process server",
    "cold": "(b) cold: page load, new server process, page cache dropped",
    "fresh": "(c) fresh: page load, new server process, warm page cache",
    "zoom": f"(d) zoom {ZOOM_FACTOR}x at the centre, in-process server",  # see scenario_labels
    "axis": "(e) axis change to x, in-process server",
}
SERVERS = {"warm": "in-process", "zoom": "in-process", "axis": "in-process", "cold": "subprocess",
           "fresh": "subprocess"}

# The fresh server of (b) and (c): a new interpreter serves the dataset (hzio._serve.Server, as `hzio serve`
# does), prints one JSON line once it listens and serves until its stdin closes; so it also ends when the
# benchmark dies.
SERVER_CHILD = r"""
import json, os, sys, time
import hzio
from hzio._serve import Server
with Server([sys.argv[1]], port=0) as server:
    print(json.dumps({"url": server.url, "hzio_core_built": time.ctime(os.path.getmtime(hzio._core.__file__))}),
          flush=True)
    sys.stdin.read()
"""

# Runs in every page before its own scripts: notes when the statistics are first shown (the page sets #stats,
# then takes its colour range from them and recolours the layers, in the same task; this observer runs right
# after). Until then the page colours its layers with the first array's own range, so the final colours are
# on screen at the later of this and firstPaint ("first coloured" below).
STATS_SHOWN_JS = """
window.__benchStatsShown = null;
new MutationObserver((records, observer) => {
  if (records.some((r) => r.target.id === "stats")) {
    window.__benchStatsShown = performance.now();
    observer.disconnect();
  }
}).observe(document, { childList: true, subtree: true });
"""

# True once the page has finished a load (or reported an error, so that a broken page fails at once instead of
# at the timeout). The benchmark clears `timings` before each timed change, so a stale `refined` cannot count.
REFINED_JS = """() => {
  const hz = window.hzioViewer;
  return !!hz && (hz.errors.length > 0 ||
    (document.body.dataset.idle === "1" && hz.timings.refined !== undefined));
}"""

# The page's record of the last measurement; slices are the /slice responses that started at or after `t0`
# (resource timing: encodedBodySize is the body's bytes, no compression here), in the order they ended, and
# statsEnd the end of the /stats response (the colour range) that started then, if any.
STATE_JS = """(t0) => {
  const hz = window.hzioViewer;
  const slices = performance.getEntriesByType("resource")
    .filter((e) => e.name.includes("/slice?") && e.startTime >= t0)
    .sort((a, b) => a.responseEnd - b.responseEnd)
    .map((e) => ({ level: Number(new URL(e.name).searchParams.get("level")), start: e.startTime,
                   end: e.responseEnd, bytes: e.encodedBodySize }));
  const s = hz.state;
  const key = [s.ds, s.field, s.component, s.time, s.axis, s.index].join("|");
  const layers = hz.layers().filter((l) => l.key === key)
    .map((l) => ({ level: l.level, width: l.width, height: l.height }));
  const nav = performance.getEntriesByType("navigation")[0];
  const stats = performance.getEntriesByType("resource").find((e) => e.name.includes("/stats?") && e.startTime >= t0);
  return { firstPaint: hz.timings.firstPaint ?? null, refined: hz.timings.refined ?? null, target: hz.target ?? null,
           requests: hz.requests, aborted: hz.aborted, errors: hz.errors.slice(), slices, layers,
           domContentLoaded: nav ? nav.domContentLoadedEventEnd : null, statsEnd: stats ? stats.responseEnd : null,
           statsShown: window.__benchStatsShown,
           view: { axis: s.axis, index: s.index, zoom: s.zoom, cu: s.cu, cv: s.cv } };
}"""

# `n` samples of the finest layer of the slice on screen, spread over it, with where they lie.
SAMPLES_JS = """(n) => {
  const hz = window.hzioViewer;
  const s = hz.state;
  const key = [s.ds, s.field, s.component, s.time, s.axis, s.index].join("|");
  const l = hz.layers().filter((x) => x.key === key).sort((a, b) => b.level - a.level)[0];
  if (!l) return null;
  const out = [];
  for (let k = 0; k < n; k++) {
    const i = Math.floor(((k * 7919) % 65536) / 65536 * l.width);
    const j = Math.floor(((k * 104729) % 65536) / 65536 * l.height);
    out.push([i, j, l.values[j * l.width + i]]);
  }
  return { axis: s.axis, plane: l.plane, level: l.level, u0: l.u0, v0: l.v0, du: l.du, dv: l.dv, samples: out };
}"""

# Clears the timings and zooms at the canvas' centre (CSS pixels inside the canvas); returns the call's time.
ZOOM_JS = """(factor) => {
  const hz = window.hzioViewer;
  hz.timings = {};
  const rect = document.getElementById("canvas").getBoundingClientRect();
  const t0 = performance.now();
  hz.zoomAt(rect.width / 2, rect.height / 2, factor);
  return t0;
}"""

# Clears the timings and notes when the axis select's change event arrives (a capturing listener runs before
# the page's own handler).
ARM_AXIS_JS = """() => {
  window.hzioViewer.timings = {};
  window.__benchT0 = null;
  document.addEventListener("change", (e) => {
    if (e.target.id === "axis") window.__benchT0 = performance.now();
  }, { capture: true, once: true });
}"""

AXES = {"z": (0, 1, 2), "y": (1, 0, 2), "x": (2, 0, 1)}  # plane axis, rows, columns as [z, y, x] indices


class Failure(Exception):
    """The page or a server failed: the run stops (after closing everything) with FAIL."""


# ------------------------------------------------------------------------------------------ data and servers
def make_source(size: int) -> np.ndarray:
    """``size``^3 float32: smooth waves rising with z, plus seeded noise (as the other benchmarks)."""
    axis = np.arange(size, dtype=np.float32)
    cube = np.sin(axis[None, None, :] / 7) * np.cos(axis[None, :, None] / 11) + axis[:, None, None] / size
    cube += np.random.default_rng(5).standard_normal(cube.shape, dtype=np.float32) * np.float32(1e-3)
    return cube


def write_dataset(scratch: str, cube: np.ndarray) -> str:
    """Write the cube with ``hzio.create``'s defaults; return the .idx path."""
    path = os.path.join(scratch, "cube.idx")
    with hzio.create(path, shape=cube.shape, fields={"data": "float32"}) as ds:
        ds.write(cube)
    os.sync()  # nothing left to write back while the pages load
    return path


class ServerProcess:
    """A fresh ``python -c`` server process (SERVER_CHILD) for one measurement; ``start_s`` is the time from
    starting the interpreter to its listening."""

    def __init__(self, idx: str, timeout_s: float) -> None:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER_CHILD, idx], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise Failure(f"the server process did not start within {timeout_s:g} s (exit code {self.proc.returncode})")
        self.start_s = time.perf_counter() - t0
        told = json.loads(line)
        self.url, self.hzio_core_built = told["url"], told["hzio_core_built"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # the child's stdin.read() returns: it stops serving and exits
            try:
                self.proc.wait(timeout=35)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# ------------------------------------------------------------------------------------------ page measurements
class Viewer:
    """A new browser context and page (nothing cached from earlier measurements); closed on leaving."""

    def __init__(self, browser: Browser, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms
        self.context: BrowserContext = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
        self.context.set_default_timeout(timeout_ms)
        self.context.set_default_navigation_timeout(timeout_ms)
        self.context.add_init_script(STATS_SHOWN_JS)
        self.page: Page = self.context.new_page()
        self.page_errors: list[str] = []
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.context.close()

    def wait_refined(self, what: str) -> None:
        try:
            self.page.wait_for_function(REFINED_JS, timeout=self.timeout_ms)
        except Exception as e:  # Playwright's TimeoutError, or the page gone
            raise Failure(f"{what}: the page was not refined within {self.timeout_ms / 1e3:g} s "
                          f"({type(e).__name__}; page errors: {self.page_errors})") from None

    def state(self, what: str, t0: float) -> dict[str, Any]:
        st = self.page.evaluate(STATE_JS, t0)
        if st["errors"] or self.page_errors:
            raise Failure(f"{what}: the page reported errors: {st['errors'] + self.page_errors}")
        return st


def check_layer(viewer: Viewer, cube: np.ndarray, what: str) -> int:
    """Compare samples of the finest layer on screen with the source; return its level."""
    got = viewer.page.evaluate(SAMPLES_JS, CHECKED_SAMPLES)
    if got is None:
        raise Failure(f"{what}: no layer of the current slice on screen")
    p, r, c = AXES[got["axis"]]
    for i, j, value in got["samples"]:
        point = [0, 0, 0]
        point[p], point[r], point[c] = got["plane"], got["v0"] + j * got["dv"], got["u0"] + i * got["du"]
        if value != float(cube[tuple(point)]):
            raise Failure(f"{what}: the layer at level {got['level']} shows {value!r} at [z, y, x] = {point}, the "
                          f"source holds {float(cube[tuple(point)])!r}")
    return got["level"]


def record(st: dict[str, Any], t0: float, level: int) -> dict[str, Any]:
    """One measurement from the page's state: times in ms from ``t0`` (0: the navigation's start)."""
    def since(t: float | None) -> float | None:
        return None if t is None else round(t - t0, 2)

    coloured = None if st["firstPaint"] is None or st["statsShown"] is None else max(st["firstPaint"],
                                                                                      st["statsShown"])
    return {"first_paint_ms": since(st["firstPaint"]), "first_coloured_ms": since(coloured),
            "refined_ms": since(st["refined"]),
            "requests": st["requests"], "aborted": st["aborted"], "slice_bytes": sum(s["bytes"] for s in st["slices"]),
            "levels": [s["level"] for s in st["slices"]], "target": st["target"], "final_level": level,
            "layers": st["layers"], "slices": [{**s, "start": since(s["start"]), "end": since(s["end"])}
                                               for s in st["slices"]],
            "dom_content_loaded_ms": since(st["domContentLoaded"]) if t0 == 0 else None,
            "stats_end_ms": since(st["statsEnd"]), "stats_shown_ms": since(st["statsShown"]), "view": st["view"]}


def read_bytes(pid: int) -> int:
    """Bytes process ``pid`` (all its threads) caused to be fetched from storage so far (/proc/PID/io)."""
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))


def page_load(viewer: Viewer, url: str, cube: np.ndarray, what: str, cold: list[bool] | None = None,
              server_pid: int | None = None) -> dict:
    """Open the page on its default view and wait until it is refined; with ``cold``, drop the page cache
    first (and note whether the kernel let us); with ``server_pid``, also count what that process read from
    the disk meanwhile."""
    if cold is not None:
        cold.append(drop_page_cache())
    b0 = read_bytes(server_pid) if server_pid else 0
    viewer.page.goto(url, wait_until="commit")
    viewer.wait_refined(what)
    b1 = read_bytes(server_pid) if server_pid else 0
    st = viewer.state(what, 0.0)
    out = record(st, 0.0, check_layer(viewer, cube, what))
    if server_pid:
        out["server_read_bytes"] = b1 - b0
    return out


def zoom_start_url(url: str, idx: str, fitted: dict[str, Any], zoom_from: float) -> str:
    """The page's URL for (d)'s starting view: the default one, or with ``zoom_from`` != 1 the fitted view
    (``fitted``: the page's view of a default load) with its zoom multiplied by ``zoom_from``, in the URL's hash
    as the page keeps its views. A page that opens on it never loaded the fitted view's finer layer."""
    if zoom_from == 1:
        return url
    name = os.path.splitext(os.path.basename(idx))[0]  # the server names a dataset after its .idx
    return url + "#" + urlencode({"ds": name, "zoom": fitted["zoom"] * zoom_from, "cu": fitted["cu"],
                                  "cv": fitted["cv"]})


def zoom(viewer: Viewer, cube: np.ndarray, what: str) -> dict[str, Any]:
    """On a refined page: zoom by ZOOM_FACTOR at the canvas' centre and wait until it is refined again."""
    before = viewer.state(what, 0.0)
    t0 = viewer.page.evaluate(ZOOM_JS, ZOOM_FACTOR)
    viewer.wait_refined(what)
    st = viewer.state(what, t0)
    out = record(st, t0, check_layer(viewer, cube, what))
    out.update(requests=st["requests"] - before["requests"], aborted=st["aborted"] - before["aborted"],
               target_before=before["target"])
    return out


def axis_change(viewer: Viewer, cube: np.ndarray, what: str) -> dict[str, Any]:
    """On a refined page: choose axis x in the axis select and wait until it is refined again."""
    before = viewer.state(what, 0.0)
    viewer.page.evaluate(ARM_AXIS_JS)
    viewer.page.select_option("#axis", "x")
    viewer.wait_refined(what)
    t0 = viewer.page.evaluate("window.__benchT0")
    if t0 is None:
        raise Failure(f"{what}: the axis select sent no change event")
    st = viewer.state(what, t0)
    if st["view"]["axis"] != "x":
        raise Failure(f"{what}: the page shows axis {st['view']['axis']}, not x")
    out = record(st, t0, check_layer(viewer, cube, what))
    out.update(requests=st["requests"] - before["requests"], aborted=st["aborted"] - before["aborted"])
    return out


def run_scenarios(browser: Browser, idx: str, cube: np.ndarray, args: argparse.Namespace,
                  cold: list[bool]) -> dict[str, Any]:
    """Every measurement: the in-process server's scenarios first, then those of fresh server processes
    (a cold one drops the page cache, which would make the next warm ones partly cold)."""
    timeout_ms = args.timeout * 1e3
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in SCENARIOS}
    out: dict[str, Any] = {"samples": samples, "child_builds": set()}
    t_start = time.monotonic()
    with Server([idx], port=0) as server:
        # The first load, then (untimed) a zoom and an axis change, so that the in-process server has read
        # every view of (a), (d) and (e) once before they are timed.
        with Viewer(browser, timeout_ms) as v:
            out["first_load"] = page_load(v, server.url, cube, "first load")
        zoom_url = zoom_start_url(server.url, idx, out["first_load"]["view"], args.zoom_from)
        out["warmup"] = {}
        with Viewer(browser, timeout_ms) as v:
            page_load(v, zoom_url, cube, "warm-up zoom, page load")
            out["warmup"]["zoom"] = zoom(v, cube, "warm-up zoom")
        with Viewer(browser, timeout_ms) as v:
            page_load(v, server.url, cube, "warm-up axis, page load")
            out["warmup"]["axis"] = axis_change(v, cube, "warm-up axis")
        for rep in range(args.reps):
            with Viewer(browser, timeout_ms) as v:
                samples["warm"].append(page_load(v, server.url, cube, f"(a) repetition {rep + 1}"))
            with Viewer(browser, timeout_ms) as v:
                page_load(v, zoom_url, cube, f"(d) repetition {rep + 1}, page load")
                samples["zoom"].append(zoom(v, cube, f"(d) repetition {rep + 1}"))
            with Viewer(browser, timeout_ms) as v:
                page_load(v, server.url, cube, f"(e) repetition {rep + 1}, page load")
                samples["axis"].append(axis_change(v, cube, f"(e) repetition {rep + 1}"))
            print(f"  in-process server: repetition {rep + 1}/{args.reps} done ({time.monotonic() - t_start:.0f} s)",
                  flush=True)
    for rep in range(args.reps):
        for name in ("fresh", "cold"):  # a cold load reads again what the next fresh one reads
            what = f"({'c' if name == 'fresh' else 'b'}) repetition {rep + 1}"
            with ServerProcess(idx, args.timeout) as srv, Viewer(browser, timeout_ms) as v:
                sample = page_load(v, srv.url, cube, what, cold if name == "cold" else None, srv.proc.pid)
                samples[name].append({**sample, "server_start_s": round(srv.start_s, 4)})
                out["child_builds"].add(srv.hzio_core_built)
        print(f"  fresh server processes: repetition {rep + 1}/{args.reps} done "
              f"({time.monotonic() - t_start:.0f} s)", flush=True)
    out["child_builds"] = sorted(out["child_builds"])
    return out


# ------------------------------------------------------------------------------------------ reporting
def spread(values: list[float | None]) -> dict[str, Any]:
    """Median, min and max of the values that exist (None: the measurement had no such event)."""
    v = [x for x in values if x is not None]
    if not v:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": round(statistics.median(v), 2), "min": round(min(v), 2), "max": round(max(v), 2), "n": len(v)}


def summarize(samples: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    summary = {}
    for name, rows in samples.items():
        levels = collections.Counter(tuple(r["levels"]) for r in rows).most_common(1)[0][0]
        summary[name] = {"first_paint_ms": spread([r["first_paint_ms"] for r in rows]),
                         "first_coloured_ms": spread([r["first_coloured_ms"] for r in rows]),
                         "refined_ms": spread([r["refined_ms"] for r in rows]),
                         "requests": statistics.median(r["requests"] for r in rows),
                         "slice_bytes": statistics.median(r["slice_bytes"] for r in rows),
                         "levels": list(levels), "target": rows[0]["target"]}
        if "server_start_s" in rows[0]:
            summary[name]["server_start_s"] = spread([r["server_start_s"] for r in rows])
            summary[name]["server_read_bytes"] = statistics.median(r["server_read_bytes"] for r in rows)
    return summary


def cell(s: dict[str, Any]) -> str:
    """'median (min-max)' of one measure, right-aligned; '-' when it never happened."""
    text = "-" if s["median"] is None else f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"
    return f"{text:>24}"


def scenario_labels(zoom_from: float) -> dict[str, str]:
    labels = dict(SCENARIOS)
    if zoom_from != 1:
        labels["zoom"] = f"(d) zoom {ZOOM_FACTOR}x at the centre from {zoom_from:g} x fitted, in-process"
    return labels


def print_table(summary: dict[str, Any], first: dict[str, Any], reps: int, max_level: int,
                labels: dict[str, str]) -> None:
    width = max(map(len, labels.values()))
    print(f"\nms from the start of the navigation (page loads) or of the change (zoom, axis): median (min-max) of "
          f"{reps} repetitions; slice requests and KiB received (medians); levels of the slices received, in order, "
          f"and the level the page aims at (full resolution is level {max_level})")
    print(f"  {'scenario':<{width}}{'first paint':>24}{'first coloured':>24}{'refined (idle)':>24}{'requests':>10}"
          f"{'KiB':>9}  levels (target)")
    for name, label in labels.items():
        s = summary[name]
        print(f"  {label:<{width}}{cell(s['first_paint_ms'])}{cell(s['first_coloured_ms'])}{cell(s['refined_ms'])}"
              f"{s['requests']:>10g}{s['slice_bytes'] / 1024:>9.1f}  {','.join(map(str, s['levels'])) or '-'} "
              f"({s['target']})")
    print(f"\nfirst load (Chromium's first page, the in-process server's first reads; not in the medians): first paint "
          f"{first['first_paint_ms']:.1f} ms, first coloured {first['first_coloured_ms']:.1f} ms, refined "
          f"{first['refined_ms']:.1f} ms, {first['requests']} requests, levels {','.join(map(str, first['levels']))} "
          f"({first['target']})")
    starts = [f"{labels[n][:3]} {summary[n]['server_start_s']['median']:.2f} s" for n in ("cold", "fresh")]
    print(f"new server process, start to listening (before the navigation, not in its times), median: "
          f"{', '.join(starts)}")
    reads = [f"{labels[n][:3]} {summary[n]['server_read_bytes'] / 2**20:.2f} MiB" for n in ("cold", "fresh")]
    print(f"what the new server process read from the disk during the page load (read_bytes of /proc/PID/io), "
          f"median: {', '.join(reads)}")


def notes(samples: dict[str, list[dict[str, Any]]], max_level: int) -> list[str]:
    """What a reader of the table needs to know about this run's measurements."""
    out = []
    idle = [r for r in samples["zoom"] if r["requests"] == 0]
    if idle:
        out.append(f"(d): in {len(idle)} of {len(samples['zoom'])} repetitions the zoom needed no new data: the "
                   f"view was already drawn at level {idle[0]['target_before']} (the zoomed view needs level "
                   f"{idle[0]['target']}; full resolution is {max_level}), so nothing was painted anew and "
                   f"'refined' is the page's debounce of view changes; --zoom-from F (below 1) opens the page "
                   f"on a coarser view first")
    loads = [r for n in ("warm", "cold", "fresh") for r in samples[n]]
    late = [r for r in loads if r["first_coloured_ms"] is not None and r["first_coloured_ms"] > r["first_paint_ms"]]
    if late:
        out.append(f"in {len(late)} of {len(loads)} page loads the statistics (the colour range) came after the first "
                   f"paint, which coloured the array in its own range: 'first coloured' is when the page "
                   f"recoloured it with the robust range")
    aborted = sum(r["aborted"] for rows in samples.values() for r in rows)
    if aborted:
        out.append(f"{aborted} slice requests were aborted by the page (not in the KiB)")
    return out


# ------------------------------------------------------------------------------------------ main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="samples per axis of the cube (default 512)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; medians are reported (default 5)")
    parser.add_argument("--dir", default=tempfile.gettempdir(),
                        help="a new scratch folder is made in DIR (default /tmp), on the disk to measure, and "
                             "removed at the end")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder and its dataset")
    parser.add_argument("--json", default=None, help="also write the full report (every measurement) here")
    add_plot_option(parser)
    parser.add_argument("--zoom-from", type=float, default=1.0,
                        help="(d) opens the page at this many times the fitted view's zoom (default 1: the "
                             "fitted view); below 1 the timed zoom starts from a coarser level")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for a page to be refined or a server to start (default 60)")
    args = parser.parse_args(argv)
    if args.size < 2 or args.reps < 1 or not args.zoom_from > 0:
        parser.error("--size must be at least 2, --reps at least 1 and --zoom-from above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # so that the cleanup below runs
    os.makedirs(args.dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="viewer_bench_", dir=os.path.abspath(args.dir))
    facts, uptime_before = machine_facts(scratch), uptime_line()
    print(f"machine: {facts['cores_usable']} cores ({facts['cpu_model']}), {facts['mem_available_gib']} GiB "
          f"memory available, {facts['disk_free_gib']} GiB free on {facts['disk_device']} ({scratch})")
    if facts["disk_device"].split()[-1:] == ["tmpfs"]:
        print("WARNING: the scratch folder is on tmpfs: dropping the page cache does not make (b) cold; use --dir")
    versions = {"hzio": hzio.__version__, "hzio_core_built": HZIO_BUILT, "playwright": version("playwright"),
                "aiohttp": version("aiohttp"), "numpy": np.__version__}
    print(f"uptime: {uptime_before}\nhzio {hzio.__version__}, _core built {HZIO_BUILT}, viewer {VIEWER_DIR}; "
          f"playwright {versions['playwright']}, aiohttp {versions['aiohttp']}")
    cold: list[bool] = []
    try:
        cube = make_source(args.size)
        t0 = time.perf_counter()
        idx = write_dataset(scratch, cube)
        with hzio.open(idx) as ds:
            max_level = ds.max_level
        print(f"cube {args.size}^3 float32 ({cube.nbytes / 2**20:.0f} MiB) written in "
              f"{time.perf_counter() - t0:.1f} s; max level {max_level}; reps {args.reps}; viewport "
              f"{VIEWPORT['width']}x{VIEWPORT['height']}", flush=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=args.timeout * 1e3)
            try:
                versions["chromium"] = browser.version
                print(f"chromium {browser.version} (headless)", flush=True)
                run = run_scenarios(browser, idx, cube, args, cold)
            finally:
                browser.close()
    except Failure as e:
        raise SystemExit(f"FAIL: {e}") from None
    except PlaywrightError as e:  # Chromium did not start, a page crashed, a step timed out
        raise SystemExit(f"FAIL: Playwright: {e}") from None
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    summary = summarize(run["samples"])
    labels = scenario_labels(args.zoom_from)
    print_table(summary, run["first_load"], args.reps, max_level, labels)
    run_notes = notes(run["samples"], max_level)
    for line in run_notes:
        print(f"note: {line}")
    if not all(cold):
        print("WARNING: could not drop the page cache (/proc/sys/vm/drop_caches); (b) was warm")
    if set(run["child_builds"]) - {HZIO_BUILT}:
        print(f"WARNING: a server process loaded another hzio build ({run['child_builds']}): hzio was reinstalled")
    uptime_after = uptime_line()
    print(f"\nevery final layer equals the source at the samples checked; uptime at the end: {uptime_after}")
    if args.json:
        report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "command": " ".join([os.path.relpath(sys.executable, REPO_ROOT), "bench/viewer_bench.py"]
                                      + (argv if argv is not None else sys.argv[1:])),
                  "size": args.size, "dtype": "float32", "reps": args.reps, "max_level": max_level,
                  "viewport": VIEWPORT, "device_scale_factor": 1, "zoom_factor": ZOOM_FACTOR,
                  "zoom_from": args.zoom_from, "chromium_args": CHROMIUM_ARGS, "scenarios": labels,
                  "servers": SERVERS,
                  "cold_cache_dropped": all(cold), "notes": run_notes, "machine": facts,
                  "uptime_before": uptime_before, "uptime_after": uptime_after, "summary": summary,
                  "first_load": run["first_load"], "warmup": run["warmup"], "samples": run["samples"],
                  "versions": {**versions, "server_process_hzio_core_built": run["child_builds"]}}
        write_json(args.json, report)
        plot_after_run(args, "viewer_bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
