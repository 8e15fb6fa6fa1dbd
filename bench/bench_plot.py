"""Drawing helpers for the benchmarks' figures (``bench_figures.py``): matplotlib with the Agg backend,
bars of medians with their spread, ratio panels with targets, and a caption naming the run.

Nothing here knows a benchmark; each figure in ``bench_figures.py`` picks its numbers from a JSON report.
"""

import math
import statistics
import textwrap

HZIO_COLOUR = "#1f77b4"
BASELINE_COLOURS = ("#ff7f0e", "#2ca02c", "#7f7f7f", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
DOTS_UP_TO = 15  # repetitions drawn one by one as dots; beyond that only the whiskers
SPREAD_NOTE = "bars: medians; whiskers: min to max; dots: each repetition"


def pyplot():
    """Return ``matplotlib.pyplot`` on the Agg backend (files only, no display), or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def colours_for(series):
    """One colour per series name: hzio's series in blue shades, the baselines in the other colours."""
    hzio = [s for s in series if "hzio" in s.lower()]
    shades = ("#1f77b4", "#6baed6", "#08519c", "#9ecae1")
    others = iter(BASELINE_COLOURS)
    return {s: shades[hzio.index(s) % len(shades)] if s in hzio else next(others, "#333333") for s in series}


def spread_of(value):
    """``(median, min, max, samples)`` of a value given as a list of samples, a ``{"median", "min", "max"}``
    dict or one number; None when there is nothing (a case that did not run).

    Examples
    --------
    >>> spread_of([3.0, 1.0, 2.0])
    (2.0, 1.0, 3.0, [3.0, 1.0, 2.0])
    >>> spread_of(0.5)
    (0.5, 0.5, 0.5, [])
    """
    if value is None:
        return None
    if isinstance(value, dict):
        if value.get("median") is None:
            return None
        return value["median"], value.get("min", value["median"]), value.get("max", value["median"]), []
    if isinstance(value, (int, float)):
        return float(value), float(value), float(value), []
    samples = [v for v in value if v is not None]
    if not samples:
        return None
    return statistics.median(samples), min(samples), max(samples), samples


def spread_bars(ax, groups, series, values, ylabel, log=False, scale=1.0, colours=None, annotate="{:.3g}"):
    """Grouped bars: for each group on the x axis one bar per series at its median, whiskers from the
    minimum to the maximum and, for a few repetitions, one dot per repetition.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    groups, series : list of str
        x-axis labels, and the bars of each group (the legend).
    values : dict
        ``{(group, series): value}`` in any form :func:`spread_of` takes; missing keys leave a gap.
    ylabel : str
        The y axis' label, with its unit.
    log : bool
        Logarithmic y axis.
    scale : float
        Multiplies every value (seconds to milliseconds: 1e3).
    colours : dict, optional
        Series name to colour; defaults to :func:`colours_for`.
    annotate : str or None
        Format of the median printed on each bar when there are at most 12 bars.
    """
    colours = colours or colours_for(series)
    width = 0.8 / max(1, len(series))
    drawn = [(g, s, spread_of(values.get((g, s)))) for g in groups for s in series]
    label_bars = annotate and sum(1 for *_, v in drawn if v) <= 12
    for j, name in enumerate(series):
        points = [(i, v) for i, g in enumerate(groups) if (v := spread_of(values.get((g, name))))]
        if not points:
            continue
        xs = [i - 0.4 + width * (j + 0.5) for i, _ in points]
        med = [v[0] * scale for _, v in points]
        low = [m - v[1] * scale for m, (_, v) in zip(med, points)]
        high = [v[2] * scale - m for m, (_, v) in zip(med, points)]
        ax.bar(xs, med, width * 0.92, label=name, color=colours[name], zorder=2)
        ax.errorbar(xs, med, yerr=[low, high], fmt="none", ecolor="black", elinewidth=0.8, capsize=2, zorder=3)
        for x, (_, v) in zip(xs, points):
            if 1 < len(v[3]) <= DOTS_UP_TO:
                offsets = [width * 0.5 * (k / (len(v[3]) - 1) - 0.5) for k in range(len(v[3]))]
                ax.plot([x + o for o in offsets], [s * scale for s in v[3]], ".", color="black", ms=2.5, alpha=0.6,
                        zorder=4)
        if label_bars:
            for x, m in zip(xs, med):
                ax.annotate(annotate.format(m), (x, m), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7, zorder=6,
                            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
    wrap = max(8, min(24, 90 // max(1, len(groups))))  # about 90 characters of fontsize 7 fit across a panel
    ax.set_xticks(range(len(groups)), [textwrap.fill(g, wrap) for g in groups], fontsize=7)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylabel(ylabel)
    if log:
        plain_log_axis(ax)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=8)


def plain_log_axis(ax, axis="y"):
    """A logarithmic axis whose ticks read as plain numbers (0.5, 2, 10), not as powers of ten; within
    a decade or so some minor ticks are labelled too."""
    from matplotlib.ticker import FuncFormatter

    getattr(ax, f"set_{axis}scale")("log")
    target = ax.yaxis if axis == "y" else ax.xaxis

    def minor(value, _):
        low, high = sorted(target.get_view_interval())
        lead = round(value / 10 ** math.floor(math.log10(value)))
        return f"{value:g}" if high < 100 * low and lead in (2, 3, 5) else ""

    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(FuncFormatter(minor))


def reference_line(ax, value, label, colour="dimgray", style="-"):
    """A horizontal line across the axes (1.0 for ratios, a baseline's time), named in the legend."""
    ax.axhline(value, color=colour, ls=style, lw=1, label=label, zorder=1)
    ax.legend(fontsize=8)


def group_targets(ax, targets, label):
    """A red dashed segment across each listed group: ``{group index: target value}`` (targets differ per group)."""
    for k, (i, value) in enumerate(sorted(targets.items())):
        ax.hlines(value, i - 0.45, i + 0.45, colors="red", linestyles="--", lw=1.2, zorder=5,
                  label=label if k == 0 else None)
    ax.legend(fontsize=8)


def caption(fig, report, note=""):
    """The run under the figure: date, command, machine and load (from the report), and ``note``."""
    machine = report.get("machine", {}) if isinstance(report, dict) else {}
    command = report.get("command", "") if isinstance(report, dict) else ""
    if isinstance(command, list):
        command = " ".join(command)
    facts = [report.get("date", "") if isinstance(report, dict) else "", command]
    if machine:
        facts.append(f"{machine.get('cores_usable', '?')} cores ({machine.get('cpu_model', '?')}), "
                     f"load {', '.join(map(str, machine.get('load', [])))} at the start")
    text = ". ".join(t for t in ("; ".join(f for f in facts if f), note) if t)
    fig.text(0.01, 0.01, textwrap.fill(text, 200), fontsize=7, color="dimgray", ha="left", va="bottom")


def new_figure(plt, panels, title, rows=1, width=5.6, height=4.4):
    """A figure of ``panels`` axes (in ``rows`` rows) under a bold title; returns ``(fig, flat list of axes)``."""
    cols = -(-panels // rows)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + 0.6), squeeze=False)
    fig.suptitle(title, fontweight="bold")
    flat = [ax for row in axes for ax in row]
    for ax in flat[panels:]:
        ax.set_visible(False)
    return fig, flat[:panels]


def save(plt, fig, png):
    """Lay the figure out above its caption, write ``png`` and free the figure; returns ``png``."""
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
