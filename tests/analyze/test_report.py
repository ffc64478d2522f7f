"""The analysis report (kbx.analyze.report): one self-contained HTML file that loads nothing from
the network, with one figure per plot, each drawn when headless Chromium opens it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from kbx.analyze.report import PLOTS, render, write_report
from kbx.analyze.schema import AnalysisResults
from tests.analyze import chromium
from tests.analyze.report_data import synthetic_results


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(synthetic_results(), tmp_path_factory.mktemp("report") / "report.html")


@pytest.fixture(scope="module")
def browser() -> str:
    found = chromium.find()
    # Not a skip: `make install` installs chromium, so its absence is a broken set-up.
    assert found, "no chromium found: run `make install` as root, or `apt-get install chromium`"
    return found


def test_no_external_urls(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:[a-z]+:)?//""", html, re.I)
    assert not re.search(r"""url\(\s*["']?\s*(?:[a-z]+:)?//""", html, re.I)
    assert not re.search(r"<(?:link|iframe|object|embed|img)\b", html, re.I)
    # The only URLs left are SVG namespace names, which a browser never fetches.
    for m in re.finditer(r"https?://", html):
        before = html[max(0, m.start() - 20) : m.start()]
        assert re.search(r"""xmlns(?::\w+)?=["']$""", before), html[m.start() - 60 : m.end() + 40]
    assert "default-src 'none'" in html  # and the page's CSP would block a fetch if one slipped in


def test_one_figure_per_plot(report: Path) -> None:
    html = report.read_text()
    figures = re.findall(r'<figure class="plot" id="fig-([\w-]+)">(.*?)</figure>', html, re.S)
    assert [name for name, _ in figures] == [p.id for p in PLOTS]
    for name, body in figures:
        assert body.count("<svg") == 1, name


def test_plots_without_data_say_n_a_with_the_reason_not_empty_axes() -> None:
    data = synthetic_results() | {"rounds": {}, "rescue": {}, "hardware": {}}
    html = render(data)
    assert html.count('<figure class="plot"') == 5  # drawn
    na = dict(
        re.findall(
            r'<figure class="plot na" id="fig-([\w-]+)">.*?<p class="na">(.*?)</p>', html, re.S
        )
    )
    assert na == {
        "rounds": "n/a: no run has more than one round",
        "rescue": "n/a: no run has more than one round",
        "hardware": "n/a: the runs were timed on one machine at most",
    }


def test_tables_per_category(report: Path) -> None:
    html = report.read_text()
    for category in synthetic_results()["categories"]:
        assert f"<caption>{category}</caption>" in html


@pytest.mark.parametrize(
    "change",
    [
        {"rates": {}},  # every method needs its rates
        {"speedups": {"Math": [1.2, -0.5]}},  # speedups are ratios, always positive
        {"fast_p": {"no-such-method": {"p": [1.0], "share": [0.5]}}},
    ],
)
def test_schema_rejects_inconsistent_results(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        AnalysisResults.model_validate(synthetic_results() | change)


def marks(browser: str, page: Path) -> tuple[dict[str, str], str]:
    """The page's marks on <body> after load in headless Chromium, and its DOM; no console
    message (errors, CSP violations) and no script error."""
    loaded = chromium.load(browser, page)
    assert loaded.console == [], "the page logged to the console (errors, CSP violations)"
    body = re.search(r"<body([^>]*)>", loaded.dom)
    assert body, loaded.dom[:500]
    found = dict(re.findall(r'data-([\w-]+)="([^"]*)"', body.group(1)))
    assert found.get("rendered") == "yes", "the page's load handler did not run"
    assert "errors" not in found, found["errors"]
    return found, loaded.dom


def assert_drawn(dom: str, plot_id: str) -> None:
    figure = re.search(rf'<figure[^>]*id="fig-{plot_id}"[^>]*>', dom)
    assert figure and 'data-drawn="yes"' in figure.group(0), plot_id
    size = re.search(r'data-size="(\d+)x(\d+)"', figure.group(0))
    assert size and min(map(int, size.groups())) > 100, (plot_id, figure.group(0))


def test_chromium_draws_every_plot(report: Path, browser: str) -> None:
    found, dom = marks(browser, report)
    assert found["plots"] == found["drawn"] == str(len(PLOTS)) and found["na"] == "0"
    for plot in PLOTS:
        assert_drawn(dom, plot.id)


def test_chromium_screenshot(report: Path, browser: str, tmp_path: Path) -> None:
    png = chromium.screenshot(browser, report, tmp_path / "report.png")
    assert chromium.png_size(png) == chromium.WINDOW
    assert png.stat().st_size > 50_000  # drawn plots, not a blank page
    # The committed copy (redrawn with `python -m tests.analyze.chromium`) is from the same data.
    assert chromium.png_size(chromium.SCREENSHOT) == chromium.WINDOW
