"""The ``hzio serve`` viewer in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

Oracle: the NumPy arrays written, coloured here with the colour maps' control points as docs/guide/viewer.md
defines them; the canvas pixels (read back as a lossless PNG) must show those colours at the centre of every
sample on screen. The tests change axis, field, component, timestep and zoom through the page's controls,
read the value under the cursor, restore a view from its URL, follow a dataset that gains timesteps, and
check that zooming never paints coarser data over finer data already shown.

``HZIO_VIEWER_SCREENSHOT=docs/images/viewer.png`` makes ``test_screenshot`` save the README's screenshot there.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
from urllib.parse import urlencode

import hzio
import numpy as np
import pytest
from hzio._serve import Server
from PIL import Image
from playwright.sync_api import sync_playwright  # the test command installs it (scripts/bootstrap.sh)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1000, "height": 700}
TIMEOUT_MS = 20000

# The colour maps as docs/guide/viewer.md defines them: sRGB control points at even steps from 0 to 1.
CONTROL_POINTS = {
    "viridis": ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b",
                "#fde725"],
    "grey": ["#000000", "#ffffff"],
    "coolwarm": ["#3b4cc0", "#dddddd", "#b40426"],
}

SHAPE = (24, 40, 56)  # z, y, x: all different, so that an axis mix-up shows
TIMES = 3


def color_table(name):
    points = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in CONTROL_POINTS[name]], float)
    x = np.arange(256) / 255 * (len(points) - 1)
    return np.stack([np.floor(np.interp(x, np.arange(len(points)), points[:, c]) + 0.5) for c in range(3)],
                    axis=-1).astype(np.int32)


def table_index(values, lo, hi, log=False):
    v = values.astype(np.float64)
    if log:
        v = np.where(v > 0, np.log10(np.where(v > 0, v, 1)), np.nan)
        lo, hi = np.log10(lo), np.log10(hi)
    return np.clip(np.floor((v - lo) * (255 / (hi - lo)) + 0.5), 0, 255).astype(np.int64)


def source(t):
    z, y, x = np.meshgrid(*(np.arange(n) for n in SHAPE), indexing="ij")
    temp = np.sin(x / 5.0) + np.cos(y / 4.0) + z / 10.0 + t + 3.0  # positive: a log scale shows all of it
    vel = np.stack([np.sin(y / 6.0) * (t + 1), np.cos(x / 9.0), z / 24.0], axis=-1)
    return temp.astype(np.float32), vel.astype(np.float32)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("viewer") / "flow.idx")
    with hzio.create(path, shape=SHAPE, fields={"temp": "float32", "vel": "float32[3]"}, times=range(TIMES)) as ds:
        for t in range(TIMES):
            temp, vel = source(t)
            ds.write(temp, field="temp", time=t)
            ds.write(vel, field="vel", time=t)
    return path


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(dataset):
    with Server([dataset]) as s:
        yield s


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, errors


def settle(page):
    """Wait until the view is drawn at the level it asked for and nothing is loading."""
    page.wait_for_timeout(150)  # longer than the page's debounce of view changes
    page.wait_for_function("document.body.dataset.idle === '1'", timeout=TIMEOUT_MS)
    assert page.evaluate("window.hzioViewer.errors") == []


def open_viewer(page, server, **view):
    page.goto(server.url + ("#" + urlencode(view) if view else ""))
    settle(page)


def viewer_state(page):
    return page.evaluate("JSON.parse(JSON.stringify(window.hzioViewer.state))")


def canvas_rgba(page):
    url = page.evaluate("document.getElementById('canvas').toDataURL('image/png')")
    png = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(np.int32)


def check_pixels(page, plane, log=False):
    """The canvas shows ``plane`` (rows, columns: the slice at full resolution, from NumPy) in the page's
    colour map and range at the centre of every sample on screen; returns how many samples were checked."""
    st = viewer_state(page)
    rgba = canvas_rgba(page)
    h, w = rgba.shape[:2]
    k = st["zoom"]
    assert k >= 2, "full-resolution checks need at least 2 pixels per sample"
    rows, cols = np.meshgrid(np.arange(plane.shape[0]), np.arange(plane.shape[1]), indexing="ij")
    px = np.floor((cols + 0.5 - st["cu"]) * k + w / 2).astype(int)
    py = np.floor((rows + 0.5 - st["cv"]) * k + h / 2).astype(int)
    inside = (px >= 0) & (px < w) & (py >= 0) & (py < h)
    assert inside.sum() > 0
    got = rgba[py[inside], px[inside]]
    table = color_table(st["cmap"])
    index = table_index(plane[inside], st["lo"], st["hi"], log)
    # A value on the edge between two table entries may round either way in the browser's arithmetic.
    ok = np.zeros(len(index), bool)
    for d in (-1, 0, 1):
        ok |= np.all(np.abs(got[:, :3] - table[np.clip(index + d, 0, 255)]) <= 1, axis=1)
    assert np.all(got[:, 3] == 255)
    bad = np.flatnonzero(~ok)
    assert not len(bad), (f"{len(bad)} of {len(ok)} samples show other colours; first at row "
                          f"{rows[inside][bad[0]]}, column {cols[inside][bad[0]]}: {got[bad[0]]} != "
                          f"{table[index[bad[0]]]}")
    return int(inside.sum())


def test_first_view_shows_the_middle_slice_in_robust_range(page, server):
    """The page opens on the first dataset, field and timestep, the middle z slice, fitted to the window,
    at full resolution, in viridis with a range inside the data's from the block statistics."""
    open_viewer(page, server)
    st = viewer_state(page)
    assert (st["ds"], st["field"], st["axis"], st["time"], st["index"]) == ("flow", "temp", "z", 0, SHAPE[0] // 2)
    temp, _ = source(0)
    assert temp.min() <= st["lo"] < st["hi"] <= temp.max()
    assert check_pixels(page, temp[SHAPE[0] // 2]) == SHAPE[1] * SHAPE[2]
    assert "flow" in page.locator("#dataset").inner_text()


def test_axis_field_component_and_time_controls(page, server):
    open_viewer(page, server, ds="flow", range="manual", lo=2, hi=7)
    temp0, vel0 = source(0)
    page.select_option("#axis", "x")
    settle(page)
    st = viewer_state(page)
    assert st["axis"] == "x" and st["index"] == SHAPE[2] // 2
    check_pixels(page, temp0[:, :, SHAPE[2] // 2])  # rows z, columns y
    page.select_option("#axis", "y")
    settle(page)
    check_pixels(page, temp0[:, SHAPE[1] // 2, :])  # rows z, columns x
    page.locator("#index").fill("7")  # a range input takes fill() and fires input
    settle(page)
    check_pixels(page, temp0[:, 7, :])
    page.select_option("#field", "vel")
    settle(page)
    st = viewer_state(page)
    assert st["component"] == "magnitude"
    magnitude = np.sqrt(np.sum(vel0.astype(np.float64) ** 2, axis=-1)).astype(np.float32)
    check_pixels(page, magnitude[:, 7, :])
    page.select_option("#component", "0")
    settle(page)
    check_pixels(page, vel0[:, 7, :, 0])
    page.locator("#time").fill("2")
    settle(page)
    assert viewer_state(page)["time"] == 2
    check_pixels(page, source(2)[1][:, 7, :, 0])


def test_value_and_coordinates_under_the_cursor(page, server):
    open_viewer(page, server, ds="flow", time=1)
    st = viewer_state(page)
    box = page.locator("#canvas").bounding_box()
    x, y = 10, 7  # the sample at column 10, row 7 of the z slice
    page.mouse.move(box["x"] + box["width"] / 2 + (x + 0.5 - st["cu"]) * st["zoom"],
                    box["y"] + box["height"] / 2 + (y + 0.5 - st["cv"]) * st["zoom"])
    temp1, _ = source(1)
    z = st["index"]
    readout = page.evaluate("window.hzioViewer.lastReadout")
    assert readout["point"] == [z, y, x]
    assert np.float32(readout["value"]) == temp1[z, y, x]
    text = page.locator("#readout").inner_text()
    assert f"x={x} y={y} z={z}" in text and f"{temp1[z, y, x]:.4g}"[:4] in text


def test_view_state_round_trips_through_the_url(page, browser, server):
    view = {"ds": "flow", "field": "temp", "axis": "y", "index": 5, "time": 1, "cmap": "grey", "range": "manual",
            "lo": 3.5, "hi": 6.5, "zoom": 6, "cu": 20, "cv": 10}
    open_viewer(page, server, **view)
    st = viewer_state(page)
    for key, value in view.items():
        assert st[key] == value, key
    temp1, _ = source(1)
    check_pixels(page, temp1[:, 5, :])
    page.select_option("#cmap", "coolwarm")
    settle(page)
    page.wait_for_function("location.hash.includes('cmap=coolwarm')", timeout=TIMEOUT_MS)
    shared = page.url
    again = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
    again.goto(shared)
    settle(again)
    assert viewer_state(again)["cmap"] == "coolwarm"
    check_pixels(again, temp1[:, 5, :])
    assert np.array_equal(canvas_rgba(again), canvas_rgba(page))
    again.context.close()


def test_play_steps_through_the_timesteps_and_pauses(page, server):
    """Play shows each timestep refined, in order, wrapping around; pause stops on the one shown."""
    open_viewer(page, server, ds="flow", range="manual", lo=2, hi=7)
    page.click("#play")
    assert page.locator("#play").inner_text() == "pause"
    for t in (1, 2, 0, 1):
        page.wait_for_function(f"window.hzioViewer.state.time === {t}", timeout=TIMEOUT_MS)
    page.click("#play")
    assert page.locator("#play").inner_text() == "play"
    settle(page)
    stopped = viewer_state(page)["time"]
    page.wait_for_timeout(1000)  # more than two steps of play
    assert viewer_state(page)["time"] == stopped
    check_pixels(page, source(stopped)[0][SHAPE[0] // 2])


def test_log_scale(page, server):
    open_viewer(page, server, ds="flow", scale="log", range="manual", lo=2.5, hi=8, cmap="coolwarm")
    check_pixels(page, source(0)[0][SHAPE[0] // 2], log=True)


def test_rapid_slice_changes_end_on_the_last(page, server):
    """Stale requests are dropped: after 20 quick moves of the slice, the page shows the last one."""
    open_viewer(page, server, ds="flow", range="manual", lo=2, hi=7)
    page.evaluate("""() => { const s = document.getElementById('index');
      for (let i = 0; i < 20; i++) { s.value = String(i); s.dispatchEvent(new Event('input')); } }""")
    settle(page)
    assert viewer_state(page)["index"] == 19
    check_pixels(page, source(0)[0][19])


@pytest.fixture
def large_slice(tmp_path):
    """A 1024 x 1024 2-D field: fitted to the window, the view needs a coarse level."""
    y, x = np.meshgrid(np.arange(1024), np.arange(1024), indexing="ij")
    a = (np.sin(x / 37.0) * np.cos(y / 23.0) + (x + y) / 2048.0).astype(np.float32)
    path = str(tmp_path / "large.idx")
    with hzio.create(path, shape=a.shape, fields={"f": "float32"}) as ds:
        ds.write(a)
    with Server([path]) as s:
        yield s, a


def test_zoom_refines_and_never_paints_coarser_data(page, large_slice):
    server, a = large_slice
    page.set_viewport_size({"width": 640, "height": 480})  # about 3 samples per pixel when fitted
    open_viewer(page, server, range="manual", lo=-1, hi=2)
    info = page.evaluate("fetch('/api/datasets/large').then(r => r.json())")
    layers = page.evaluate("window.hzioViewer.layers().map(l => ({level: l.level, u0: l.u0, v0: l.v0, du: l.du, "
                           "dv: l.dv, width: l.width, height: l.height, values: Array.from(l.values)}))")
    target = page.evaluate("window.hzioViewer.target")
    assert target < info["max_level"], "fitted to the window, the view reads a coarse level"
    finest = max(layers, key=lambda l: l["level"])
    assert finest["level"] == target and finest["du"] > 1
    got = np.array(finest["values"], np.float32).reshape(finest["height"], finest["width"])
    expected = a[finest["v0"]::finest["dv"], finest["u0"]::finest["du"]][:finest["height"], :finest["width"]]
    np.testing.assert_array_equal(got, expected)
    page.evaluate("window.hzioViewer.centreLevels.length = 0")
    box = page.locator("#canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(12):  # zoom in by 1.25 per step at the centre, letting some steps load
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(40)
    settle(page)
    levels = [e["level"] for e in page.evaluate("window.hzioViewer.centreLevels") if e["level"] is not None]
    assert levels and all(b >= a for a, b in zip(levels, levels[1:])), levels
    assert levels[-1] == info["max_level"] == page.evaluate("window.hzioViewer.target")
    check_pixels(page, a)


def test_follow_shows_new_timesteps_of_a_running_writer(page, tmp_path):
    path = str(tmp_path / "live.idx")
    frames = [np.full((16, 16, 16), 10.0 * t + 1, np.float32) + np.arange(16, dtype=np.float32) for t in range(3)]
    with hzio.create(path, shape=(16, 16, 16), fields={"f": "float32"}, times=[0]) as ds:
        ds.write(frames[0], time=0)
    with Server([path]) as server:
        open_viewer(page, server, ds="live", follow=1, range="manual", lo=0, hi=40)
        assert page.locator("#follow").is_checked()
        for t in (1, 2):
            with hzio.open(path, mode="r+") as ds:
                ds.write(frames[t], time=t)
            page.wait_for_function(f"window.hzioViewer.state.time === {t}", timeout=TIMEOUT_MS)
            settle(page)
            assert page.locator("#time-out").inner_text() == str(t)
            check_pixels(page, frames[t][8])


@pytest.fixture
def showcase(tmp_path):
    """Blobs and waves over 48 x 160 x 240 samples: many blocks, so the statistics have a shape."""
    z, y, x = np.meshgrid(np.arange(48), np.arange(160), np.arange(240), indexing="ij")
    a = np.sin(x / 11.0) * np.cos(y / 17.0) * 0.3
    for cz, cy, cx, r, h in ((24, 60, 70, 30, 2.0), (20, 110, 170, 22, 1.5), (30, 40, 190, 14, 1.0)):
        a = a + h * np.exp(-((z - cz) ** 2 + (y - cy) ** 2 + (x - cx) ** 2) / (2.0 * r * r))
    path = str(tmp_path / "blobs.idx")
    with hzio.create(path, shape=a.shape, fields={"density": "float32"}) as ds:
        ds.write(a.astype(np.float32))
    with Server([path]) as s:
        yield s, a.astype(np.float32)


def test_screenshot(page, showcase, tmp_path):
    """The README's picture; saved where HZIO_VIEWER_SCREENSHOT says, else into the test's folder. The
    readout names the sample under the pointer."""
    server, a = showcase
    open_viewer(page, server)
    st = viewer_state(page)
    box = page.locator("#canvas").bounding_box()
    x, y = 70, 60
    page.mouse.move(box["x"] + box["width"] / 2 + (x + 0.5 - st["cu"]) * st["zoom"],
                    box["y"] + box["height"] / 2 + (y + 0.5 - st["cv"]) * st["zoom"])
    assert page.evaluate("window.hzioViewer.lastReadout")["value"] == a[24, y, x]
    check_pixels(page, a[24])
    target = os.environ.get("HZIO_VIEWER_SCREENSHOT") or str(tmp_path / "viewer.png")
    page.screenshot(path=target)
    img = np.asarray(Image.open(target))
    assert img.shape[:2] == (VIEWPORT["height"], VIEWPORT["width"]) and img.std() > 10


# ----------------------------------------------------------------------------------- regressions of the review
def fit_zoom(page, rows, cols):
    """The CSS pixels per sample of 'fit to window' for a slice of rows x columns."""
    w, h = page.evaluate("[document.getElementById('canvas').clientWidth, "
                         "document.getElementById('canvas').clientHeight]")
    return min(w / cols, h / rows)


@pytest.mark.parametrize("extra", ["", "&field=vel&cu=28&cv=20"])
def test_a_hostile_hash_opens_a_working_view(page, server, extra):
    """#ds=flow&axis=__proto__&index=3.5&component=abc&zoom=1e-300 (and with the vector field and a centre,
    so that the zoom is kept and must be clamped): the page is idle without errors, on axis z, slice 3.5
    rounded, a valid component, a zoom of at least fit/8; it shows the NumPy slice."""
    page.goto(server.url + "#ds=flow&axis=__proto__&index=3.5&component=abc&zoom=1e-300" + extra)
    settle(page)
    st = viewer_state(page)
    assert (st["ds"], st["axis"]) == ("flow", "z") and st["index"] in (3, 4), st
    assert page.locator("#axis").input_value() == "z"
    assert not page.locator("#status").inner_text().startswith("error")
    fit = fit_zoom(page, SHAPE[1], SHAPE[2])
    assert np.isfinite(st["zoom"]) and fit / 8 * (1 - 1e-9) <= st["zoom"] <= 256, (st["zoom"], fit)
    temp, vel = source(0)
    if extra:
        assert (st["field"], st["component"]) == ("vel", "magnitude")
        plane = np.sqrt(np.sum(vel.astype(np.float64) ** 2, axis=-1)).astype(np.float32)[st["index"]]
    else:
        assert (st["field"], st["component"]) == ("temp", "0")
        plane = temp[st["index"]]
    if st["zoom"] < 2:
        page.click("#fit")
        settle(page)
    assert check_pixels(page, plane) == SHAPE[1] * SHAPE[2]


def test_a_hash_naming_no_served_dataset_opens_the_first_normally(page, server):
    """#ds=nope&axis=x: nothing of the hash applies; the first dataset opens as without a hash."""
    page.goto(server.url + "#ds=nope&axis=x")
    settle(page)
    st = viewer_state(page)
    assert (st["ds"], st["field"], st["axis"], st["time"], st["index"]) == ("flow", "temp", "z", 0, SHAPE[0] // 2)
    check_pixels(page, source(0)[0][SHAPE[0] // 2])


@pytest.fixture
def no_statistics(tmp_path):
    """A 512 x 768 2-D field whose .hzstats sidecars are deleted before serving: no block statistics."""
    y, x = np.meshgrid(np.arange(512), np.arange(768), indexing="ij")
    a = (np.sin(x / 29.0) * np.cos(y / 19.0) * 5 + (x - y) / 100.0).astype(np.float32)
    path = tmp_path / "bare.idx"
    with hzio.create(str(path), shape=a.shape, fields={"f": "float32"}) as ds:
        ds.write(a)
    sidecars = list(tmp_path.rglob("*.hzstats"))
    assert sidecars
    for p in sidecars:
        p.unlink()
    with Server([str(path)]) as s:
        yield s, a


def test_without_statistics_every_layer_has_the_same_range(page, no_statistics):
    """No block statistics: the page takes one range (of the first array it gets) for every array of the
    slice. After zooming in from a coarse first view, every layer (several levels) shows the NumPy samples of
    its grid coloured with the page's lo/hi, and the canvas shows the full-resolution slice."""
    server, a = no_statistics
    page.set_viewport_size({"width": 640, "height": 480})
    stats = page.goto(server.url + "api/datasets/bare/stats").json()
    assert stats["robust"] is None and stats["histogram"] is None and stats["known"] == 0
    open_viewer(page, server)
    st = viewer_state(page)
    assert st["range"] == "auto" and st["lo"] is not None and st["hi"] is not None and st["lo"] < st["hi"]
    box = page.locator("#canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2 + 37, box["y"] + box["height"] / 2 - 21)
    for _ in range(12):
        page.mouse.wheel(0, -100)
        page.wait_for_timeout(40)
    settle(page)
    st = viewer_state(page)
    assert st["lo"] is not None and st["hi"] is not None and st["lo"] < st["hi"], st
    assert float(a.min()) <= st["lo"] and st["hi"] <= float(a.max())
    layers = page.evaluate("""() => window.hzioViewer.layers().map(l => ({key: l.key, level: l.level, u0: l.u0,
      v0: l.v0, du: l.du, dv: l.dv, width: l.width, height: l.height, values: Array.from(l.values),
      rgba: Array.from(l.canvas.getContext('2d').getImageData(0, 0, l.width, l.height).data)}))""")
    assert len({layer["level"] for layer in layers}) >= 2, [layer["level"] for layer in layers]
    table = color_table(st["cmap"])
    for layer in layers:
        h, w = layer["height"], layer["width"]
        want = a[layer["v0"]::layer["dv"], layer["u0"]::layer["du"]][:h, :w]
        assert want.shape == (h, w), layer["level"]
        np.testing.assert_array_equal(np.array(layer["values"], np.float32).reshape(h, w), want)
        got = np.array(layer["rgba"], np.int32).reshape(h * w, 4)
        index = table_index(want.reshape(-1), st["lo"], st["hi"])
        ok = np.zeros(len(index), bool)
        for d in (-1, 0, 1):  # a value on the edge between two table entries may round either way
            ok |= np.all(np.abs(got[:, :3] - table[np.clip(index + d, 0, 255)]) <= 1, axis=1)
        assert ok.all(), (f"level {layer['level']}: {np.count_nonzero(~ok)} of {len(ok)} samples are not "
                          f"coloured with the page's range [{st['lo']}, {st['hi']}]")
    assert st["zoom"] >= 2
    check_pixels(page, a)


def robust_range(page, field, time, component):
    """The robust limits the server's statistics give (fetched in the page's origin)."""
    q = urlencode({"field": field, "time": time, "component": component})
    return page.evaluate(f"fetch('/api/datasets/flow/stats?{q}').then(r => r.json()).then(s => s.robust)")


def test_fix_across_time_holds_across_timesteps_only(page, server):
    """With 'fix across time' checked and the range auto, changing the timestep keeps lo/hi; changing the field
    or the component sets them to the new one's robust limits (the server's /stats); unchecked, a timestep
    change sets them too. The canvas shows each slice in the range the page states."""
    open_viewer(page, server, ds="flow")
    mid = SHAPE[0] // 2

    def range_is(want):
        st = viewer_state(page)
        assert st["range"] == "auto" and [st["lo"], st["hi"]] == want, (st["lo"], st["hi"], want)

    def magnitude(t):
        return np.sqrt(np.sum(source(t)[1].astype(np.float64) ** 2, axis=-1)).astype(np.float32)

    temp0 = robust_range(page, "temp", 0, "0")
    range_is(temp0)
    page.check("#fix")
    assert viewer_state(page)["fix"] is True
    page.locator("#time").fill("2")
    settle(page)
    assert viewer_state(page)["time"] == 2
    assert robust_range(page, "temp", 2, "0") != temp0
    range_is(temp0)  # the timestep changed: the range is kept
    check_pixels(page, source(2)[0][mid])
    page.select_option("#field", "vel")
    settle(page)
    assert viewer_state(page)["component"] == "magnitude"
    vel2 = robust_range(page, "vel", 2, "magnitude")
    range_is(vel2)  # another field: its own robust limits
    check_pixels(page, magnitude(2)[mid])
    page.locator("#time").fill("0")
    settle(page)
    assert robust_range(page, "vel", 0, "magnitude") != vel2
    range_is(vel2)
    check_pixels(page, magnitude(0)[mid])
    page.select_option("#component", "0")
    settle(page)
    range_is(robust_range(page, "vel", 0, "0"))  # another component: its own robust limits
    check_pixels(page, source(0)[1][mid, :, :, 0])
    page.uncheck("#fix")
    page.locator("#time").fill("1")
    settle(page)
    range_is(robust_range(page, "vel", 1, "0"))  # not fixed: each timestep's own limits
    check_pixels(page, source(1)[1][mid, :, :, 0])
