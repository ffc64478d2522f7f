"""The analysis report: one self-contained HTML file (inline SVG figures, inline CSS, one tiny
inline script) that opens with no network.  A Content-Security-Policy forbids every fetch, so
a figure that tried to load anything would fail loudly in the browser rather than silently.

A figure without data is n/a with its reason (``Plot.missing``), never empty axes.  The inline
script only marks the page: each drawn ``<figure class="plot">`` gets ``data-drawn`` (yes when
its SVG has a non-zero box and content) and ``<body>`` counts the plots, the drawn ones, the n/a
ones and any script errors; tests/analyze/test_report.py reads those marks from headless
Chromium."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from kbx.analyze import plots
from kbx.analyze.schema import AnalysisResults, CategoryCell, Interval


@dataclass(frozen=True)
class Plot:
    """One figure of the report; ``missing`` says why it is n/a (no axes are drawn), or None."""

    id: str
    title: str
    caption: str
    draw: Callable[[AnalysisResults], Figure]
    missing: Callable[[AnalysisResults], str | None] = lambda r: None


def _untimed(r: AnalysisResults) -> str:
    """Why speedups are missing: which runs were not timed, or that nothing correct was."""
    if r.untimed:
        return f"no candidate of {', '.join(r.untimed)} was timed (runs on the CPU are not)"
    return "no correct candidate was timed"


def _no_speedups(r: AnalysisResults) -> str | None:
    return None if any(r.speedups.values()) else _untimed(r)


def _no_rescue(r: AnalysisResults) -> str | None:
    if not r.rounds:
        return "no run has more than one round"
    return None if any(s.rescued or s.persistent for s in r.rescue.values()) else _untimed(r)


PLOTS = (
    Plot("exe-heatmap", "Exe rate by category and method",
         "Share of each category's tasks counted whose candidate is correct; n/a where a method "
         "attempted no task of the category.", plots.heatmap),
    Plot("method-rates", "Rates per method",
         "Call (runs), exe (correct) and fast_1 (correct and faster than eager) rates over the "
         "tasks counted; the whiskers are 95% intervals; n/a where nothing was counted or "
         "timed.", plots.method_rates),
    Plot("speedups", "Speedups by category",
         "Speedups of the correct, timed candidates over PyTorch eager (log axis); the dashed "
         "line is 1x. Categories with no such candidate are left out.", plots.speedups_by_category,
         _no_speedups),
    Plot("fast-p", "fast_p curves",
         "Share of the tasks counted whose candidate is correct and more than p times faster "
         "than eager; the bands are 95% intervals (bootstrap over tasks).",
         plots.fast_p, lambda r: None if r.fast_p else _untimed(r)),
    Plot("rounds", "Iteration dynamics",
         "Per refinement round: call and exe rates (left; the band: the exe rate's 95% "
         "interval) and the geometric mean speedup of the round's correct candidates (right).",
         plots.rounds, lambda r: None if r.rounds else "no run has more than one round"),
    Plot("rescue", "Rescued vs persistent",
         "Speedups of tasks made correct only after round 0 (rescued) beside those correct from "
         "the first attempt on (persistent).", plots.rescue, _no_rescue),
    Plot("slower", "Correct but slower",
         "Share of each method's correct, timed candidates that run slower than eager, with "
         "95% intervals.", plots.slower_share, lambda r: None if r.slower_share else _untimed(r)),
    Plot("hardware", "Cross-hardware spread",
         "Geometric mean speedup of each method on each machine; the grey bar spans the spread.",
         plots.hardware,
         lambda r: None if len(r.hardware) > 1 else "the runs were timed on one machine at most"),
)  # fmt: skip

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 1em; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 1em; }
figure.plot { margin: 0; } figure.plot svg { width: 100%; height: auto; }
figure.plot h2 { font-size: 17px; margin: 0.6em 0 0.2em; } table.overview { width: auto; }
figcaption { color: #444; font-size: 13px; } p.subtitle { color: #333; margin-top: -0.4em; }
figure.na p.na { border: 1px dashed #aaa; color: #555; padding: 2em 1em; text-align: center; }
ul.runs { color: #444; font-size: 12px; }
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
  var figs = document.querySelectorAll('figure.plot:not(.na)'), drawn = 0;
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
  document.body.dataset.na = document.querySelectorAll('figure.plot.na').length;
  document.body.dataset.rendered = 'yes';
});
"""


def render(results: AnalysisResults | Mapping[str, Any]) -> str:
    """The report as HTML text; ``results`` may be the plain dict (e.g. read from JSON)."""
    results = _validated(results)
    figures = "\n".join(_figure(p, results) for p in PLOTS)
    title = escape(results.title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{title}</title><style>{STYLE}</style><script>{SCRIPT}</script></head>\n"
        f"<body><h1>{title}</h1>\n{_identity(results)}\n{_overview(results)}\n"
        f'<div class="plots">{figures}</div>\n'
        f'<h2>Per category</h2>\n<div class="tables">{_tables(results)}</div>\n</body></html>\n'
    )


def _identity(results: AnalysisResults) -> str:
    """The subtitle (devices, dates, kbx versions, coverage) and a line per run."""
    runs = "".join(f"<li>{escape(line)}</li>" for line in results.runs)
    subtitle = f'<p class="subtitle">{escape(results.subtitle)}</p>' if results.subtitle else ""
    return subtitle + (f'<ul class="runs">{runs}</ul>' if runs else "")


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
    head = f"<h2>{escape(plot.title)}</h2>"
    caption = f"<figcaption>{escape(plot.caption)}</figcaption>"
    if (why := plot.missing(results)) is not None:
        return (
            f'<figure class="plot na" id="fig-{plot.id}">{head}\n'
            f'<p class="na">n/a: {escape(why)}</p>\n{caption}</figure>'
        )
    svg = plots.svg(plot.draw(results), plot.id)
    return f'<figure class="plot" id="fig-{plot.id}">{head}\n{svg}\n{caption}</figure>'


def _overview(results: AnalysisResults) -> str:
    """A line per method: the headline numbers with their n and intervals, as text."""
    rows = []
    for m in results.methods:
        r = results.rates[m]
        cells = "".join(f"<td>{_interval(iv)}</td>" for iv in (r.call, r.exe, r.fast_1))
        n = r.exe.n if r.exe else 0
        rows.append(f"<tr><td>{escape(m)}</td>{cells}<td>{n}</td></tr>")
    head = "<tr><th>method</th><th>call</th><th>exe</th><th>fast_1</th><th>tasks counted</th></tr>"
    caption = "<caption>Rates with 95% intervals</caption>"
    return f'<table class="overview">{caption}{head}{"".join(rows)}</table>'


def _interval(iv: Interval | None) -> str:
    if iv is None:
        return "n/a"
    return f"{_pct(iv.value)} [{_pct(iv.lo)}, {_pct(iv.hi)}] (n={iv.n})"


def _tables(results: AnalysisResults) -> str:
    """One table per category, a row per method."""
    head = (
        "<tr><th>method</th><th>tasks counted</th><th>call</th><th>exe</th><th>fast_1</th>"
        "<th>geomean speedup</th></tr>"
    )
    out = []
    for category in results.categories:
        cells = results.by_category[category]
        rows = "".join(_row(m, cells[m]) for m in results.methods if m in cells)
        out.append(f"<table><caption>{escape(category)}</caption>{head}{rows}</table>")
    return "\n".join(out)


def _row(method: str, cell: CategoryCell) -> str:
    speedup = "n/a" if cell.geomean_speedup is None else f"{cell.geomean_speedup:.2f}x"
    return (
        f"<tr><td>{escape(method)}</td><td>{cell.tasks}</td><td>{_pct(cell.call_rate)}</td>"
        f"<td>{_pct(cell.exe_rate)}</td><td>{_pct(cell.fast_1_rate)}</td><td>{speedup}</td></tr>"
    )


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.0f}%"
