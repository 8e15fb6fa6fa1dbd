"""Demo: a 3-D Gray-Scott reaction-diffusion run written through hzio, then read back coarse and zoomed.

Run from the repository root::

    .venv/bin/python examples/demo.py [--out DIR] [--size N] [--steps K] [--iterations I]

The simulation writes fields ``u`` (zip codec) and ``v`` (raw codec) at timesteps ``0..K-1``. The demo
then reads a coarse level of the last timestep and a full-resolution box around the centre, checks both
against the arrays still in memory (it fails loudly if the I/O is wrong) and saves mid-z PNG slices.
Pillow draws the images with a small colour map defined here.
"""

import argparse
import os
import sys
import time

import hzio
import numpy as np
from PIL import Image

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Diffusion rates, feed and kill: a "spots and growing fronts" regime (Pearson's classification), stable
# with the explicit 7-point scheme at dt = 1 (6 * Du well below 1, or a checkerboard mode grows).
PARAMS = {"du": 0.10, "dv": 0.05, "feed": 0.035, "kill": 0.060}


def seed_state(size, spot_count=5, seed=7):
    """Return the initial ``(u, v)``: ``u = 1, v = 0`` everywhere except a few cubic spots.

    Parameters
    ----------
    size : int
        Samples per axis of the cubic domain.
    spot_count : int
        Spots seeded; the first one sits at the centre so the zoomed box always shows a front.
    seed : int
        Seed of the random spot positions and of the small noise that breaks the symmetry.

    Returns
    -------
    tuple of numpy.ndarray
        Two float32 arrays of shape ``(size, size, size)``.

    Examples
    --------
    >>> u, v = seed_state(16)
    >>> u.shape, float(v.max()) > 0
    ((16, 16, 16), True)
    """
    rng = np.random.default_rng(seed)
    u = np.ones((size,) * 3, np.float32)
    v = np.zeros((size,) * 3, np.float32)
    half = max(1, size // 16)
    centres = [(size // 2,) * 3] + [tuple(rng.integers(half, size - half, 3)) for _ in range(spot_count - 1)]
    for cz, cy, cx in centres:
        spot = (slice(cz - half, cz + half), slice(cy - half, cy + half), slice(cx - half, cx + half))
        u[spot], v[spot] = 0.50, 0.25
    v += rng.uniform(0, 0.01, v.shape).astype(np.float32)
    return u, v


def laplacian(a):
    """Return the 7-point Laplacian of ``a`` with periodic boundaries (same shape and dtype)."""
    out = -6 * a
    for axis in range(a.ndim):
        out += np.roll(a, 1, axis) + np.roll(a, -1, axis)
    return out


def simulate_step(u, v, params=PARAMS):
    """Advance ``(u, v)`` by one explicit Euler step of unit length, in place.

    Parameters
    ----------
    u, v : numpy.ndarray
        Concentrations, float32, same shape.
    params : dict
        ``du``, ``dv`` (diffusion), ``feed`` and ``kill`` rates.

    Examples
    --------
    >>> u, v = seed_state(16)
    >>> simulate_step(u, v); bool(np.isfinite(u).all())
    True
    """
    uvv = u * v * v
    du = params["du"] * laplacian(u) - uvv + params["feed"] * (1 - u)
    dv = params["dv"] * laplacian(v) + uvv - (params["feed"] + params["kill"]) * v
    u += du
    v += dv


def advance(u, v, iterations):
    """Run ``iterations`` calls of :func:`simulate_step` on ``(u, v)`` in place; return the seconds taken."""
    t0 = time.perf_counter()
    for _ in range(iterations):
        simulate_step(u, v)
    return time.perf_counter() - t0


def write_timesteps(path, u, v, steps, iterations, offset=(0, 0, 0), shape=None):
    """Simulate and write ``u`` and ``v`` at timesteps ``0..steps-1`` (``iterations`` steps apart).

    Parameters
    ----------
    path : str
        The .idx file to create (replaced if it exists).
    u, v : numpy.ndarray
        Initial state, advanced in place; on return it holds the last timestep written.
    steps, iterations : int
        Timesteps written and simulation steps between two of them.
    offset : tuple of int
        Where ``u`` and ``v`` sit in the dataset ``[z, y, x]``; a rank of a parallel run writes its part.
    shape : tuple of int, optional
        Dataset shape; defaults to ``u.shape``.

    Returns
    -------
    dict
        ``simulate_seconds``, ``write_seconds`` (hzio calls only, including the durable close) and
        ``bytes`` (samples written).
    """
    fields = [("u", "float32", {"codec": "zip"}), ("v", "float32", {"codec": "raw"})]
    stats = {"simulate_seconds": 0.0, "write_seconds": 0.0, "bytes": 0}
    t0 = time.perf_counter()
    ds = hzio.create(path, shape=shape or u.shape, fields=fields, times=range(steps), overwrite=True)
    stats["write_seconds"] += time.perf_counter() - t0
    with ds:
        for step in range(steps):
            if step:
                stats["simulate_seconds"] += advance(u, v, iterations)
            t0 = time.perf_counter()
            ds.write(u, offset=offset, field="u", time=step)
            ds.write(v, offset=offset, field="v", time=step)
            stats["write_seconds"] += time.perf_counter() - t0
            stats["bytes"] += u.nbytes + v.nbytes
        t0 = time.perf_counter()
        ds.close()  # commits and fsyncs; the with-exit then has nothing left to do
        stats["write_seconds"] += time.perf_counter() - t0
    return stats


def level_stride(extent, count):
    """Return the sample spacing of a level along an axis of ``extent`` samples holding ``count`` of them.

    Levels sample every ``2**k``-th point from 0, so the spacing is the smallest power of two ``s`` with
    ``ceil(extent / s) == count``.

    Examples
    --------
    >>> level_stride(64, 16), level_stride(48, 12), level_stride(5, 1)
    (4, 4, 8)
    """
    stride = 1
    while -(-extent // stride) > count:
        stride *= 2
    return stride


def read_views(path, field, time_, coarse_drop, box):
    """Read a coarse level of the whole domain and a full-resolution box of one field and timestep.

    Returns
    -------
    dict
        ``coarse`` and ``zoom`` arrays, ``coarse_level``, ``max_level`` and the read reports.
    """
    with hzio.open(path) as ds:
        level = max(0, ds.max_level - coarse_drop)
        coarse = ds.read(level=level, field=field, time=time_)
        coarse_report = ds.last_read_report
        zoom = ds.read(box=box, field=field, time=time_)
        return {"coarse": coarse, "zoom": zoom, "coarse_level": level, "max_level": ds.max_level,
                "coarse_report": coarse_report, "zoom_report": ds.last_read_report}


def check_views(views, truth, box):
    """Raise AssertionError unless the views equal the in-memory array; return the coarse level's strides.

    The zoom must equal ``truth`` inside ``box``; the coarse level must equal ``truth`` subsampled with
    the spacing :func:`level_stride` infers from its shape. Raised explicitly so ``python -O`` keeps it.
    """
    (z0, y0, x0), (z1, y1, x1) = box
    if not np.array_equal(views["zoom"], truth[z0:z1, y0:y1, x0:x1]):
        raise AssertionError(f"the full-resolution read of box {box} differs from the simulation")
    strides = [level_stride(n, c) for n, c in zip(truth.shape, views["coarse"].shape)]
    if not np.array_equal(views["coarse"], truth[::strides[0], ::strides[1], ::strides[2]]):
        raise AssertionError(f"the level {views['coarse_level']} read differs from the simulation every {strides}")
    return strides


# Colour map control points: value in [0, 1] -> RGB (dark blue through teal and yellow to white).
COLORMAP = np.array([[0.00, 0, 0, 0], [0.25, 20, 40, 120], [0.50, 20, 150, 150], [0.75, 240, 210, 40],
                     [1.00, 255, 255, 255]])


def apply_colormap(plane, value_range):
    """Map a 2-D array to RGB uint8 with :data:`COLORMAP`, scaling ``value_range`` to [0, 1]."""
    lo, hi = value_range
    t = np.clip((plane - lo) / ((hi - lo) or 1.0), 0.0, 1.0)
    rgb = [np.interp(t, COLORMAP[:, 0], COLORMAP[:, c]) for c in (1, 2, 3)]
    return np.stack(rgb, axis=-1).astype(np.uint8)


def save_slice_png(plane, path, scale=1, value_range=None):
    """Save a 2-D array as a colour PNG, each sample drawn as a ``scale`` x ``scale`` square.

    Parameters
    ----------
    plane : numpy.ndarray
        2-D ``[y, x]`` samples; row 0 is drawn at the top.
    path : str
        Output .png file.
    scale : int
        Nearest-neighbour upscaling factor, so coarse levels stay visibly blocky.
    value_range : tuple of float, optional
        Values mapped to the ends of the colour map; defaults to the plane's own minimum and maximum.

    Examples
    --------
    >>> import tempfile
    >>> save_slice_png(np.eye(4), os.path.join(tempfile.mkdtemp(), "eye.png"), scale=8)
    """
    value_range = value_range or (float(plane.min()), float(plane.max()))
    rgb = apply_colormap(np.asarray(plane, np.float64), value_range)
    rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
    Image.fromarray(rgb).save(path)


def data_bytes_on_disk(path):
    """Bytes of the .idx file plus every file in its data folder (named after it)."""
    total = os.path.getsize(path)
    for root, _, names in os.walk(os.path.splitext(path)[0]):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    return total


def save_pictures(out_dir, views, field, value_range):
    """Save mid-z slices of the coarse and zoomed views as PNGs about 384 pixels wide; return the paths."""
    paths = []
    for name in ("coarse", "zoom"):
        arr = views[name]
        plane = arr[arr.shape[0] // 2]
        scale = max(1, 384 // max(plane.shape))
        path = os.path.join(out_dir, f"{field}_{name}.png")
        save_slice_png(plane, path, scale=scale, value_range=value_range)
        paths.append((path, plane.shape, scale))
    return paths


def parse_args(argv):
    """Parse the command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "demo_output"), help="output folder")
    parser.add_argument("--size", type=int, default=64, help="samples per axis (default 64)")
    parser.add_argument("--steps", type=int, default=6, help="timesteps written (default 6)")
    parser.add_argument("--iterations", type=int, default=200, help="simulation steps between timesteps")
    args = parser.parse_args(argv)
    if args.size < 8 or args.steps < 1 or args.iterations < 0:
        parser.error("needs --size >= 8, --steps >= 1 and --iterations >= 0")
    return args


def main(argv=None):
    """Run the simulation, write it, read it back, check it and draw it. Returns 0 on success."""
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "gray_scott.idx")
    u, v = seed_state(args.size)
    stats = write_timesteps(path, u, v, args.steps, args.iterations)
    mib = stats["bytes"] / 2**20
    print(f"wrote {args.steps} timesteps x fields u (zip), v (raw) of {u.shape} float32 to {path}")
    print(f"  {mib:.1f} MiB of samples, {data_bytes_on_disk(path) / 2**20:.1f} MiB on disk, "
          f"hzio {stats['write_seconds']:.2f} s ({mib / stats['write_seconds']:.0f} MiB/s), "
          f"simulation {stats['simulate_seconds']:.2f} s")

    last, n = args.steps - 1, args.size
    box = ((n // 4,) * 3, (n - n // 4,) * 3)
    for field, truth in (("u", u), ("v", v)):
        views = read_views(path, field, last, coarse_drop=6, box=box)
        strides = check_views(views, truth, box)
        print(f"read field {field} at timestep {last}: level {views['coarse_level']} of {views['max_level']} -> "
              f"{views['coarse'].shape} (every {strides} samples, {views['coarse_report']['bytes_read']} bytes "
              f"read); box {box} -> {views['zoom'].shape} ({views['zoom_report']['bytes_read']} bytes read)")
        print("  both equal the simulation arrays in memory")
        for png, shape, scale in save_pictures(args.out, views, field, (float(truth.min()), float(truth.max()))):
            print(f"  saved {png} (mid-z slice {shape}, {scale}x nearest-neighbour)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
