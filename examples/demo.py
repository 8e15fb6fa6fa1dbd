"""Demo: a 3-D Gray-Scott reaction-diffusion run with a hot spot, written through hzio, then read back coarse
and zoomed, and queried for the hot spot.

Run from the repository root::

    .venv/bin/python examples/demo.py [--out DIR] [--size N] [--steps K] [--iterations I]

The simulation writes fields ``u`` (zip codec), ``v`` and ``temperature`` (raw codec) at timesteps
``0..K-1``. ``temperature`` is heat diffusing from a small heater into a medium cooled towards 300 K, so
its hot spot stays small. The demo then reads a coarse level of the last timestep and a full-resolution
box around the centre, checks both against the arrays still in memory (it fails loudly if the I/O is
wrong) and draws them (``u_views.png``, ``v_views.png``). Last, a value-range query finds the hot spot:
each block's minimum and maximum rule out most blocks unread; it is checked against NumPy and drawn with
the blocks it read (``temperature_query.png``). Figures are drawn by ``demo_figures.py`` (matplotlib).
"""

import argparse
import os
import sys
import time

import hzio
import numpy as np
from demo_figures import save_query_figure, save_views_figure

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Diffusion rates, feed and kill: a "spots and growing fronts" regime (Pearson's classification), stable
# with the explicit 7-point scheme at dt = 1 (6 * Du well below 1, or a checkerboard mode grows).
PARAMS = {"du": 0.10, "dv": 0.05, "feed": 0.035, "kill": 0.060}
# The heater: centre as fractions of the domain [z, y, x], radius as a fraction of its edge, kelvin added
# per step at its centre; heat diffuses (diffusivity, stable below 1/6) and relaxes towards the ambient
# temperature (cooling per step): the hot spot stays within about sqrt(diffusivity / cooling) samples.
HEAT = {"centre": (0.30, 0.62, 0.70), "radius": 0.03, "power_k": 70.0, "diffusivity": 0.10, "cooling": 0.01,
        "ambient_k": 300.0}
# Codec of each field; raw blocks let a query read only the blocks it needs, without decoding.
FIELDS = [("u", "float32", {"codec": "zip"}), ("v", "float32", {"codec": "raw"}),
          ("temperature", "float32", {"codec": "raw"})]
BLOCK_COUNT_BITS = 6  # 2^6 = 64 blocks whatever the size, so that a query has blocks to skip


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


def heater(size, heat=HEAT):
    """Return the initial temperature (ambient everywhere) and the heat the heater adds per step, in kelvin.

    Examples
    --------
    >>> temperature, source = heater(32)
    >>> float(temperature.max()), bool(source.max() > 0), bool((source > 1).mean() < 0.01)
    (300.0, True, True)
    """
    axis = np.arange(size, dtype=np.float32)
    cz, cy, cx = (np.float32(f * size) for f in heat["centre"])
    r2 = (axis[:, None, None] - cz) ** 2 + (axis[None, :, None] - cy) ** 2 + (axis[None, None, :] - cx) ** 2
    width = max(1.0, heat["radius"] * size)
    source = (heat["power_k"] * np.exp(-r2 / np.float32(2 * width**2))).astype(np.float32)
    return np.full((size,) * 3, heat["ambient_k"], np.float32), source


def laplacian(a):
    """Return the 7-point Laplacian of ``a`` with periodic boundaries (same shape and dtype)."""
    out = -6 * a
    for axis in range(a.ndim):
        out += np.roll(a, 1, axis) + np.roll(a, -1, axis)
    return out


def simulate_step(u, v, params=PARAMS, lap=laplacian):
    """Advance ``(u, v)`` by one explicit Euler step of unit length, in place.

    Parameters
    ----------
    u, v : numpy.ndarray
        Concentrations, float32, same shape.
    params : dict
        ``du``, ``dv`` (diffusion), ``feed`` and ``kill`` rates.
    lap : callable
        The Laplacian; a rank of the MPI demo passes one that takes its neighbours' planes.

    Examples
    --------
    >>> u, v = seed_state(16)
    >>> simulate_step(u, v); bool(np.isfinite(u).all())
    True
    """
    uvv = u * v * v
    du = params["du"] * lap(u) - uvv + params["feed"] * (1 - u)
    dv = params["dv"] * lap(v) + uvv - (params["feed"] + params["kill"]) * v
    u += du
    v += dv


def heat_step(temperature, source, heat=HEAT, lap=laplacian):
    """Advance the temperature by one explicit Euler step, in place: diffusion, the heater, cooling.

    Examples
    --------
    >>> temperature, source = heater(16)
    >>> heat_step(temperature, source); bool(temperature.max() > 300)
    True
    """
    temperature += (np.float32(heat["diffusivity"]) * lap(temperature) + source
                    - np.float32(heat["cooling"]) * (temperature - np.float32(heat["ambient_k"])))


def advance(state, source, iterations, lap=laplacian):
    """Run ``iterations`` steps of every field of ``state`` in place; return the seconds taken."""
    t0 = time.perf_counter()
    for _ in range(iterations):
        simulate_step(state["u"], state["v"], lap=lap)
        heat_step(state["temperature"], source, lap=lap)
    return time.perf_counter() - t0


def initial_state(size):
    """The fields at timestep 0, ``{"u", "v", "temperature"}``, and the heater's source."""
    u, v = seed_state(size)
    temperature, source = heater(size)
    return {"u": u, "v": v, "temperature": temperature}, source


def bits_per_block_for(shape):
    """Block size giving the dataset ``2**BLOCK_COUNT_BITS`` blocks (levels run to the padded power of two).

    Examples
    --------
    >>> bits_per_block_for((64, 64, 64)), bits_per_block_for((24, 24, 24))
    (12, 9)
    """
    return max(1, sum((n - 1).bit_length() for n in shape) - BLOCK_COUNT_BITS)


def write_timesteps(path, state, source, steps, iterations):
    """Simulate and write every field of ``state`` at timesteps ``0..steps-1`` (``iterations`` steps apart).

    Returns
    -------
    dict
        ``simulate_seconds``, ``write_seconds`` (hzio calls only, including the durable close) and
        ``bytes`` (samples written). ``state`` holds the last timestep written on return.
    """
    stats = {"simulate_seconds": 0.0, "write_seconds": 0.0, "bytes": 0}
    shape = state["u"].shape
    t0 = time.perf_counter()
    ds = hzio.create(path, shape=shape, fields=FIELDS, times=range(steps), overwrite=True,
                     bits_per_block=bits_per_block_for(shape))
    stats["write_seconds"] += time.perf_counter() - t0
    with ds:
        for step in range(steps):
            if step:
                stats["simulate_seconds"] += advance(state, source, iterations)
            t0 = time.perf_counter()
            for name, array in state.items():
                ds.write(array, field=name, time=step)
                stats["bytes"] += array.nbytes
            stats["write_seconds"] += time.perf_counter() - t0
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
        ``coarse`` and ``zoom`` arrays, ``coarse_level``, ``max_level``, the read reports, ``field``,
        ``time`` and ``box``.
    """
    with hzio.open(path) as ds:
        level = max(0, ds.max_level - coarse_drop)
        coarse = ds.read(level=level, field=field, time=time_)
        coarse_report = ds.last_read_report
        zoom = ds.read(box=box, field=field, time=time_)
        return {"coarse": coarse, "zoom": zoom, "coarse_level": level, "max_level": ds.max_level,
                "coarse_report": coarse_report, "zoom_report": ds.last_read_report, "field": field,
                "time": time_, "box": box}


def check_views(views, truth):
    """Raise AssertionError unless the views equal the in-memory array; return the coarse level's strides.

    The zoom must equal ``truth`` inside the box; the coarse level must equal ``truth`` subsampled with
    the spacing :func:`level_stride` infers from its shape. Raised explicitly so ``python -O`` keeps it.
    """
    (z0, y0, x0), (z1, y1, x1) = views["box"]
    if not np.array_equal(views["zoom"], truth[z0:z1, y0:y1, x0:x1]):
        raise AssertionError(f"the full-resolution read of box {views['box']} differs from the simulation")
    strides = [level_stride(n, c) for n, c in zip(truth.shape, views["coarse"].shape)]
    if not np.array_equal(views["coarse"], truth[::strides[0], ::strides[1], ::strides[2]]):
        raise AssertionError(f"the level {views['coarse_level']} read differs from the simulation every {strides}")
    views["strides"] = strides
    return strides


def hot_range(temperature, heat=HEAT):
    """The query's range: from half-way between the ambient and the peak temperature to the peak, in kelvin.

    Examples
    --------
    >>> hot_range(np.array([300.0, 500.0, 700.0], np.float32))
    (500.0, 700.0)
    """
    peak = float(temperature.max())
    return heat["ambient_k"] + 0.5 * (peak - heat["ambient_k"]), peak


def find_hot_spot(path, truth, time_):
    """Query the hot spot (:func:`hot_range`) of ``temperature``, check it against NumPy on ``truth``, and
    return what the figure needs: the answer, the reports, the blocks per level and the plane through it.

    The blocks of each level that hold samples, and those whose statistics (minimum, maximum) meet the
    range, come from ``ds.blocks()``; the query skips the others unread (with statistics of parts of
    blocks, larger datasets, it may skip some of those too).
    """
    lo, hi = hot_range(truth)
    with hzio.open(path) as ds:
        coords, values = ds.query("temperature", lo, hi, time=time_)
        report = ds.last_read_report
        full = ds.read(field="temperature", time=time_)
        full_bytes = ds.last_read_report["bytes_read"]
        blocks = ds.blocks("temperature", time=time_)
    mask = (truth >= lo) & (truth <= hi)
    if not (np.array_equal(coords, np.argwhere(mask)) and np.array_equal(values, truth[mask])):
        raise AssertionError("the hot spot query differs from a NumPy scan of the simulation")
    if not np.array_equal(full, truth):
        raise AssertionError("the full read of temperature differs from the simulation")
    holding = blocks["count"] > 0
    low, high = (np.asarray(blocks[k], np.float64).reshape(len(blocks), -1)[:, 0] for k in ("min", "max"))
    meets = holding & (~blocks["stats_known"] | ((high >= lo) & (low <= hi)))
    levels = sorted(set(blocks["level"][holding].tolist()))
    per_level = [(h, int(meets[blocks["level"] == h].sum()), int(holding[blocks["level"] == h].sum()))
                 for h in levels]
    z = int(coords[np.argmax(values)][0]) if len(values) else truth.shape[0] // 2
    found_in_plane = np.zeros(truth.shape[1:], bool)  # the query's answer on the plane drawn
    found_in_plane[tuple(coords[coords[:, 0] == z, 1:].T)] = True
    return {"lo": lo, "hi": hi, "coords": coords, "values": values, "report": report, "full_bytes": full_bytes,
            "per_level": per_level, "blocks": int(holding.sum()), "plane_z": z, "plane": full[z],
            "found_in_plane": found_in_plane, "time": time_, "fraction": float(mask.mean())}


def query_hot_spot(path, out_dir, truth, time_):
    """Find the hot spot (:func:`find_hot_spot`), draw it and say what the query read; returns the result."""
    found = find_hot_spot(path, truth, time_)
    png = save_query_figure(out_dir, found)
    r, coords = found["report"], found["coords"]
    span = (coords.min(0).tolist(), (coords.max(0) + 1).tolist()) if len(coords) else None
    read = r["blocks_read"]
    print(f"hot spot query: temperature in [{found['lo']:.1f}, {found['hi']:.1f}] K at timestep {found['time']}: "
          f"{len(coords)} samples ({100 * found['fraction']:.3f}% of the domain) in box {span}")
    print(f"  {read} of {found['blocks']} blocks read ({100 * read / found['blocks']:.1f}%), "
          f"{r['blocks_skipped']} skipped by their statistics; {r['bytes_read']} bytes vs {found['full_bytes']} "
          f"for a full read; equals a NumPy scan")
    print(f"  saved {png}")
    return found


def data_bytes_on_disk(path):
    """Bytes of the .idx file plus every file in its data folder (named after it)."""
    total = os.path.getsize(path)
    for root, _, names in os.walk(os.path.splitext(path)[0]):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    return total


def show_views(path, out_dir, truth, time_):
    """Read, check and draw the coarse and zoomed views of ``u`` and ``v`` (``truth`` holds the simulation's
    arrays by field); print what each read took."""
    n = truth["u"].shape[0]
    box = ((n // 4,) * 3, (n - n // 4,) * 3)
    for field in ("u", "v"):
        views = read_views(path, field, time_, coarse_drop=6, box=box)
        strides = check_views(views, truth[field])
        png = save_views_figure(out_dir, views, (float(truth[field].min()), float(truth[field].max())))
        print(f"read field {field} at timestep {time_}: level {views['coarse_level']} of {views['max_level']} -> "
              f"{views['coarse'].shape} (every {strides} samples, {views['coarse_report']['bytes_read']} bytes "
              f"read); box {box} -> {views['zoom'].shape} ({views['zoom_report']['bytes_read']} bytes read); "
              f"both equal the simulation\n  saved {png}")


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
    """Run the simulation, write it, read it back, check it, query it and draw it. Returns 0 on success."""
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "gray_scott.idx")
    state, source = initial_state(args.size)
    stats = write_timesteps(path, state, source, args.steps, args.iterations)
    mib = stats["bytes"] / 2**20
    print(f"wrote {args.steps} timesteps x fields u (zip), v, temperature (raw) of {state['u'].shape} float32 "
          f"to {path}")
    print(f"  {mib:.1f} MiB of samples, {data_bytes_on_disk(path) / 2**20:.1f} MiB on disk, "
          f"hzio {stats['write_seconds']:.2f} s ({mib / stats['write_seconds']:.0f} MiB/s), "
          f"simulation {stats['simulate_seconds']:.2f} s")
    last = args.steps - 1
    show_views(path, args.out, state, last)
    query_hot_spot(path, args.out, state["temperature"], last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
