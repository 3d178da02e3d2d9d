"""Issue 15's proof on a small subset of ../shared/data: `agree` on an offline run of the labelled
records gives, to the last digit, the in-sample figures benchmarks/agreement.py computes on the
same rows (benchmarks/agree_check.py does it on all rows). The data are found as
tests/_shared_data.py says (skipped when absent, a failure where they are required)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from _shared_data import shared_file
from convoeval import evaluate
from convoeval.judges.offline.segment import segment_requests

ROOT = Path(__file__).resolve().parents[2]
FILES = ("xstest_refusal_dev.jsonl", "clinc150_scope_dev.jsonl", "dbdc3_breakdown_dev.jsonl")


def _labelled_silence(turn: dict[str, Any]) -> bool:
    """A system turn with no text that most annotators judged (O or X): labelled, unjudged."""
    if "O" not in turn or turn["utterance"].strip():
        return False
    votes = turn["O"] + turn.get("T", 0) + turn["X"]
    return 2 * max(turn["O"], turn["X"]) > votes


def _subset() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """20 XSTest rows (all three models), 40 CLINC150 rows (every domain) plus a row without a
    request and one with two, and 10 DBDC3 dialogues, one with system turns that have no text."""
    from _stats import read_jsonl

    xstest, clinc, dialogues = (read_jsonl(shared_file(name)) for name in FILES)
    odd = [r for r in clinc if len(segment_requests([r["text"]])) == 0][:1]
    odd += [r for r in clinc if len(segment_requests([r["text"]])) == 2][:1]
    silent = [d for d in dialogues if any(_labelled_silence(t) for t in d["turns"])]
    return xstest[::68][:20], clinc[::78][:40] + odd, dialogues[::42][:9] + silent[:1]


def _run(data: Path, metric: str, output: Path) -> None:
    evaluate(str(data), [metric], "offline", output=output, cache=False, show_progress=False)


def test_agree_reproduces_agreement_py_on_a_subset(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from agree_check import agree_checks, benchmark_figures, show

        from convoeval.judges.offline.kit import get_kit

        rows = _subset()
        figures = benchmark_figures(get_kit(), rows, interval_resamples=50)
        checks = agree_checks(tmp_path, rows, figures, run=_run, resamples=0)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert all(c.holds() for c in checks), show(checks)
    assert len(checks) == 23
    # the subset has the cases where a verdict is not a row, and they are counted apart
    assert figures["clinc.per_topic.rows_without_topic"] >= 1
    assert figures["clinc.per_topic.rows_with_several_topics"] >= 1
    assert figures["dbdc3.per_exchange.exchanges_without_reply"] >= 1
    by_name = {c.name: c for c in checks}
    assert by_name["dbdc3 relevant: unscored"].agree >= 1
    # XSTest gives one topic per row, so agree equals the headline per-row figure as well
    xstest = by_name["xstest answered: agreement"]
    assert xstest.not_same_unit is None and xstest.agree == xstest.headline_value
