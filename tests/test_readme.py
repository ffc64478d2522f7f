"""The README as a newcomer reads it: how to run kbx after ``make demo``, and a Python example
that runs as written on a CPU machine."""

import re
import subprocess
import sys

from kbx.cli import build_parser
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_says_how_to_run_kbx_after_make_demo():
    assert "make demo" in README and ".venv/bin/kbx" in README
    assert "source .venv/bin/activate" in README


def test_the_python_example_runs_as_written_on_the_cpu():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "kbx.api" in b]
    assert blocks, "the README has a Python example of kbx.api (kbx.client's needs a server)"
    for code in blocks:
        assert 'device="cpu")' in code  # a CPU clone runs it
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr


def test_eval_help_gives_the_timeout_defaults():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = sub.choices["eval"].format_help()  # type: ignore[attr-defined]
    assert "default: 60, 120" in " ".join(text.split())


def test_the_figures_the_readme_quotes_are_those_of_their_files():
    """Every figure the README quotes comes from its current file in benchmarks/results, and
    every file there is quoted: the block is what ``benchmarks/gpu.py --table`` makes of them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import evidence

    block = README.split(evidence.QUOTED_BEGIN, 1)[1].split(evidence.TABLE_END, 1)[0].strip()
    assert block == evidence.quoted()
    files = sorted(p.name for p in evidence.RESULTS.glob("*.json"))
    assert files and all(f"(benchmarks/results/{name})" in block for name in files)
    table = (evidence.RESULTS / "README.md").read_text()
    assert evidence.table() in table  # the results table lists every file too


def test_results_files_say_what_they_were_measured_with():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import evidence

    for name, record in evidence.read_all().items():
        missing = {"commit", "date", "torch", "triton", "command"} - set(record)
        if record.get("device") == "cuda":
            missing |= {"gpu", "driver"} - set(record)
        assert not missing, f"{name} lacks {sorted(missing)}"
    assert all(p.stat().st_size < 1 << 20 for p in evidence.RESULTS.iterdir())


def test_the_readme_documents_answers_service_results_client_and_report() -> None:
    """The JSONL answer format, fetching a service result, a kbx.client example, and the
    report's screenshot (small enough to ship)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text()
    assert "### Answers as JSONL" in text and '{"file": "Math/rsqrt.py"' in text
    assert "GET /v1/evaluations/{job_id}" in text and "from kbx.client import Client" in text
    assert "![The analysis report" in text and "(docs/analysis-report.png)" in text
    assert (root / "docs" / "analysis-report.png").stat().st_size < 300_000


def test_no_doc_cites_a_path_outside_the_repository_or_an_issue_number() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    docs = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "docs/design").glob("*.md")]
    outside = re.compile(r"\bissues? #?\d+|/work/|shared/design|kernelbenchx/NOTES|\bNOTES\.md")
    found = [f"{d.name}: {m.group(0)}" for d in docs for m in outside.finditer(d.read_text())]
    assert not found, found
