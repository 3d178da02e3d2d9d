"""`convoeval agree` end to end: a real offline `convoeval run` on labelled support data, then the
table, the figures, the HTML page, and exit 2 with FILE:LINE for bad labels."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from _cli import convoeval
from convoeval import agree

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "support.jsonl"
#: Labels written into a copy of the examples (metadata.labels), against the offline judge.
LABELS = {
    "order-status": {
        "topic_adherence": {"0": {"answered": True, "in_scope": True}, "4": {"answered": False}},
        "conversation_relevancy": {"0": True, "1": True},
        "tool_call_accuracy": 1,
    },
    "refuses-investment-advice": {
        "topic_adherence": {"0": {"answered": False, "in_scope": False}},
        "tool_call_accuracy": 1,
    },
    "irrelevant-warranty-reply": {"conversation_relevancy": {"0": True, "1": True}},
    "address-wrong-zip": {"tool_call_accuracy": 1},
    "cancel-without-tool": {"tool_call_accuracy": 0},
    "duplicate-lookups": {"tool_call_accuracy": 0.5},
}


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return convoeval(*args, cwd=cwd, module="convoeval")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results of `convoeval run` (offline judge) on the labelled copy of the examples."""
    folder = tmp_path_factory.mktemp("agree")
    lines = []
    for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] in LABELS:
            record["metadata"] = {"labels": LABELS[record["id"]]}
        lines.append(json.dumps(record))
    data = folder / "support.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = _cli(
        "run", data, "-m", "topic_adherence,conversation_relevancy,tool_call_accuracy", "-q",
        cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder / "support.results.jsonl"


def test_agree_prints_one_row_per_metric_and_kind(run: Path) -> None:
    done = _cli("agree", run, "--report", run.parent / "agree.html", cwd=run.parent)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for metric, kind in [
        ("topic_adherence", "answered"),
        ("topic_adherence", "in_scope"),
        ("conversation_relevancy", "relevant"),
        ("tool_call_accuracy", "score"),
    ]:
        assert any(metric in line and f" {kind} " in line for line in out.splitlines()), out
    assert "95% percentile bootstrap intervals, 1000 resamples, seed 0" in out
    report = agree(run)
    answered = report.get("topic_adherence", "answered")
    assert (answered.labelled, answered.agreement) == (3, pytest.approx(2 / 3))
    assert [d.key for d in answered.disagreements] == ["4"]  # "notification arrives": answered
    relevant = report.get("conversation_relevancy", "relevant")
    assert (relevant.labelled, relevant.agreement, relevant.unlabelled) == (4, 0.75, 13)
    assert [(d.id, d.key) for d in relevant.disagreements] == [("irrelevant-warranty-reply", "0")]
    accuracy = report.get("tool_call_accuracy")
    assert (accuracy.scale, accuracy.labelled, accuracy.unlabelled) == ("numeric", 5, 7)
    assert accuracy.mae == pytest.approx(0.1)  # address-wrong-zip: 0.5 against 1
    assert report.get("topic_adherence", "in_scope").agreement == 1.0
    for item in report.kinds:  # the table prints the API's figures
        assert f"{item.agreement:.3f}" in out
    page = (run.parent / "agree.html").read_text(encoding="utf-8")
    assert "irrelevant-warranty-reply" in page and "<script" not in page
    assert "How long is the warranty on the Volt Pro laptop?" in page  # the transcript
    assert "That&#x27;s not what I asked" in page or "That's not what I asked" in page


def test_metric_option_limits_the_table(run: Path) -> None:
    done = _cli("agree", run, "-m", "tool_call_accuracy", cwd=run.parent)
    assert done.returncode == 0, done.stderr
    assert "tool_call_accuracy" in done.stdout and "topic_adherence" not in done.stdout
    unknown = _cli("agree", run, "-m", "nope", cwd=run.parent)
    assert unknown.returncode == 2 and "not metrics of this run" in unknown.stderr


def test_a_labels_file_and_its_bad_line(run: Path) -> None:
    labels = run.parent / "labels.jsonl"
    labels.write_text(
        '{"id": "order-status", "tool_call_accuracy": 1}\n'
        '{"id": "address-wrong-zip", "tool_call_accuracy": 1}\n',
        encoding="utf-8",
    )
    good = _cli("agree", run, "--labels", labels, cwd=run.parent)
    assert good.returncode == 0, good.stderr
    assert "tool_call_accuracy" in good.stdout and "topic_adherence" not in good.stdout
    with labels.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "cancel-without-tool", "conversation_relevancy": {"0": "yes"}}\n')
    bad = _cli("agree", run, "--labels", labels, cwd=run.parent)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"error: {labels}:3 (id 'cancel-without-tool'): ")
    assert "labels.conversation_relevancy.0" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_no_labels_and_no_results_exit_2(run: Path, tmp_path: Path) -> None:
    empty = tmp_path / "labels.jsonl"
    empty.write_text('{"id": "nobody", "tool_call_accuracy": 1}\n', encoding="utf-8")
    none = _cli("agree", run, "--labels", empty, cwd=tmp_path)
    assert none.returncode == 2 and "error: no labels in" in none.stderr
    assert "1 labelled ids have no row" in none.stderr
    missing = _cli("agree", tmp_path / "missing.jsonl", cwd=tmp_path)
    assert missing.returncode == 2 and "no such results file" in missing.stderr
