"""The analysis report: one self-contained HTML file (inline SVG figures, inline CSS, one tiny
inline script) that opens with no network.  A Content-Security-Policy forbids every fetch, so
a figure that tried to load anything would fail loudly in the browser rather than silently.

The inline script only marks the page: each ``<figure class="plot">`` gets ``data-drawn`` (yes
when its SVG has a non-zero box and content) and ``<body>`` counts the plots, the drawn ones and
any script errors; tests/analyze/test_report.py reads those marks from headless Chromium."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from kbx.analyze import plots
from kbx.analyze.schema import AnalysisResults, CategoryCell


@dataclass(frozen=True)
class Plot:
    """One figure of the report; ``shown`` is false when the results lack its data."""

    id: str
    title: str
    caption: str
    draw: Callable[[AnalysisResults], Figure]
    shown: Callable[[AnalysisResults], bool] = lambda r: True


PLOTS = (
    Plot("exe-heatmap", "Exe rate by category and method",
         "Share of each category's tasks whose candidate is correct; n/a where a method has no "
         "candidates for the category.", plots.heatmap),
    Plot("method-rates", "Rates per method",
         "Call (runs), exe (correct) and fast_1 (correct and faster than eager) rates; the "
         "whiskers are the confidence intervals.", plots.method_rates),
    Plot("speedups", "Speedups by category",
         "Speedups of the correct candidates over PyTorch eager; the dashed line is 1x. "
         "Categories with no correct candidate are left out.", plots.speedups_by_category),
    Plot("fast-p", "fast_p curves",
         "Share of tasks whose candidate is correct and at least p times faster than eager; "
         "the bands are 95% intervals (bootstrap over tasks).",
         plots.fast_p, lambda r: bool(r.fast_p)),
    Plot("rounds", "Iteration dynamics",
         "Per refinement round: call and exe rates (left; the band: the exe rate's 95% "
         "interval) and the geometric mean speedup of the round's correct candidates (right).",
         plots.rounds, lambda r: bool(r.rounds)),
    Plot("rescue", "Rescued vs persistent",
         "Speedups of tasks made correct only after round 0 (rescued) beside those correct from "
         "the first attempt on (persistent).", plots.rescue,
         lambda r: any(s.rescued or s.persistent for s in r.rescue.values())),
    Plot("slower", "Correct but slower",
         "Share of each method's correct candidates that run slower than eager, with intervals.",
         plots.slower_share, lambda r: bool(r.slower_share)),
    Plot("hardware", "Cross-hardware spread",
         "Geometric mean speedup of each method on each machine; the grey bar spans the spread.",
         plots.hardware, lambda r: len(r.hardware) > 1),
)  # fmt: skip

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 1em; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1em; }
figure.plot { margin: 0; } figure.plot svg { width: 100%; height: auto; }
figure.plot h2 { font-size: 17px; margin: 0.6em 0 0.2em; } table.overview { width: auto; }
figcaption { color: #444; font-size: 13px; }
.tables { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 1em; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; } caption { font-weight: 600; text-align: left; }
"""

# Marks the page for tests: errors first (installed before anything else runs), then on load
# every figure's drawn state and the counts.
SCRIPT = """
window.addEventListener('error', function (e) {
  var b = document.body || document.documentElement;
  b.dataset.errors = (b.dataset.errors || '') + (e.message || 'error') + ';';
});
window.addEventListener('load', function () {
  var figs = document.querySelectorAll('figure.plot'), drawn = 0;
  figs.forEach(function (f) {
    var s = f.querySelector('svg'), box = s && s.getBoundingClientRect();
    var ok = !!box && box.width > 0 && box.height > 0 &&
             s.querySelectorAll('path, use, text').length > 0;
    f.dataset.drawn = ok ? 'yes' : 'no';
    f.dataset.size = box ? Math.round(box.width) + 'x' + Math.round(box.height) : '0x0';
    if (ok) drawn++;
  });
  document.body.dataset.plots = figs.length;
  document.body.dataset.drawn = drawn;
  document.body.dataset.rendered = 'yes';
});
"""


def shown_plots(results: AnalysisResults) -> list[Plot]:
    """The plots the results have data for, in page order."""
    return [p for p in PLOTS if p.shown(results)]


def render(results: AnalysisResults | Mapping[str, Any]) -> str:
    """The report as HTML text; ``results`` may be the plain dict (e.g. read from JSON)."""
    results = _validated(results)
    figures = "\n".join(_figure(p, results) for p in shown_plots(results))
    title = escape(results.title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{title}</title><style>{STYLE}</style><script>{SCRIPT}</script></head>\n"
        f'<body><h1>{title}</h1>\n{_overview(results)}\n<div class="plots">{figures}</div>\n'
        f'<h2>Per category</h2>\n<div class="tables">{_tables(results)}</div>\n</body></html>\n'
    )


def write_report(results: AnalysisResults | Mapping[str, Any], path: Path) -> Path:
    """Writes the report to ``path`` (a file name, or a folder to hold report.html)."""
    path = path / "report.html" if path.is_dir() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(results), encoding="utf-8")
    return path


def _validated(results: AnalysisResults | Mapping[str, Any]) -> AnalysisResults:
    if isinstance(results, AnalysisResults):
        return results
    return AnalysisResults.model_validate(results)


def _figure(plot: Plot, results: AnalysisResults) -> str:
    svg = plots.svg(plot.draw(results), plot.id)
    return (
        f'<figure class="plot" id="fig-{plot.id}"><h2>{escape(plot.title)}</h2>\n{svg}\n'
        f"<figcaption>{escape(plot.caption)}</figcaption></figure>"
    )


def _overview(results: AnalysisResults) -> str:
    """A line per method: the headline numbers, for readers who want them as text."""
    rows = []
    for m in results.methods:
        r = results.rates[m]
        cells = "".join(
            f"<td>{_pct(iv.value)} [{_pct(iv.lo)}, {_pct(iv.hi)}]</td>"
            for iv in (r.call, r.exe, r.fast_1)
        )
        rows.append(f"<tr><td>{escape(m)}</td>{cells}<td>{r.exe.n}</td></tr>")
    head = "<tr><th>method</th><th>call</th><th>exe</th><th>fast_1</th><th>tasks</th></tr>"
    caption = "<caption>Rates with intervals</caption>"
    return f'<table class="overview">{caption}{head}{"".join(rows)}</table>'


def _tables(results: AnalysisResults) -> str:
    """One table per category, a row per method."""
    head = (
        "<tr><th>method</th><th>tasks</th><th>call</th><th>exe</th><th>fast_1</th>"
        "<th>geomean speedup</th></tr>"
    )
    out = []
    for category in results.categories:
        cells = results.by_category[category]
        rows = "".join(_row(m, cells[m]) for m in results.methods if m in cells)
        out.append(f"<table><caption>{escape(category)}</caption>{head}{rows}</table>")
    return "\n".join(out)


def _row(method: str, cell: CategoryCell) -> str:
    speedup = "-" if cell.geomean_speedup is None else f"{cell.geomean_speedup:.2f}x"
    return (
        f"<tr><td>{escape(method)}</td><td>{cell.tasks}</td><td>{_pct(cell.call_rate)}</td>"
        f"<td>{_pct(cell.exe_rate)}</td><td>{_pct(cell.fast_1_rate)}</td><td>{speedup}</td></tr>"
    )


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"
