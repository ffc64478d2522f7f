"""The report's figures, one function each, drawn with matplotlib and returned as inline SVG text.
Figures are built with ``matplotlib.figure.Figure`` (no pyplot), so nothing touches global state
or a display; each SVG gets its own id salt, so ids never clash when several share one page."""

from __future__ import annotations

import io
import math
import re

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from kbx.analyze.schema import AnalysisResults, Interval

WIDE, TALL = 6.4, 3.6  # inches: one plot, half the page's width
RATE_NAMES = ("call", "exe", "fast_1")


def svg(fig: Figure, name: str) -> str:
    """The figure as an ``<svg>`` element: text stays text (smaller, searchable), ids are salted
    by ``name`` and the output is the same on every run (no date, no random ids)."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"kbx-{name}"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: inline, not a file
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)


def method_colors(results: AnalysisResults) -> dict[str, str]:
    """One colour per method, the same in every figure."""
    palette = matplotlib.colormaps["tab10"]
    return {m: matplotlib.colors.to_hex(palette(i % 10)) for i, m in enumerate(results.methods)}


def _one_axes(height: float = TALL) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(WIDE, height), layout="constrained")
    return fig, fig.add_subplot()


def _err(iv: Interval) -> tuple[float, float]:
    return iv.value - iv.lo, iv.hi - iv.value


def _speedup_axis(ax: Axes, axis: str = "y") -> None:
    """Log scale with the 1x line (as fast as eager) marked: speedups are ratios.  Ticks at
    1, 2 and 5 per decade, labelled as plain multiples ("0.5x"), not powers of ten."""
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()  # widened to show 0.5x, 1x and 2x
    (ax.set_ylim if axis == "y" else ax.set_xlim)(min(lo, 0.45), max(hi, 2.2))
    (ax.axhline if axis == "y" else ax.axvline)(1.0, color="0.4", lw=0.8, ls="--")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}x"))
    target.set_minor_formatter(NullFormatter())


def heatmap(results: AnalysisResults) -> Figure:
    """Category x method exe rate, each cell labelled with its percentage."""
    cats, methods = results.categories, results.methods
    grid = [[_exe(results, c, m) for m in methods] for c in cats]
    fig, ax = _one_axes(height=0.3 * len(cats) + 1.4)
    masked = [[math.nan if v is None else v for v in row] for row in grid]
    image = ax.imshow(masked, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(methods)), methods, rotation=20, ha="right")
    ax.set_yticks(range(len(cats)), cats)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            label, dark = ("n/a", True) if v is None else (f"{100 * v:.0f}%", v < 0.6)
            ax.text(j, i, label, ha="center", va="center", fontsize=7, color="w" if dark else "k")
    fig.colorbar(image, ax=ax, label="exe rate", shrink=0.8)
    return fig


def _exe(results: AnalysisResults, category: str, method: str) -> float | None:
    cell = results.by_category[category].get(method)
    return None if cell is None else cell.exe_rate


def method_rates(results: AnalysisResults) -> Figure:
    """Call, exe and fast_1 rates per method as grouped bars with their intervals; a rate that
    is n/a (nothing counted, or fast_1 of an untimed run) is written as n/a, not drawn as 0."""
    fig, ax = _one_axes()
    width = 0.8 / len(RATE_NAMES)
    for k, name in enumerate(RATE_NAMES):
        ivs = [getattr(results.rates[m], name) for m in results.methods]
        xs = [i + (k - 1) * width for i in range(len(results.methods))]
        shown = [(x, iv) for x, iv in zip(xs, ivs, strict=True) if iv is not None]
        errs = list(zip(*(_err(iv) for _, iv in shown), strict=True)) if shown else None
        heights = [iv.value for _, iv in shown]
        ax.bar(
            [x for x, _ in shown], heights, width, yerr=errs, capsize=3, label=name, color=f"C{k}"
        )
        for x, iv in zip(xs, ivs, strict=True):
            if iv is None:
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.set_xticks(range(len(results.methods)), results.methods, rotation=20, ha="right")
    ax.set_ylim(0, 1.15)  # headroom for the legend above the bars
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0], ["0%", "20%", "40%", "60%", "80%", "100%"])
    ax.set_ylabel("share of the tasks counted")
    ax.set_xlabel("run (method · model)")
    ax.legend(ncols=3, loc="upper right", fontsize=8)
    return fig


def speedups_by_category(results: AnalysisResults) -> Figure:
    """Box plots of the correct candidates' speedups per category, on a log axis."""
    cats = [c for c in results.categories if results.speedups.get(c)]
    fig, ax = _one_axes(height=0.3 * max(len(cats), 1) + 1.2)
    if cats:
        data = [results.speedups[c] for c in cats]
        ax.boxplot(
            data, orientation="horizontal", tick_labels=cats, widths=0.6, flierprops={"ms": 3}
        )
    _speedup_axis(ax, "x")
    ax.invert_yaxis()  # categories read top-down in their given order
    ax.set_xlabel("speedup over PyTorch eager (log)")
    return fig


def fast_p(results: AnalysisResults) -> Figure:
    """fast_p curves: the share of tasks correct and faster than p, for p along a log axis."""
    fig, ax = _one_axes()
    colors = method_colors(results)
    for method, curve in results.fast_p.items():
        ax.step(curve.p, curve.share, where="post", color=colors[method], label=method)
        if curve.lo:  # the 95% band of each share
            ax.fill_between(
                curve.p, curve.lo, curve.hi, step="post", color=colors[method], alpha=0.2, lw=0
            )
    _speedup_axis(ax, "x")
    ax.set_ylim(0, 1)
    ax.set_xlabel("speedup threshold p (log)")
    ax.set_ylabel("fast_p")
    ax.legend(fontsize=8)
    return fig


def rounds(results: AnalysisResults) -> Figure:
    """Iteration dynamics: call and exe rates per round (left), mean speedup per round (right)."""
    fig = Figure(figsize=(WIDE, TALL), layout="constrained")
    left, right = fig.subplots(1, 2)
    colors = method_colors(results)
    for method, rs in results.rounds.items():
        xs = [r.round for r in rs]
        left.plot(xs, [r.exe_rate for r in rs], "o-", color=colors[method], label=f"{method} exe")
        if all(r.exe for r in rs):  # the exe rate's 95% interval per round
            lows = [r.exe.lo for r in rs if r.exe]
            highs = [r.exe.hi for r in rs if r.exe]
            left.fill_between(xs, lows, highs, color=colors[method], alpha=0.15, lw=0)
        left.plot(xs, [r.call_rate for r in rs], "o:", color=colors[method], label=f"{method} call")
        timed = [(r.round, r.mean_speedup) for r in rs if r.mean_speedup is not None]
        if timed:
            right.plot(*zip(*timed, strict=True), "o-", color=colors[method], label=method)
    left.set(xlabel="round", ylabel="share of tasks", ylim=(0, 1))
    left.legend(fontsize=7)
    _speedup_axis(right)
    right.set(xlabel="round", ylabel="geomean speedup (log)")
    return fig


def rescue(results: AnalysisResults) -> Figure:
    """Speedups of rescued tasks (correct only after a repair) beside persistent ones."""
    fig, ax = _one_axes()
    data, labels = [], []
    for method, split in results.rescue.items():
        for kind, values in (("persistent", split.persistent), ("rescued", split.rescued)):
            if values:
                data.append(values)
                labels.append(f"{method}\n{kind} (n={len(values)})")
    if data:
        ax.boxplot(data, tick_labels=labels, widths=0.5, flierprops={"ms": 3})
    _speedup_axis(ax)
    ax.set_ylabel("speedup over eager (log)")
    ax.tick_params(axis="x", labelsize=7)
    return fig


def slower_share(results: AnalysisResults) -> Figure:
    """The share of correct candidates that are slower than eager, per method, with intervals."""
    fig, ax = _one_axes(height=3.0)
    methods = [m for m in results.methods if m in results.slower_share]
    ivs = [results.slower_share[m] for m in methods]
    colors = method_colors(results)
    errs = list(zip(*(_err(iv) for iv in ivs), strict=True)) if ivs else None
    values = [iv.value for iv in ivs]
    ax.bar(methods, values, yerr=errs, capsize=3, color=[colors[m] for m in methods])
    ax.set_ylim(0, 1)
    ax.set_ylabel("correct but slower than eager")
    ax.tick_params(axis="x", rotation=20)
    return fig


def hardware(results: AnalysisResults) -> Figure:
    """Cross-hardware spread: each method's geomean speedup on each machine, joined by a line
    whose length is the spread."""
    fig, ax = _one_axes()
    machines = list(results.hardware)
    markers = "osD^vP*X"
    for i, method in enumerate(results.methods):
        values = [(results.hardware[hw].get(method), k) for k, hw in enumerate(machines)]
        present = [(v, k) for v, k in values if v is not None]
        if not present:
            continue
        ax.plot([v for v, _ in present], [i] * len(present), color="0.7", lw=2, zorder=1)
        for v, k in present:
            ax.scatter(v, i, marker=markers[k % len(markers)], color=f"C{k}", zorder=2)
    for k, hw in enumerate(machines):
        ax.scatter([], [], marker=markers[k % len(markers)], color=f"C{k}", label=hw)
    ax.set_yticks(range(len(results.methods)), results.methods)
    _speedup_axis(ax, "x")
    ax.set_xlabel("geomean speedup over eager (log)")
    ax.legend(fontsize=8)
    return fig
