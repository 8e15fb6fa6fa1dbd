"""One figure per benchmark, drawn from its JSON report and written as a PNG next to it.

The benchmarks call :func:`plot_report` after writing their JSON (``--no-plot`` skips it); this script
draws the figures again from existing reports, without running anything::

    .venv/bin/python bench/bench_figures.py bench/results/query.json [more.json ...] [--out DIR]

The benchmark is told by the report's ``command`` (or, failing that, the file's name). Each figure has a
title, axes with units, the baselines of the same run next to hzio, and a caption naming the run.
"""

import argparse
import json
import os
import re
import sys

from bench_plot import (
    SPREAD_NOTE,
    caption,
    colours_for,
    group_targets,
    new_figure,
    plain_log_axis,
    pyplot,
    reference_line,
    save,
    spread_bars,
)

MIB = 2**20


def run_title(report, what):
    size = report.get("size")
    reps = report.get("reps", "?")
    return f"{what}, {size}³ float32, {reps} repetition{'' if reps == 1 else 's'}" if size else what


# ------------------------------------------------------------------------------------------ figures
def write_read_figure(plt, report):
    titles = {"write": "durable write", "read_cold": "full read, cold", "read_warm": "full read, warm"}
    results, ratios, targets = report["results"], report.get("ratios", {}), report.get("targets", {})
    ops = [op for op in titles if op in results]
    cases = sorted({c for op in ops for c in results[op]}, key=lambda c: (not c.startswith("hzio"), c))
    fig, (ax_t, ax_r) = new_figure(plt, 2, run_title(report, "Durable write and full read of one cube: hzio "
                                                          "against a raw file and OpenVisus"))
    spread_bars(ax_t, [titles[op] for op in ops], cases,
                {(titles[op], c): results[op][c]["seconds"] for op in ops for c in results[op]}, "seconds",
                annotate=None)
    ax_t.set_title("time from create (or open) to durable file (or array)", fontsize=9)
    series, values = [], {}
    for op in ops:
        for hz, r in ratios.get(op, {}).items():
            for key, base in (("vs_raw", "raw"), ("vs_openvisus", "fastest OpenVisus")):
                if r.get(key) is not None:
                    name = f"{hz} x {base}"
                    series += [name] if name not in series else []
                    values[(titles[op], name)] = r[key]
    spread_bars(ax_r, [titles[op] for op in ops], series, values, "hzio throughput / baseline throughput")
    reference_line(ax_r, 1.0, "as fast as the baseline")
    group_targets(ax_r, {i: targets.get(f"{'write' if op == 'write' else 'read'}_vs_raw", 0.8)
                         for i, op in enumerate(ops)}, "target vs raw")
    ax_r.set_title("ratios of the medians (above 1: hzio is faster)", fontsize=9)
    return fig, SPREAD_NOTE


def read_figure(plt, report):
    res = report["results"]
    panels = [p for p in ("a_full_read", "b_parallel", "c_levels", "d_progressive") if p in res]
    fig, axes = new_figure(plt, len(panels), run_title(report, "Reads: hzio against raw reads of the same bytes"),
                           rows=2 if len(panels) > 2 else 1)
    full = res["a_full_read"]["hzio"]
    for ax, part in zip(axes, panels):
        if part == "a_full_read":
            names = ["hzio", "raw", "raw-reused"]
            spread_bars(ax, ["cold", "warm"], names, {(k, n): res[part][n][k]["seconds"] for n in names
                                                      for k in ("cold", "warm")}, "seconds")
            ax.set_title("(a) full read, one process: open to array", fontsize=9)
        elif part == "b_parallel":
            key = max((k for k in res[part] if k.endswith("_ranks")), key=lambda k: int(k.split("_")[0]))
            cases = list(res[part][key])
            spread_bars(ax, ["cold", "warm"], cases, {(k, c): res[part][key][c][k]["seconds"] for c in cases
                                                      for k in ("cold", "warm")}, "seconds (slowest rank)",
                        annotate=None)
            ax.set_title(f"(b) {key.replace('_', ' ')}, each its z slab (written by/method)", fontsize=9)
        elif part == "c_levels":
            rows = res[part]
            for kind, style in (("cold", "o-"), ("warm", "s--")):
                ax.plot([r["level"] for r in rows], [1e3 * r[f"{kind}_s"] for r in rows], style, ms=3,
                        label=f"read(level=h), {kind}")
                reference_line(ax, 1e3 * full[kind]["median_s"], f"full read, {kind}", style=style[1:])
            ax.set(xlabel="level h", ylabel="ms (median)")
            ax.set_title("(c) the whole box at each level", fontsize=9)
        else:
            steps = res[part]["steps"]
            for kind, style in (("cold", "o-"), ("warm", "s--")):
                ax.plot([s["level"] for s in steps], [1e3 * s[f"{kind}_since_open_s"] for s in steps], style, ms=3,
                        label=f"progressive step, {kind}")
                reference_line(ax, 1e3 * full[kind]["median_s"], f"full read, {kind}", style=style[1:])
            ax.set(xlabel="level of the step", ylabel="ms from open to the step's array (median)")
            ax.set_title("(d) progressive(): coarse to fine", fontsize=9)
        if part in ("c_levels", "d_progressive"):
            plain_log_axis(ax)
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    return fig, SPREAD_NOTE


def query_figure(plt, report):
    variants, target = report["variants"], report.get("target", {})
    mask_rows = {v["name"]: [r for r in v["rows"] if r["mode"] == "mask"] or v["rows"] for v in variants}
    sels = sorted({r["selectivity"] for rows in mask_rows.values() for r in rows})
    at = target.get("selectivity") if target.get("selectivity") in sels else sels[0]
    names = [v["name"] for v in variants]
    fig, (ax_b, ax_t, ax_l) = new_figure(plt, 3, run_title(report, "Value-range queries against a full scan "
                                                                   "(read + NumPy mask)"))
    label = {s: f"{100 * s:g} % of the samples" for s in sels}
    spread_bars(ax_b, [label[s] for s in sels], names, {(label[r["selectivity"]], n): 100 * r["bytes_vs_scan"]
                                                       for n, rows in mask_rows.items() for r in rows},
                "bytes read, % of a full scan's", log=len(sels) > 2)
    if target:
        group_targets(ax_b, {sels.index(target["selectivity"]): 100 * target["max_bytes_vs_scan"]}
                      if target["selectivity"] in sels else {}, "target")
    ax_b.set_title("bytes a query reads (bpb: log2 samples per block; g: 2^g parts with statistics)", fontsize=9)
    cases = ["query, cold", "scan, cold", "query, warm", "scan, warm"]
    values = {}
    for n, rows in mask_rows.items():
        r = next(r for r in rows if r["selectivity"] == at)
        for case in cases:
            who, kind = case.split(", ")
            values[(n, case)] = r[who][kind]["seconds"]
    spread_bars(ax_t, names, cases, values, "ms, open + query (or open + read + mask)", scale=1e3,
                colours=dict(zip(cases, ("#1f77b4", "#ff7f0e", "#6baed6", "#fdae6b"))))
    ax_t.set_title(f"time at {100 * at:g} % selectivity", fontsize=9)
    for n, rows in mask_rows.items():
        r = next(r for r in rows if r["selectivity"] == at)
        per = sorted((int(h), a, b) for h, (a, b) in r["model_blocks_per_level"].items())
        ax_l.plot([h for h, _, _ in per], [100 * a / b for _, a, b in per], "o-", ms=3, label=n)
    ax_l.set(xlabel="level", ylabel="blocks read, % of the level's blocks", ylim=(0, 105))
    ax_l.set_title(f"blocks a query reads per level at {100 * at:g} % (from the sidecars)", fontsize=9)
    ax_l.grid(alpha=0.3)
    ax_l.legend(fontsize=8)
    return fig, SPREAD_NOTE + f"; field {report.get('field', '')}"


def stats_cost_figure(plt, report):
    res = report["results"]
    cases = list(res["writes"])
    fig, (ax_w, ax_s, ax_p) = new_figure(plt, 3, run_title(report, "What per-block statistics cost in a write"))
    spread_bars(ax_w, cases, ["hzio write"], {(c, "hzio write"): res["writes"][c]["wall"]["seconds"]
                                              for c in cases}, "seconds, create + write + close")
    ax_w.set_title("write wall time (raw codec, HZ order)", fontsize=9)
    parts = {"pread": "pread of every block", "numpy": "NumPy min + max per block", "index": "hzio.index",
             "sidecars": "durable sidecar-sized writes"}
    spread_bars(ax_s, ["one thread, warm"], list(parts.values()),
                {("one thread, warm", label): res["stats_seconds"][k]["seconds"] for k, label in parts.items()},
                "seconds")
    reference_line(ax_s, res["hzio_kernel_s"], "hzio kernel = index - pread - sidecars", colour="black", style=":")
    ax_s.set_title("the statistics alone, and what index costs beside them", fontsize=9)
    estimates = {"writer_gap_upper_bound": "writer gap (upper bound)", "hzio_kernel": "hzio kernel (judged)",
                 "numpy": "NumPy (reference)"}
    spread_bars(ax_p, cases, list(estimates.values()),
                {(c, label): 100 * res["shares"][c][k] for c in cases for k, label in estimates.items()
                 if res["shares"][c][k] is not None}, "% of the write's wall time", annotate="{:.1f}")
    reference_line(ax_p, 100 * report.get("target_share", 0.05), "target", colour="red", style="--")
    ax_p.set_title("statistics' share of the write (estimates)", fontsize=9)
    return fig, SPREAD_NOTE


def checksum_figure(plt, report):
    results, parts = report["results"], report["parts"]
    codecs = list(results)
    fig, axes = new_figure(plt, len(codecs) + 1, run_title(report, "What checksum checks cost: verify=True "
                                                                   "against verify=False"))
    for ax, codec in zip(axes, codecs):
        p = results[codec]["parts"]
        spread_bars(ax, [parts[k] for k in p], ["verify=True", "verify=False"],
                    {(parts[k], s): p[k][f"{'' if s.endswith('True') else 'no_'}verify_s"] for k in p
                     for s in ("verify=True", "verify=False")}, "seconds", annotate=None,
                    colours={"verify=True": "#1f77b4", "verify=False": "#ff7f0e"})
        ax.set_title(f"{codec} codec: full reads and a query of the top 1 %", fontsize=9)
    ax = axes[-1]
    keys = list(parts)
    spread_bars(ax, [parts[k] for k in keys], codecs,
                {(parts[k], c): {"median": 100 * results[c]["parts"][k]["cost"],
                                 "min": 100 * (results[c]["parts"][k]["per_rep_ratio_min"] - 1),
                                 "max": 100 * (results[c]["parts"][k]["per_rep_ratio_max"] - 1)}
                 for k in keys for c in codecs if k in results[c]["parts"]},
                "cost, % (verify / no verify - 1)", annotate="{:.1f}")
    reference_line(ax, 0, "no cost")
    costs = [100 * results[c]["parts"][k]["cost"] for k in keys for c in codecs if k in results[c]["parts"]]
    ax.set_ylim(min(-5, 1.5 * min(costs)), max(10, 1.5 * max(costs)))  # one slow repetition would flatten the rest
    target = report.get("target", {})
    group_targets(ax, {keys.index(k): 100 * target["max_cost"] for k in target.get("parts", []) if k in keys},
                  "target")
    ax.set_title("cost: ratio of the medians; whiskers: per-repetition ratios (clipped)", fontsize=9)
    return fig, SPREAD_NOTE


def rewrite_figure(plt, report):
    res = report["results"]
    commits = [k for k in res if k.startswith("commit ")]
    fig, (ax_c, ax_r) = new_figure(plt, 2, run_title(report, "What atomic rewrites cost"))
    spread_bars(ax_c, [k[len("commit "):] for k in commits], ["rewrite timestep 0", "append a timestep"],
                {(k[len("commit "):], s): res[k][f"{'rewrite' if s.startswith('rewrite') else 'append'}_all_s"]
                 for k in commits for s in ("rewrite timestep 0", "append a timestep")}, "ms per commit",
                log=True, scale=1e3, colours={"rewrite timestep 0": "#1f77b4", "append a timestep": "#ff7f0e"})
    ax_c.set_title("commits: rewrite against append of the same bytes", fontsize=9)
    if "small read" in res:
        group = "a box of about one block, warm, one open dataset"
        spread_bars(ax_r, [group], ["hzio read", "os.preadv of as many bytes"],
                    {(group, "hzio read"): res["small read"]["read_all_s"],
                     (group, "os.preadv of as many bytes"): res["small read"]["preadv_all_s"]},
                    "µs per read", log=True, scale=1e6)
        ax_r.set_title("a small read's fixed cost", fontsize=9)
    return fig, SPREAD_NOTE


def small_read_figure(plt, report):
    summary, cases, samples = report["summary"], report["cases"], report["samples"]
    names = list(summary["formats"])
    fig, (ax_t, ax_r, ax_b) = new_figure(plt, 3, run_title(report, f"A {report['box']}³ box at full resolution: "
                                                                   f"hzio against zarr v3, HDF5 and OpenVisus"),
                                         width=6.2)
    spread_bars(ax_t, list(cases.values()), names,
                {(label, n): [r["s"] for r in samples[n][c]] for c, label in cases.items() for n in names},
                "ms per read (every box and repetition)", log=True, scale=1e3, annotate=None)
    ax_t.set_title("time", fontsize=9)
    bases = report.get("target", {}).get("baselines", ["zarr", "h5py"])
    spread_bars(ax_r, list(cases.values()), [f"hzio/{b}" for b in bases],
                {(label, f"hzio/{b}"): {"median": summary["ratios"][c][b]["all"],
                                        "min": min(summary["ratios"][c][b]["per_box"]),
                                        "max": max(summary["ratios"][c][b]["per_box"])}
                 for c, label in cases.items() for b in bases}, "hzio time / baseline time", log=True,
                annotate="{:.2f}")
    reference_line(ax_r, report.get("target", {}).get("max_ratio", 1.0), "target (at most)", "red", "--")
    ax_r.set_title("ratios: geometric mean over the boxes; whiskers: per box (below 1: hzio faster)", fontsize=9)
    cold = [c for c in cases if "cold" in c]
    groups = [f"{cases[c]}, {k} boxes" for c in cold for k in ("aligned", "unaligned")]
    spread_bars(ax_b, groups, names,
                {(f"{cases[c]}, {k} boxes", n): summary["formats"][n][c]["median_read_bytes_by_kind"].get(k)
                 for c in cold for k in ("aligned", "unaligned") for n in names}, "MiB from the disk per read (median)",
                scale=1 / MIB, annotate=None)
    reference_line(ax_b, report["box"] ** 3 * 4 / MIB, "the box's own size", style=":")
    ax_b.set_title("bytes each cold read takes from the disk", fontsize=9)
    return fig, SPREAD_NOTE


def viewer_figure(plt, report):
    labels, samples = report["scenarios"], report["samples"]
    measures = {"first_paint_ms": "first paint", "first_coloured_ms": "first coloured", "refined_ms": "refined"}
    fig, (ax,) = new_figure(plt, 1, run_title(report, "hzio serve's page in headless Chromium"), width=11)
    spread_bars(ax, [labels[s] for s in samples], list(measures.values()),
                {(labels[s], m): [r[k] for r in samples[s]] for s in samples for k, m in measures.items()},
                "ms from the navigation (or the change)", annotate="{:.0f}",
                colours=dict(zip(measures.values(), ("#6baed6", "#1f77b4", "#08519c"))))
    ax.set_title(f"viewport {report['viewport']['width']} x {report['viewport']['height']}; no baseline: "
                 f"the scenarios side by side", fontsize=9)
    return fig, SPREAD_NOTE


def write_figure(plt, report):
    cfg, cases, ratios = report["config"], report["cases"], report["ratios"]
    titles = {"fpp": "file per process", "shared": "shared file, MPI-IO"}
    names = [titles.get(c, c.replace("_", " ")) for c in cases]
    shape = "x".join(map(str, cfg["global"]))
    partitioned = [c for c in ratios if cases[c].get("partitioning", {}).get("partitions", 1) > 1]
    fig, axes = new_figure(plt, 3 if partitioned else 2,
                           f"Collective writes on {report['ranks']} ranks: {shape} {cfg['dtype']}, "
                           f"{cfg['fields']} field(s), {cfg['reps']} repetitions")
    ax_t, ax_r = axes[:2]
    colours = colours_for(names)
    if partitioned:  # a colour map per placement, darker with more partitions
        maps = {"localized": plt.cm.Blues, "uniform": plt.cm.Purples}
        placement = {c: cases[c]["report"]["placement"] for c in ratios}
        for c, n in zip(cases, names):
            if c in ratios:
                same = [d for d in ratios if placement[d] == placement[c]]
                colours[n] = maps.get(placement[c], plt.cm.Greys)(0.4 + 0.55 * same.index(c) / max(1, len(same) - 1))
    group = f"{report['bytes'] / MIB:.0f} MiB, fsync {'on' if cfg['fsync'] else 'off'}"
    spread_bars(ax_t, [group], names, {(group, n): cases[c]["seconds"] for c, n in zip(cases, names)},
                "seconds (slowest rank, between barriers)", colours=colours)
    ax_t.set_title("time per write", fontsize=9)
    spread_bars(ax_r, ["x file per process", "x shared file"], [c.replace("_", " ") for c in ratios],
                {(g, c.replace("_", " ")): ratios[c][k] for c in ratios
                 for g, k in (("x file per process", "vs_fpp"), ("x shared file", "vs_shared"))},
                "hzio throughput / baseline throughput", annotate="{:.2f}", colours=colours)
    reference_line(ax_r, 1.0, "as fast as the baseline")
    group_targets(ax_r, {0: 0.8}, "target vs file per process")
    ax_r.set_title("ratios of the medians (above 1: hzio is faster)", fontsize=9)
    if partitioned:
        _write_messages_panel(axes[2], {c: cases[c] for c in ratios})
    return fig, SPREAD_NOTE


def _write_messages_panel(ax, hzio_cases):
    """Record messages of each hzio case of write_bench's JSON by placement and partition count: within
    groups, merging the shared files, and parts of boxes moved to another group."""
    kinds = {"within groups": lambda s: s["group_messages"], "merge": lambda s: s["merge"]["messages"],
             "moved": lambda s: s["moved_messages"]}
    groups = {}
    for c, case in hzio_cases.items():
        n = case["partitioning"]["partitions"]
        local = case["report"].get("index_space") == "local"
        groups[c] = (f"{case['report']['placement']}, {n} partition{'' if n == 1 else 's'}"
                     + (", local" if local else ""))
    spread_bars(ax, list(groups.values()), list(kinds),
                {(groups[c], k): max(count(hzio_cases[c]["partitioning"]), 0.5) for c in groups
                 for k, count in kinds.items()},
                "record messages (all ranks; none drawn at 0.5)", log=True, annotate="{:.0f}",
                colours=dict(zip(kinds, ("#1f77b4", "#ff7f0e", "#d62728"))))
    ax.set_title("messages by partition count (write report of the median repetition)", fontsize=9)


def hz_kernel_figure(plt, report):
    cases = [r["case"] for r in report]
    kinds = {"encode_msamples_per_s": "encode", "decode_msamples_per_s": "decode", "memcpy_msamples_per_s": "memcpy"}
    fig, (ax,) = new_figure(plt, 1, "The HZ block kernel on one core, no I/O", width=9)
    spread_bars(ax, cases, list(kinds.values()), {(r["case"], label): r[k] for r in report
                                                  for k, label in kinds.items()},
                "million samples per second", log=True, annotate="{:.0f}",
                colours=dict(zip(kinds.values(), ("#1f77b4", "#6baed6", "#ff7f0e"))))
    group_targets(ax, {i: 250 for i, c in enumerate(cases) if c.startswith("hzorder")}, "target (HZ order)")
    return fig, f"medians of {report[0].get('reps', '?')} repetitions; memcpy: a plain copy of the same bytes"


def io_ranks_figure(plt, report):
    cfg, cases = report["config"], report["cases"]
    groups = sorted({k.split(" ", 1)[1] for k in cases})
    fig, (ax_w, ax_t) = new_figure(plt, 2, f"A simulation loop with and without I/O ranks: {cfg['size']}^3 float32, "
                                           f"{report['compute_ranks']} compute ranks, {cfg['steps']} steps of "
                                           f"{cfg['compute_seconds']} s compute")
    modes = {"sync": "synchronous collective write", "io": "through I/O ranks (a copy)",
             "io-in-place": "through I/O ranks, output in the shared buffer"}
    modes = {m: label for m, label in modes.items() if any(k.startswith(m + " ") for k in cases)}
    spread_bars(ax_w, groups, list(modes.values()), {(g, label): cases[f"{m} {g}"]["write_seconds"]
                                                     for g in groups for m, label in modes.items()},
                "ms per step the compute ranks wait in write + flush", scale=1e3, annotate="{:.0f}")
    ax_w.set_title("write time seen by the simulation (median over steps)", fontsize=9)
    spread_bars(ax_t, groups, list(modes.values()), {(g, label): cases[f"{m} {g}"]["total_seconds"]
                                                     for g in groups for m, label in modes.items()},
                "seconds", annotate="{:.1f}")
    reference_line(ax_t, cfg["compute_seconds"] * cfg["steps"], "compute alone")
    ax_t.set_title("time to solution (loop + wait for durability)", fontsize=9)
    return fig, SPREAD_NOTE


def codec_figure(plt, report):
    cases, threads = report["cases"], report["threads"]
    codecs = list(cases)
    fig, (ax, ax_w) = new_figure(plt, 2, f"Compression: hzio against the codec library alone, "
                                         f"{report['config']['size']}^3 float32")
    series = ["library alone, 1 thread"] + [f"hzio, {n} thread(s), per thread" for n in threads]
    mib = report["config"]["size"] ** 3 * 4 / MIB
    values = {}
    for c in codecs:
        values[(c, series[0])] = [mib / s for s in cases[c]["library_seconds"]]
        for n, name in zip(threads, series[1:]):  # the compress phase adds up the threads' seconds
            values[(c, name)] = [mib / s for s in cases[c][f"hzio_{n}_compress_seconds"]]
    spread_bars(ax, codecs, series, values, "MiB of samples per second per thread", log=True, annotate="{:.0f}")
    ax.set_title("per thread (target: hzio >= 0.9 x the library)", fontsize=9)
    walls = [f"hzio, {n} thread(s)" for n in threads]
    spread_bars(ax_w, codecs, walls, {(c, w): cases[c][f"hzio_{n}_wall_seconds"] for c in codecs
                                      for n, w in zip(threads, walls)}, "seconds", annotate="{:.2f}")
    ax_w.set_title("the write's wall time: every thread compresses", fontsize=9)
    return fig, SPREAD_NOTE


def first_write_figure(plt, report):
    runs, idles = report["runs"], report["idles"]
    fig, (ax, ax_t) = new_figure(plt, 2, f"The first write of {report['ranks']} fresh processes: "
                                         f"{report['size']}^3 float32, durable")
    kinds = {"first write": lambda r: r.get("write", 0) == 0, "later writes": lambda r: r.get("write", 0) > 0}
    groups = [f"{k}, idle {i:g} s" for i in idles for k in kinds if any(kinds[k](r) for r in runs)]
    series = {c: label for c, label in (("fpp", "file per process"), ("hzio", "hzio collective write"),
                                         ("hzio-nocopy", "hzio, copy=False"),
                                         ("hzio-node", "hzio, arrays in node memory"),
                                         ("hzio-io", "hzio through an I/O rank"),
                                         ("hzio-io-shared", "I/O rank, arrays in its buffer"),
                                         ("one", "one process alone"))
              if any(r["case"] == c for r in runs)}
    spread_bars(ax, groups, list(series.values()),
                {(f"{k}, idle {i:g} s", label): [r["wall"] for r in runs
                                                 if r["case"] == c and r["idle_s"] == i and chosen(r)]
                 for i in idles for k, chosen in kinds.items() for c, label in series.items()},
                "seconds (slowest rank, between barriers)", annotate="{:.3f}")
    ax.set_title("each repetition a new mpiexec (idle: wait before it)", fontsize=9)
    colours = colours_for(list(series.values()))
    for c, label in series.items():
        mine = sorted((r for r in runs if r["case"] == c and r["idle_s"] == idles[0] and r.get("write", 0) == 0),
                      key=lambda r: r["wall"])
        if not mine or not mine[len(mine) // 2]["timeline"]:
            continue
        r = mine[len(mine) // 2]  # the median run's disk timeline
        base = r["timeline"][0][1]
        ax_t.plot([t for t, _, _ in r["timeline"]], [(b - base) / MIB for _, b, _ in r["timeline"]],
                  color=colours[label], label=f"{label} ({r['wall']:.3f} s)")
        for m in r["marks"][:1]:
            for name, t in m.items():
                ax_t.axvline(t, color=colours[label], lw=0.6, ls=":")
                ax_t.annotate(name, (t, 0), fontsize=7, rotation=90, va="bottom", color=colours[label])
    ax_t.set_xlabel("seconds since the start")
    ax_t.set_ylabel("MiB written to the disk (device counters)")
    ax_t.set_title(f"disk timeline of the median first write, idle {idles[0]:g} s (dotted: calls returned, rank 0)",
                   fontsize=9)
    ax_t.legend(fontsize=8)
    return fig, SPREAD_NOTE


FIGURES = {"write_read_bench": write_read_figure, "read_bench": read_figure, "query_bench": query_figure,
           "stats_cost_bench": stats_cost_figure, "checksum_bench": checksum_figure,
           "rewrite_bench": rewrite_figure, "small_read_bench": small_read_figure, "viewer_bench": viewer_figure,
           "write_bench": write_figure, "hz_kernel_bench": hz_kernel_figure, "io_ranks_bench": io_ranks_figure,
           "codec_bench": codec_figure, "first_write_bench": first_write_figure}


# ------------------------------------------------------------------------------------------ driver
def benchmark_of(report, path):
    """The benchmark that wrote ``report``: from its command, else from the file's name (``query.json``)."""
    command = report.get("command", "") if isinstance(report, dict) else ""
    command = " ".join(command) if isinstance(command, list) else command
    found = re.search(r"(\w+_bench)\.py", command)
    if found and found.group(1) in FIGURES:
        return found.group(1)
    stem = os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    for name in FIGURES:
        if stem in (name, name[:-len("_bench")]) or stem.startswith(name[:-len("_bench")]):
            return name
    raise SystemExit(f"{path}: cannot tell which benchmark wrote it (name it after the benchmark)")


def plot_report(json_path, benchmark=None, out_dir=None):
    """Draw the figure of a JSON report as ``<name>.png`` next to it (or in ``out_dir``).

    Returns
    -------
    str or None
        The PNG's path, or None when matplotlib is not installed.
    """
    plt = pyplot()
    if plt is None:
        return None
    with open(json_path) as f:
        report = json.load(f)
    figure = FIGURES[benchmark or benchmark_of(report, json_path)]
    fig, note = figure(plt, report)
    caption(fig, report, note)
    png = os.path.splitext(json_path)[0] + ".png"
    if out_dir:
        png = os.path.join(out_dir, os.path.basename(png))
    return save(plt, fig, png)


def add_plot_option(parser):
    """``--plot`` / ``--no-plot``: a benchmark's PNG figure next to its JSON (on by default)."""
    parser.add_argument("--plot", action=argparse.BooleanOptionalAction, default=True,
                        help="write a PNG figure next to the JSON (default; needs matplotlib; --no-plot skips it)")


def plot_after_run(args, benchmark):
    """What a benchmark calls after writing ``args.json``: its figure, unless ``--no-plot`` or no JSON."""
    if args.plot and args.json:
        png = plot_report(args.json, benchmark)
        print(f"wrote {png}" if png else "no figure: matplotlib is not installed")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="JSON reports written by the benchmarks")
    parser.add_argument("--out", help="folder for the PNGs (default: next to each JSON)")
    parser.add_argument("--benchmark", choices=sorted(FIGURES), help="the benchmark, when the report cannot tell")
    args = parser.parse_args(argv)
    if pyplot() is None:
        raise SystemExit("bench_figures: matplotlib is not installed (.venv/bin/python -m pip install matplotlib)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for path in args.reports:
        print(f"wrote {plot_report(path, args.benchmark, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
