"""The demos' figures (matplotlib, Agg backend): a coarse level of the whole domain next to a
full-resolution box, and a value-range query with the blocks it read. Used by demo.py and demo_mpi.py.

Axes are in sample coordinates of the dataset (``x``, ``y``; the plane drawn is named by its ``z``);
colour bars carry the field's name and unit.
"""

import os

LABELS = {"u": "u: substrate concentration (dimensionless)", "v": "v: activator concentration (dimensionless)",
          "temperature": "temperature (K)"}
DPI = 100


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend: files only, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def extent(x0, y0, step_x, step_y, count_x, count_y):
    """The ``imshow`` extent that centres sample ``(i, j)`` on ``(x0 + i * step_x, y0 + j * step_y)``.

    Examples
    --------
    >>> extent(0, 0, 4, 4, 16, 16)
    (-2.0, 62.0, -2.0, 62.0)
    """
    return (x0 - step_x / 2, x0 + (count_x - 0.5) * step_x, y0 - step_y / 2, y0 + (count_y - 0.5) * step_y)


def plane_through(box, stride, planes):
    """The ``z`` of the coarse plane nearest the box's middle (a multiple of ``stride`` below
    ``planes * stride``) and the ``z`` of the box's plane drawn next to it (the same when the box holds it)."""
    (z0, _, _), (z1, _, _) = box
    coarse_z = min(planes - 1, round((z0 + z1 - 1) / 2 / stride)) * stride
    return coarse_z, min(max(coarse_z, z0), z1 - 1)


def save_views_figure(out_dir, views, value_range):
    """Draw ``views`` (from ``demo.read_views`` and ``demo.check_views``) as ``<field>_views.png``.

    Left: a plane of the coarse level over the whole domain, the zoomed box outlined. Right: the same
    plane of the full-resolution box. One colour scale, ``value_range``, for both. Returns the path.
    """
    plt = pyplot()
    (z0, y0, x0), (z1, y1, x1) = views["box"]
    sz, sy, sx = views["strides"]
    coarse, zoom, field = views["coarse"], views["zoom"], views["field"]
    coarse_z, zoom_z = plane_through(views["box"], sz, coarse.shape[0])
    style = {"cmap": "viridis", "vmin": value_range[0], "vmax": value_range[1], "origin": "lower",
             "interpolation": "nearest"}
    fig, (ax_c, ax_z) = plt.subplots(1, 2, figsize=(11.5, 5.2), layout="constrained")
    image = ax_c.imshow(coarse[coarse_z // sz], extent=extent(0, 0, sx, sy, coarse.shape[2], coarse.shape[1]),
                        **style)
    ax_c.add_patch(plt.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, ec="white", ls="--", lw=1.5))
    ax_c.annotate("zoomed box", (x0, y1), xytext=(2, 3), textcoords="offset points", color="white", fontsize=9)
    ax_c.set_title(f"level {views['coarse_level']} of {views['max_level']}: every {sx} samples "
                   f"({coarse.shape[1]} x {coarse.shape[2]}), plane z = {coarse_z}\n"
                   f"{views['coarse_report']['bytes_read'] / 1024:.0f} KiB read for the whole level", fontsize=10)
    ax_z.imshow(zoom[zoom_z - z0], extent=extent(x0, y0, 1, 1, x1 - x0, y1 - y0), **style)
    ax_z.set_title(f"full resolution (level {views['max_level']}): box z {z0}:{z1}, y {y0}:{y1}, x {x0}:{x1}, "
                   f"plane z = {zoom_z}\n{views['zoom_report']['bytes_read'] / 1024:.0f} KiB read for the box",
                   fontsize=10)
    for ax in (ax_c, ax_z):
        ax.set(xlabel="x (sample)", ylabel="y (sample)")
    fig.colorbar(image, ax=[ax_c, ax_z], label=LABELS.get(field, field), shrink=0.9)
    fig.suptitle(f"Field {field}, timestep {views['time']}: a coarse level of the whole domain and a "
                 f"full-resolution box, both read from the dataset", fontweight="bold")
    return _save(plt, fig, os.path.join(out_dir, f"{field}_views.png"))


def save_query_figure(out_dir, found):
    """Draw the hot spot query (``demo.find_hot_spot``'s result) as ``temperature_query.png``.

    Left: the plane through the hottest sample found, the samples the query returned on it outlined, and
    the bounding box of all of them. Right: per level, the blocks holding samples and those the query read.
    Returns the path.
    """
    plt = pyplot()
    plane, coords, report = found["plane"], found["coords"], found["report"]
    ny, nx = plane.shape
    fig, (ax_p, ax_b) = plt.subplots(1, 2, figsize=(12.5, 5.2), layout="constrained",
                                     gridspec_kw={"width_ratios": [1.15, 1]})
    image = ax_p.imshow(plane, origin="lower", cmap="inferno", interpolation="nearest",
                        extent=extent(0, 0, 1, 1, nx, ny))
    fig.colorbar(image, ax=ax_p, label=LABELS["temperature"], shrink=0.9)
    if found["found_in_plane"].any():
        ax_p.contour(found["found_in_plane"].astype(float), levels=[0.5], colors="cyan", linewidths=1.2,
                     extent=(0, nx - 1, 0, ny - 1))
    if len(coords):
        (lz, ly, lx), (hz, hy, hx) = coords.min(0), coords.max(0) + 1
        ax_p.add_patch(plt.Rectangle((lx - 0.5, ly - 0.5), hx - lx, hy - ly, fill=False, ec="cyan", ls="--",
                                     label=f"all {len(coords)} samples found lie in z {lz}:{hz}, y {ly}:{hy}, "
                                           f"x {lx}:{hx}"))
        ax_p.legend(loc="lower left", fontsize=8)
    ax_p.set(xlabel="x (sample)", ylabel="y (sample)")
    ax_p.set_title(f"plane z = {found['plane_z']} through the hottest sample; cyan: the query's answer\n"
                   f"temperature in [{found['lo']:.0f}, {found['hi']:.0f}] K: {len(coords)} samples, "
                   f"{100 * found['fraction']:.2f} % of the domain", fontsize=10)
    levels = [h for h, _, _ in found["per_level"]]
    ax_b.bar(levels, [held for *_, held in found["per_level"]], color="lightgray", label="blocks holding samples")
    ax_b.bar(levels, [met for _, met, _ in found["per_level"]], color="tab:red",
             label="blocks read: their min/max meet the range")
    for h, met, held in found["per_level"]:
        ax_b.annotate(f"{met}/{held}", (h, held), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8)
    ax_b.set(xlabel="level (block 0 holds every level up to its own)", ylabel="blocks")
    ax_b.set_xticks(levels)
    ax_b.legend(fontsize=8, loc="upper left")
    read = report["blocks_read"]
    ax_b.set_title(f"the query read {read} of {found['blocks']} blocks ({100 * read / found['blocks']:.0f} %): "
                   f"{report['bytes_read'] / 1024:.0f} KiB,\nwhere a full read takes "
                   f"{found['full_bytes'] / 1024:.0f} KiB; {report['blocks_skipped']} blocks skipped unread",
                   fontsize=10)
    fig.suptitle(f"Value-range query on temperature, timestep {found['time']}: the per-block statistics find the "
                 f"hot spot", fontweight="bold")
    return _save(plt, fig, os.path.join(out_dir, "temperature_query.png"))


def _save(plt, fig, png):
    fig.savefig(png, dpi=DPI)
    plt.close(fig)
    return png
