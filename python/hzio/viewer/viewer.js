// The hzio viewer: 2-D slices of IDX datasets served by `hzio serve`, coloured in the browser.
//
// The server sends arrays (see hzio/_serve.py for the binary form); the page keeps each array it
// received as a layer (its level, box and values) and draws the layers of the current slice from
// coarse to fine, so that finer data already shown is never covered by coarser data. A view change
// asks for a coarse level (fast) and for the level that matches the screen's pixels, cancelling the
// requests of views that are gone. The view is kept in the URL's hash.
//
// Tests and benchmarks read `window.hzioViewer` and `document.body.dataset.idle` ("1" once the view is
// drawn at the level it asked for and nothing is loading).

import { CONTROL_POINTS, colorTable, colorize } from "./colormaps.js";

const $ = (id) => document.getElementById(id);
const AXES = { z: [0, 1, 2], y: [1, 0, 2], x: [2, 0, 1] }; // plane, rows, columns as [z, y, x] indices
const AXIS_NAMES = ["z", "y", "x"];
const COARSE_FACTOR = 8; // the first paint: about 1/8 of the screen's resolution per axis
const MARGIN = 0.1; // share of the view read beyond each edge, so that small pans need no request
const MAX_LAYERS = 16;
const POLL_MS = 2000; // how often the page asks whether a dataset gained timesteps
const PLAY_MS = 400; // the least time a timestep stays on screen while playing
const DEBOUNCE_MS = 60;
const MAX_SAMPLES = 4096 * 4096; // the most a slice request may hold (the server's limit)

const state = {
  ds: null, field: null, component: null, axis: "z", index: null, time: null,
  cmap: "viridis", scale: "linear", lo: null, hi: null, range: "auto", fix: false, follow: false,
  cu: null, cv: null, zoom: null, // view centre (column, row coordinates) and CSS pixels per sample
};
let datasets = [];
let info = null;
let layers = []; // {key, level, seq, u0, v0, du, dv, width, height, plane, values, canvas}
let seq = 0;
let drawnKey = null; // the slice whose layers are on screen (kept until the next slice has one)
let controllers = new Set();
let generation = 0;
let table = colorTable(state.cmap);
let stats = null;
let statsKey = null;
let playing = false;
let lastAdvance = 0;
let fetchTimer = null;
let hashTimer = null;
const canvas = $("canvas");
const ctx = canvas.getContext("2d");
const hz = (window.hzioViewer = { state, layers: () => layers, timings: {}, requests: 0, aborted: 0, errors: [],
  centreLevels: [] });

// ------------------------------------------------------------------------------------------ helpers
function setIdle(idle) {
  document.body.dataset.idle = idle ? "1" : "0";
}

function fieldInfo() {
  return info.fields.find((f) => f.name === state.field) || info.fields[0];
}

function axes() {
  return AXES[state.axis];
}

function sliceKey() {
  return [state.ds, state.field, state.component, state.time, state.axis, state.index].join("|");
}

function devicePixels() {
  return window.devicePixelRatio || 1;
}

function resizeCanvas() {
  const dpr = devicePixels();
  const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
  const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
}

function extent() {
  const [, r, c] = axes();
  return { u0: info.origin[c], u1: info.origin[c] + info.shape[c], v0: info.origin[r], v1: info.origin[r] + info.shape[r] };
}

// CSS pixels per sample that fit the whole slice in the canvas.
function fitZoom() {
  const e = extent();
  return Math.min(canvas.clientWidth / (e.u1 - e.u0), canvas.clientHeight / (e.v1 - e.v0));
}

// The zoom bounds of the wheel: from an eighth of the fitted view to 256 pixels per sample.
function clampZoom(zoom) {
  return Math.min(Math.max(zoom, fitZoom() / 8), 256);
}

function fitView() {
  const e = extent();
  state.zoom = fitZoom();
  state.cu = (e.u0 + e.u1) / 2;
  state.cv = (e.v0 + e.v1) / 2;
}

function deviceZoom() {
  return state.zoom * devicePixels();
}

function visibleBox() {
  const k = deviceZoom();
  const hw = canvas.width / (2 * k);
  const hh = canvas.height / (2 * k);
  return { u0: state.cu - hw, u1: state.cu + hw, v0: state.cv - hh, v1: state.cv + hh };
}

function samplesAt(level, box) {
  const [, r, c] = axes();
  const s = info.level_spacing[level];
  return Math.ceil((box.u1 - box.u0) / s[c]) * Math.ceil((box.v1 - box.v0) / s[r]);
}

// The level to read `box` at for a spacing of at most `spacing` samples per screen pixel: the coarsest
// whose spacing in the slice's plane is that fine; once that is full resolution in the plane, the
// coarsest that is full resolution along the slice's axis too, so that the plane shown is the one
// asked for, not a neighbour that a coarser level holds. Never more samples than a request may hold.
function levelFor(spacing, box) {
  const [, r, c] = axes();
  const finest = (ok) => {
    for (let level = 0; level <= info.max_level; level++) if (ok(info.level_spacing[level])) return level;
    return info.max_level;
  };
  let level = finest((s) => Math.max(s[r], s[c]) <= spacing);
  const s = info.level_spacing[level];
  if (Math.max(s[r], s[c]) === 1) level = Math.max(level, finest((t) => Math.max(...t) <= spacing));
  while (level > 0 && samplesAt(level, box) > MAX_SAMPLES) level--;
  return level;
}

function covers(layer, box) {
  return layer.u0 <= box.u0 && layer.v0 <= box.v0 &&
    layer.u0 + layer.width * layer.du >= box.u1 && layer.v0 + layer.height * layer.dv >= box.v1;
}

function clipToSlice(box) {
  const e = extent();
  return {
    u0: Math.max(e.u0, Math.floor(box.u0)), u1: Math.min(e.u1, Math.ceil(box.u1)),
    v0: Math.max(e.v0, Math.floor(box.v0)), v1: Math.min(e.v1, Math.ceil(box.v1)),
  };
}

function effectiveRange() {
  let lo = Math.min(state.lo, state.hi);
  const hi = Math.max(state.lo, state.hi);
  if (state.scale === "log" && !(lo > 0) && hi > 0) lo = hi * 1e-6;
  return [lo, hi];
}

// ------------------------------------------------------------------------------------------ drawing
function colourLayer(layer) {
  if (state.lo === null || state.hi === null) {
    // No range yet (the statistics are late, or the blocks have none): the first array's own range,
    // kept for every array of the slice so that they match.
    [state.lo, state.hi] = ownRange(layer.values);
    showRange();
    drawHistogram();
    for (const l of layers) if (l !== layer) colourLayer(l);
  }
  const [lo, hi] = effectiveRange();
  const image = new ImageData(layer.width, layer.height);
  colorize(layer.values, image.data, table, lo, hi, state.scale === "log");
  layer.canvas.getContext("2d").putImageData(image, 0, 0);
}

// The finite range of an array, for a first paint that comes before the block statistics.
function ownRange(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(lo <= hi)) return [0, 1];
  if (state.scale === "log" && !(lo > 0)) lo = hi * 1e-6;
  return lo === hi ? [lo, lo + 1] : [lo, hi];
}

function draw() {
  resizeCanvas();
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (!info) return;
  ctx.imageSmoothingEnabled = false;
  const key = sliceKey();
  if (layers.some((l) => l.key === key)) drawnKey = key;
  const shown = layers.filter((l) => l.key === drawnKey).sort((a, b) => a.level - b.level || a.seq - b.seq);
  const k = deviceZoom();
  for (const l of shown) {
    const x = (l.u0 - state.cu) * k + canvas.width / 2;
    const y = (l.v0 - state.cv) * k + canvas.height / 2;
    ctx.drawImage(l.canvas, x, y, l.width * l.du * k, l.height * l.dv * k);
  }
  // The level drawn at the view's centre, kept for the tests: it never goes down while the slice stays.
  let centre = null;
  for (const l of shown) if (covers(l, { u0: state.cu, u1: state.cu, v0: state.cv, v1: state.cv })) centre = l.level;
  hz.centreLevels.push({ key: drawnKey, level: centre });
  if (hz.centreLevels.length > 1000) hz.centreLevels.splice(0, 500);
  const finest = shown.length ? shown[shown.length - 1].level : null;
  $("status").textContent = finest === null ? "loading…" : `level ${finest} of ${info.max_level}`;
}

function drawHistogram() {
  const h = $("histogram");
  const g = h.getContext("2d");
  g.clearRect(0, 0, h.width, h.height);
  if (!stats || !stats.histogram) return;
  const { edges, counts } = stats.histogram;
  const top = Math.max(...counts.map((c) => Math.log1p(c)), 1);
  const x = (v) => ((v - edges[0]) / (edges[edges.length - 1] - edges[0] || 1)) * h.width;
  g.fillStyle = "#7aa6d8";
  for (let i = 0; i < counts.length; i++) {
    const bar = (Math.log1p(counts[i]) / top) * (h.height - 4);
    const left = Math.floor(x(edges[i]));
    g.fillRect(left, h.height - bar, Math.max(1, Math.ceil(x(edges[i + 1])) - left), bar);
  }
  g.fillStyle = "#f0c040";
  if (state.lo !== null && state.hi !== null) {
    for (const v of effectiveRange()) g.fillRect(Math.round(x(v)), 0, 1, h.height);
  }
}

function recolour() {
  for (const l of layers) colourLayer(l);
  draw();
  drawHistogram();
}

// ------------------------------------------------------------------------------------------ loading
function sliceUrl(level, box) {
  const q = new URLSearchParams({
    field: state.field, time: state.time, axis: state.axis, index: state.index, level,
    u0: box.u0, u1: box.u1, v0: box.v0, v1: box.v1, component: state.component,
  });
  return `/api/datasets/${encodeURIComponent(state.ds)}/slice?${q}`;
}

async function fetchSlice(level, box, gen, key) {
  const controller = new AbortController();
  controllers.add(controller);
  hz.requests++;
  try {
    const response = await fetch(sliceUrl(level, box), { signal: controller.signal });
    const buffer = await response.arrayBuffer();
    if (!response.ok) {
      const message = JSON.parse(new TextDecoder().decode(buffer)).error || response.statusText;
      throw new Error(message);
    }
    if (gen !== generation && key !== sliceKey()) return; // a slice that is gone
    const n = new DataView(buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
    const count = header.width * header.height;
    const Values = header.dtype === "float64" ? Float64Array : Float32Array;
    const values = new Values(buffer, 4 + n, count);
    const layer = { key, level: header.level, seq: seq++, u0: header.u0, v0: header.v0, du: header.du, dv: header.dv,
      width: header.width, height: header.height, plane: header.plane, values };
    if (count === 0) return;
    layer.canvas = document.createElement("canvas");
    layer.canvas.width = header.width;
    layer.canvas.height = header.height;
    colourLayer(layer);
    layers.push(layer);
    pruneLayers();
    if (hz.timings.firstPaint === undefined) hz.timings.firstPaint = performance.now();
    draw();
  } catch (e) {
    if (e.name === "AbortError") {
      hz.aborted++;
    } else if (gen === generation) { // errors of views that are gone are not news
      hz.errors.push(String(e.message || e));
      $("status").textContent = `error: ${e.message || e}`;
    }
  } finally {
    controllers.delete(controller);
  }
}

// Keeps the layers of the slice on screen (and of the one asked for), finest first, up to MAX_LAYERS;
// drops layers that a finer one of the same slice covers entirely.
function pruneLayers() {
  const key = sliceKey();
  if (layers.some((l) => l.key === key)) drawnKey = key;
  layers = layers.filter((l) => l.key === key || l.key === drawnKey);
  layers = layers.filter((l) => !layers.some((m) => m !== l && m.key === l.key && m.level > l.level &&
    covers(m, { u0: l.u0, v0: l.v0, u1: l.u0 + l.width * l.du, v1: l.v0 + l.height * l.dv })));
  layers.sort((a, b) => b.level - a.level || b.seq - a.seq);
  layers = layers.slice(0, MAX_LAYERS);
}

function scheduleLoad(delay = DEBOUNCE_MS) {
  setIdle(false);
  clearTimeout(fetchTimer);
  fetchTimer = setTimeout(load, delay);
}

async function load() {
  if (!info) return;
  if (state.time === null) { // a dataset without timesteps yet: the poll offers them when they come
    $("status").textContent = "no timestep yet";
    setIdle(true);
    return;
  }
  for (const c of controllers) c.abort();
  const gen = ++generation;
  const key = sliceKey();
  const view = visibleBox();
  const k = deviceZoom();
  const mu = (view.u1 - view.u0) * MARGIN;
  const mv = (view.v1 - view.v0) * MARGIN;
  const want = clipToSlice({ u0: view.u0 - mu, u1: view.u1 + mu, v0: view.v0 - mv, v1: view.v1 + mv });
  const target = levelFor(Math.max(1, 1 / k), want);
  const coarse = Math.min(target, levelFor(Math.max(1, COARSE_FACTOR / k), want));
  const needed = clipToSlice(view);
  const have = (level) => layers.some((l) => l.key === key && l.level >= level && covers(l, needed));
  const loads = [];
  if (!playing && coarse < target && !layers.some((l) => l.key === key && covers(l, needed))) {
    loads.push(fetchSlice(coarse, want, gen, key));
  }
  if (!have(target)) loads.push(fetchSlice(target, want, gen, key));
  await Promise.all(loads);
  await statsLoaded; // the colour range may come from the statistics
  if (gen === generation) {
    hz.timings.refined = performance.now();
    hz.target = target;
    setIdle(true);
  }
}

let statsBase = null; // dataset, field and component of the statistics shown: "fix" holds across time only

async function loadStats() {
  const key = [state.ds, state.field, state.component, state.time].join("|");
  if (key === statsKey) return;
  statsKey = key;
  const base = [state.ds, state.field, state.component].join("|");
  const timeOnly = base === statsBase;
  statsBase = base;
  const q = new URLSearchParams({ field: state.field, time: state.time, component: state.component });
  try {
    const response = await fetch(`/api/datasets/${encodeURIComponent(state.ds)}/stats?${q}`);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    if (statsKey !== key) return;
    stats = body;
  } catch (e) {
    stats = null;
    hz.errors.push(String(e.message || e));
  }
  const fmt = (v) => (v === null || v === undefined ? "?" : Number(v).toPrecision(6));
  $("stats").textContent = stats && stats.min !== null
    ? `min ${fmt(stats.min)}\nmax ${fmt(stats.max)}\nrobust ${fmt(stats.robust[0])} … ${fmt(stats.robust[1])}` +
      (stats.known < 1 ? `\nstatistics of ${(100 * stats.known).toFixed(0)} % of samples` : "")
    : "no block statistics (hzio index adds them)";
  if (state.range === "auto" && !(state.fix && timeOnly && state.lo !== null)) applyRobust();
  else drawHistogram();
}

// The robust limits of the statistics, or, without them, no range: the next array sets it.
function applyRobust() {
  if (stats && stats.robust) {
    [state.lo, state.hi] = stats.robust;
    if (!(state.hi > state.lo)) state.hi = state.lo + Math.max(1, Math.abs(state.lo) * 1e-6);
  } else {
    state.lo = state.hi = null;
    const shown = layers.find((l) => l.key === sliceKey());
    if (shown) [state.lo, state.hi] = ownRange(shown.values);
  }
  showRange();
  recolour();
  saveHash();
}

function showRange() {
  $("lo").value = state.lo === null ? "" : Number(state.lo.toPrecision(7));
  $("hi").value = state.hi === null ? "" : Number(state.hi.toPrecision(7));
}

// ------------------------------------------------------------------------------------------ controls
function fillSelect(select, values, current) {
  select.replaceChildren(...values.map(([value, text]) => new Option(text, value)));
  select.value = current;
}

let statsLoaded = Promise.resolve();

function sliceChanged() {
  saveHash();
  statsLoaded = loadStats();
  draw();
  scheduleLoad(0);
}

function updateControls() {
  const f = fieldInfo();
  fillSelect($("dataset"), datasets.map((d) => [d.name, d.name]), state.ds);
  fillSelect($("field"), info.fields.map((x) => [x.name, `${x.name} (${x.dtype})`]), state.field);
  $("component-label").hidden = f.components === 1;
  if (f.components > 1) {
    const options = [["magnitude", "magnitude"]];
    for (let c = 0; c < f.components; c++) options.push([String(c), String(c)]);
    fillSelect($("component"), options, state.component);
  }
  $("axis").value = state.axis;
  $("axis").disabled = info.ndim < 3;
  const [p] = axes();
  $("index").min = info.origin[p];
  $("index").max = info.origin[p] + info.shape[p] - 1;
  $("index").value = state.index;
  $("index-out").textContent = state.index;
  $("time").min = 0;
  $("time").max = Math.max(0, info.times.length - 1);
  $("time").value = Math.max(0, info.times.indexOf(state.time));
  $("time-out").textContent = state.time === null ? "none" : state.time;
  $("cmap").value = state.cmap;
  $("scale").value = state.scale;
  $("fix").checked = state.fix;
  $("follow").checked = state.follow;
  $("play").textContent = playing ? "pause" : "play";
}

function middleIndex() {
  const [p] = axes();
  return info.origin[p] + Math.floor(info.shape[p] / 2);
}

let opening = 0; // the latest openDataset: an earlier one that answers late changes nothing

// Opens a dataset's description and shows it, keeping what of the view still applies (and the view
// itself with keepView). Errors go to the status line; the page stays on what it showed.
async function openDataset(name, keepView) {
  const mine = ++opening;
  let fresh;
  try {
    const response = await fetch(`/api/datasets/${encodeURIComponent(name)}`);
    fresh = await response.json();
    if (!response.ok || fresh.error) throw new Error(fresh.error || response.statusText);
  } catch (e) {
    if (mine === opening) {
      hz.errors.push(String(e.message || e));
      $("status").textContent = `error: ${e.message || e}`;
      setIdle(true);
    }
    return;
  }
  if (mine !== opening) return;
  info = fresh;
  state.ds = name;
  if (!info.fields.some((f) => f.name === state.field)) state.field = info.fields[0].name;
  const n = fieldInfo().components;
  if (n === 1) state.component = "0";
  else if (state.component === null ||
           (state.component !== "magnitude" && !(Number(state.component) >= 0 && Number(state.component) < n))) {
    state.component = "magnitude";
  }
  if (!Object.hasOwn(AXES, state.axis) || info.ndim < 3) state.axis = "z";
  const [p] = axes();
  if (state.index !== null) state.index = Math.round(state.index);
  if (state.index === null || state.index < info.origin[p] || state.index >= info.origin[p] + info.shape[p]) {
    state.index = middleIndex();
  }
  if (!info.times.includes(state.time)) state.time = info.times.length ? info.times[0] : null;
  resizeCanvas();
  if (!keepView || !(state.zoom > 0) || !Number.isFinite(state.cu) || !Number.isFinite(state.cv)) fitView();
  state.zoom = clampZoom(state.zoom); // as the wheel allows
  layers = [];
  statsKey = null;
  updateControls();
  sliceChanged();
}

function bindControls() {
  $("dataset").onchange = (e) => { state.index = null; state.zoom = null; openDataset(e.target.value, false); };
  $("field").onchange = (e) => {
    state.field = e.target.value;
    state.component = fieldInfo().components > 1 ? "magnitude" : "0"; // as a first open shows it
    state.range = "auto";
    updateControls();
    sliceChanged();
  };
  $("component").onchange = (e) => { state.component = e.target.value; state.range = "auto"; sliceChanged(); };
  $("axis").onchange = (e) => {
    state.axis = e.target.value;
    state.index = middleIndex();
    fitView();
    updateControls();
    sliceChanged();
  };
  $("index").oninput = (e) => {
    state.index = Number(e.target.value);
    $("index-out").textContent = state.index;
    sliceChanged();
  };
  $("time").oninput = (e) => { setTime(info.times[Number(e.target.value)]); };
  $("play").onclick = () => { playing = !playing; lastAdvance = 0; updateControls(); };
  $("follow").onchange = (e) => { state.follow = e.target.checked; saveHash(); poll(); };
  $("cmap").onchange = (e) => { state.cmap = e.target.value; table = colorTable(state.cmap); recolour(); saveHash(); };
  $("scale").onchange = (e) => { state.scale = e.target.value; recolour(); saveHash(); };
  const manual = () => {
    const lo = parseFloat($("lo").value);
    const hi = parseFloat($("hi").value);
    if (Number.isFinite(lo) && Number.isFinite(hi)) {
      state.lo = lo;
      state.hi = hi;
      state.range = "manual";
      recolour();
      saveHash();
    }
  };
  $("lo").onchange = manual;
  $("hi").onchange = manual;
  $("auto").onclick = () => { state.range = "auto"; applyRobust(); };
  $("fix").onchange = (e) => { state.fix = e.target.checked; saveHash(); };
  $("fit").onclick = () => { fitView(); draw(); saveHash(); scheduleLoad(0); };

  let drag = null;
  canvas.onpointerdown = (e) => { drag = { x: e.clientX, y: e.clientY }; canvas.setPointerCapture(e.pointerId); };
  canvas.onpointerup = () => { drag = null; };
  canvas.onpointermove = (e) => {
    if (drag) {
      state.cu -= (e.clientX - drag.x) / state.zoom;
      state.cv -= (e.clientY - drag.y) / state.zoom;
      drag = { x: e.clientX, y: e.clientY };
      draw();
      saveHash();
      scheduleLoad();
    }
    readout(e);
  };
  canvas.onwheel = (e) => {
    e.preventDefault();
    zoomAt(e.offsetX, e.offsetY, e.deltaY < 0 ? 1.25 : 0.8);
  };
  window.onresize = () => { draw(); scheduleLoad(); };
  window.onhashchange = () => { if (readHash()) openDataset(state.ds, true); };
  window.onunhandledrejection = (e) => hz.errors.push(String(e.reason && e.reason.message || e.reason));
}

// Zooms by `factor` keeping the sample under the CSS pixel (x, y) in place.
function zoomAt(x, y, factor) {
  const rect = canvas.getBoundingClientRect();
  const u = state.cu + (x - rect.width / 2) / state.zoom;
  const v = state.cv + (y - rect.height / 2) / state.zoom;
  state.zoom = clampZoom(state.zoom * factor);
  state.cu = u - (x - rect.width / 2) / state.zoom;
  state.cv = v - (y - rect.height / 2) / state.zoom;
  draw();
  saveHash();
  scheduleLoad();
}
hz.zoomAt = zoomAt;

// The value and coordinates under the pointer, from the finest layer on screen that holds them.
function readout(e) {
  if (!info) return;
  const rect = canvas.getBoundingClientRect();
  const u = state.cu + (e.clientX - rect.left - rect.width / 2) / state.zoom;
  const v = state.cv + (e.clientY - rect.top - rect.height / 2) / state.zoom;
  hz.lastReadout = null;
  for (const l of layers) { // finest first
    if (l.key !== drawnKey) continue;
    const i = Math.floor((u - l.u0) / l.du);
    const j = Math.floor((v - l.v0) / l.dv);
    if (i < 0 || j < 0 || i >= l.width || j >= l.height) continue;
    const [p, r, c] = axes();
    const point = [0, 0, 0];
    point[p] = l.plane;
    point[r] = l.v0 + j * l.dv;
    point[c] = l.u0 + i * l.du;
    const value = l.values[j * l.width + i];
    const named = AXIS_NAMES.map((n, a) => `${n}=${point[a]}`).slice(3 - info.ndim).reverse().join(" ");
    $("readout").textContent = `${named}\nvalue ${Number(value).toPrecision(7)}\nlevel ${l.level}`;
    hz.lastReadout = { point, value, level: l.level };
    return;
  }
  $("readout").textContent = "\u00a0";
}

function setTime(t) {
  if (t === undefined || t === state.time) return;
  state.time = t;
  $("time").value = info.times.indexOf(t);
  $("time-out").textContent = t;
  sliceChanged();
}

// ------------------------------------------------------------------------------------------ live datasets and play
let polling = false;

async function poll() {
  if (!state.ds || polling) return;
  polling = true;
  try {
    const response = await fetch(`/api/datasets/${encodeURIComponent(state.ds)}`);
    if (!response.ok) return;
    const fresh = await response.json();
    if (fresh.name !== state.ds) return;
    if (JSON.stringify(fresh.times) !== JSON.stringify(info.times)) {
      info = fresh;
      const hadNone = state.time === null;
      if (hadNone && info.times.length) state.time = info.times[0];
      updateControls();
      if (state.follow && info.times.length) setTime(info.times[info.times.length - 1]);
      else if (hadNone) sliceChanged();
    }
  } catch (e) {
    hz.errors.push(String(e.message || e));
  } finally {
    polling = false;
  }
}

function tick() {
  if (playing && info && info.times.length > 1 && document.body.dataset.idle === "1" &&
      performance.now() - lastAdvance >= PLAY_MS) {
    lastAdvance = performance.now();
    const i = info.times.indexOf(state.time);
    setTime(info.times[(i + 1) % info.times.length]);
  }
}

// ------------------------------------------------------------------------------------------ URL state
const HASH_KEYS = ["ds", "field", "component", "axis", "index", "time", "cmap", "scale", "lo", "hi", "range", "fix",
  "follow", "cu", "cv", "zoom"];

function saveHash() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => {
    const q = new URLSearchParams();
    for (const k of HASH_KEYS) {
      let v = state[k];
      if (v === null || v === undefined) continue;
      if (typeof v === "boolean") v = v ? "1" : "0";
      if (typeof v === "number" && !Number.isInteger(v)) v = Number(v.toPrecision(8));
      q.set(k, v);
    }
    history.replaceState(null, "", `#${q}`);
  }, 100);
}

// Reads the view from the hash; true when it names a dataset.
function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  if (!q.has("ds") || !datasets.some((d) => d.name === q.get("ds"))) return false; // nothing of it applies
  const num = (k) => (q.get(k) !== "" && Number.isFinite(Number(q.get(k))) ? Number(q.get(k)) : null);
  const next = { ...state };
  for (const k of ["ds", "field", "component", "axis", "cmap", "scale", "range"]) if (q.has(k)) next[k] = q.get(k);
  for (const k of ["index", "time", "lo", "hi", "cu", "cv", "zoom"]) if (q.has(k)) next[k] = num(k);
  for (const k of ["fix", "follow"]) if (q.has(k)) next[k] = q.get(k) === "1";
  if (!Object.hasOwn(CONTROL_POINTS, next.cmap)) next.cmap = "viridis";
  if (!["linear", "log"].includes(next.scale)) next.scale = "linear";
  if (!["auto", "manual"].includes(next.range) || next.lo === null || next.hi === null) {
    next.range = "auto";
    next.lo = next.hi = null;
  }
  if (!Object.hasOwn(AXES, next.axis)) next.axis = "z";
  Object.assign(state, next); // openDataset checks the rest against the dataset
  table = colorTable(state.cmap);
  return true;
}

// ------------------------------------------------------------------------------------------ start
async function main() {
  setIdle(false);
  bindControls();
  const response = await fetch("/api/datasets");
  const listed = await response.json();
  datasets = listed.filter((d) => !d.error); // one that does not answer is left out
  for (const d of listed) if (d.error) hz.errors.push(`${d.name}: ${d.error}`);
  if (!datasets.length) {
    $("status").textContent = "no dataset answers";
    setIdle(true);
    return;
  }
  const fromHash = readHash();
  if (!fromHash) state.ds = datasets[0].name;
  if (state.range === "manual" && state.lo !== null && state.hi !== null) showRange();
  await openDataset(state.ds, fromHash);
  setInterval(poll, POLL_MS);
  setInterval(tick, 50);
}

main().catch((e) => {
  hz.errors.push(String(e.message || e));
  $("status").textContent = `error: ${e.message || e}`;
});
