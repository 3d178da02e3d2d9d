"""`EvaluationResult` in a notebook: `_repr_html_` gives the summary and the first rows as
escaped HTML tables, and IPython's display machinery (what Jupyter calls) picks it up."""

from __future__ import annotations

import re
from pathlib import Path

from _report_data import CLOSER, SCORES, hostile_results, many_results

from convoeval.report.notebook import ROWS_SHOWN


def test_repr_html_is_the_summary_and_first_rows_escaped(tmp_path: Path) -> None:
    result = hostile_results(tmp_path)
    html = result._repr_html_()
    assert html.startswith('<div class="convoeval-result"><p><strong>convoeval</strong>: 5 records')
    assert '<th class="num">pass rate</th>' in html
    assert re.search(
        r"<td><bdi>tool_call_accuracy</bdi></td>(<td class=\"num\">[^<]*</td>){7}", html
    )
    scores = re.findall(r'<span class="num score-(?:good|bad)">([0-9.]+)</span>', html)
    assert [float(s) for s in scores] == SCORES
    assert CLOSER not in html and "<script" not in html
    assert "&lt;/script&gt;&lt;script&gt;" in html
    assert "more rows" not in html


def test_one_record_is_said_in_the_singular(tmp_path: Path) -> None:
    from convoeval.report import summary_table

    (tmp_path / "one").mkdir()
    (tmp_path / "more").mkdir()
    one = many_results(tmp_path / "one", 1)
    assert repr(one).startswith("EvaluationResult(1 record; ")
    assert summary_table(one).title == "convoeval: 1 record"
    assert "<strong>convoeval</strong>: 1 record, " in one._repr_html_()
    more = many_results(tmp_path / "more", ROWS_SHOWN + 1)._repr_html_()
    assert "1 more row: <code>" in more


def test_long_results_show_the_first_rows_and_say_how_many_more(tmp_path: Path) -> None:
    html = many_results(tmp_path, 25)._repr_html_()
    assert html.count("<bdi>many-") == ROWS_SHOWN
    assert f"{25 - ROWS_SHOWN} more rows: <code>result.to_pandas()</code>" in html
    assert '<span class="num failed">failed</span>' in html  # record 9 failed relevancy


def test_ipython_display_uses_it(tmp_path: Path) -> None:
    from IPython.core import formatters  # a test dependency: the notebook view is checked

    result = hostile_results(tmp_path)
    bundle, _ = formatters.DisplayFormatter().format(result)
    assert bundle["text/html"] == result._repr_html_()
    assert bundle["text/plain"].startswith("EvaluationResult(5 records;")
