// Colour maps of the viewer: each is a list of sRGB control points at even steps from 0 to 1, expanded
// by linear interpolation into a 256-entry table (docs/guide/viewer.md states them, and the browser
// tests colour slices from the same points with NumPy).

export const CONTROL_POINTS = {
  viridis: ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
            "#b5de2b", "#fde725"],
  grey: ["#000000", "#ffffff"],
  coolwarm: ["#3b4cc0", "#dddddd", "#b40426"],
};

export const NAN_RGBA = [0, 0, 0, 0];  // NaN, and values a log scale cannot show: transparent

function hexToRgb(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

// The 256 colours of a map, as a Uint8Array of RGBA.
export function colorTable(name) {
  const points = (CONTROL_POINTS[name] || CONTROL_POINTS.viridis).map(hexToRgb);
  const table = new Uint8Array(256 * 4);
  const last = points.length - 1;
  for (let i = 0; i < 256; i++) {
    const x = (i / 255) * last;
    const k = Math.min(Math.floor(x), last - 1);
    const f = x - k;
    for (let c = 0; c < 3; c++) {
      table[4 * i + c] = Math.round(points[k][c] + f * (points[k + 1][c] - points[k][c]));
    }
    table[4 * i + 3] = 255;
  }
  return table;
}

// Fills `rgba` (width * height * 4 bytes) with the colours of `values` between lo and hi, linear or
// log10 (values <= 0 are transparent on a log scale).
export function colorize(values, rgba, table, lo, hi, log) {
  let a = lo;
  let b = hi;
  if (log) {
    a = Math.log10(lo);
    b = Math.log10(hi);
  }
  const scale = b > a ? 255 / (b - a) : 0;
  for (let i = 0; i < values.length; i++) {
    let v = values[i];
    if (log) v = v > 0 ? Math.log10(v) : NaN;
    const o = 4 * i;
    if (Number.isNaN(v) || !Number.isFinite(a) || !Number.isFinite(b)) {
      rgba[o] = NAN_RGBA[0];
      rgba[o + 1] = NAN_RGBA[1];
      rgba[o + 2] = NAN_RGBA[2];
      rgba[o + 3] = NAN_RGBA[3];
      continue;
    }
    let t = Math.round((v - a) * scale);
    t = t < 0 ? 0 : t > 255 ? 255 : t;
    rgba[o] = table[4 * t];
    rgba[o + 1] = table[4 * t + 1];
    rgba[o + 2] = table[4 * t + 2];
    rgba[o + 3] = 255;
  }
}
