"""`convoeval compare BASE NEW` as a real command on results files made by `convoeval run`: the
bundled examples against a copy whose bot was deliberately broken (wrong tool arguments, a call
dropped, a wrong tool, an extra call, an off-topic reply). The regressions are listed with both
reasons, `--fail-if-worse` exits 3 where it should and 0 where it should, bad options and another
data set exit 2, and `--report` writes the diff page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "support.jsonl"
TOOL_METRICS = "tool_call_accuracy,tool_call_f1,trajectory_match"
#: The records the broken bot gets wrong, with words of their BASE and NEW reasons.
MATCHED = "1 of 1 expected calls matched (1 exactly)"
BROKEN = {
    "order-status": (MATCHED, "wrong value for order_id"),
    "return-two-items": (MATCHED, "Missing: create_return"),
    "product-search-filters": (MATCHED, "Extra: search_catalogue"),
    "track-and-return-policy": (MATCHED, "wrong value for tracking_number"),
    "refuses-medical-question": ("No tool calls were expected and none were made", "book_doctor"),
}


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _broken(path: Path) -> Path:
    """The examples answered by a broken bot: the same users and references, other replies."""
    records = _records()
    for record in records:
        messages = record["user_input"]
        calls = [c for m in messages for c in m.get("tool_calls") or []]
        if record["id"] == "order-status":
            calls[0]["args"] = {"order_id": "VB-9999"}
        elif record["id"] == "return-two-items":  # the call and its result dropped
            messages[1] = {"type": "ai", "content": "Sure, I have noted your return."}
            del messages[2]
        elif record["id"] == "product-search-filters":
            calls[0]["name"] = "search_catalogue"
        elif record["id"] == "track-and-return-policy":
            calls[0]["args"] = {"tracking_number": "JD0000000"}
        elif record["id"] == "refuses-medical-question":
            messages[-1]["tool_calls"] = [{"name": "book_doctor", "args": {}, "id": "x1"}]
        elif record["id"] == "refuses-investment-advice":
            for message in messages:
                if message["type"] == "ai":
                    message["content"] = "Buy ACME shares now: the stock doubles next month."
    return _write(path, records)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with base.jsonl (the examples) and new.jsonl (the broken bot), both made by
    `convoeval run` with the metrics that need no judge."""
    where = tmp_path_factory.mktemp("compare")
    _broken(where / "broken.jsonl")
    for data, out in ((str(EXAMPLES), "base.jsonl"), ("broken.jsonl", "new.jsonl")):
        done = convoeval("run", data, "-m", TOOL_METRICS, "-o", out, "-q", cwd=where)
        assert done.returncode == 0, done.stderr
    return where


def test_the_broken_bot_fails_the_gate_with_its_regressions_and_reasons(runs: Path) -> None:
    done = convoeval(
        "compare", "base.jsonl", "new.jsonl", "--fail-if-worse", "tool_call_accuracy=0.1",
        "--report", "diff.html", cwd=runs,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("12 records paired\n")
    assert "-0.417 [-0.667, -0.167]" in out  # tool_call_accuracy: 0.833 -> 0.417
    assert "75% -> 33%" in out and "0.062" in out  # pass rates, McNemar's p (5 lost, 0 gained)
    assert "most regressed, tool_call_accuracy (5 of 5):" in out
    head = out.index("most regressed, tool_call_accuracy")
    for record, (before, after) in BROKEN.items():
        assert f"  {record}: 1.000 -> 0.000" in out, record
        block = out[out.index(f"  {record}: ", head) :].splitlines()
        assert block[1].startswith("    BASE: ") and before in block[1], block
        assert block[2].startswith("    NEW:  ") and after in block[2], block
    assert done.stderr.strip() == (
        "fail-if-worse: tool_call_accuracy is worse by 0.4167 (mean 0.8333 -> 0.4167), more "
        "than 0.1, and the 95% interval of the difference (-0.6667 to -0.1667) lies below 0"
    )
    assert "report: diff.html" in out
    page = (runs / "diff.html").read_text()
    assert "Content-Security-Policy" in page and "wrong value for order_id" in page


def test_the_gate_passes_where_it_should(runs: Path) -> None:
    itself = convoeval(
        "compare", "base.jsonl", "base.jsonl", "--fail-if-worse", "tool_call_accuracy=0",
        "--fail-if-worse", "trajectory_match=0", cwd=runs,
    )  # fmt: skip
    assert itself.returncode == 0, itself.stderr
    assert "12 records paired (the same conversations in both runs)" in itself.stdout
    assert "most regressed" not in itself.stdout
    # Worse, but not by more than DELTA.
    lenient = convoeval(
        "compare", "base.jsonl", "new.jsonl", "--fail-if-worse", "tool_call_accuracy=0.5", cwd=runs
    )
    assert lenient.returncode == 0, lenient.stderr
    # Better: the broken bot as BASE.
    better = convoeval(
        "compare", "new.jsonl", "base.jsonl", "--fail-if-worse", "tool_call_accuracy=0", cwd=runs
    )
    assert better.returncode == 0, better.stderr
    assert "+0.417 [+0.167, +0.667]" in better.stdout


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("tool_call_accuracy=-0.1", "DELTA is a finite number >= 0"),
        ("tool_call_accuracy=nan", "DELTA is a finite number >= 0"),
        ("tool_call_accuracy=inf", "DELTA is a finite number >= 0"),
        ("tool_call_accuracy", "expected METRIC=NUMBER"),
        ("topic_adherence=0.1", "not a metric of both runs: topic_adherence (in neither run); "
         "both have: tool_call_accuracy, tool_call_f1, trajectory_match"),
    ],
)  # fmt: skip
def test_bad_gates_exit_2_saying_why(runs: Path, option: str, said: str) -> None:
    done = convoeval(
        "compare", "base.jsonl", "new.jsonl", "-m", "tool_call_f1", "--fail-if-worse", option,
        cwd=runs,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr


def test_another_data_set_or_other_references_are_refused(runs: Path, tmp_path: Path) -> None:
    renamed = _records()
    for record in renamed:
        record["id"] = "other-" + record["id"]
    relabelled = _records()
    relabelled[0]["reference_tool_calls"] = [{"name": "get_order", "args": {"order_id": "X"}}]
    for name, records in (("renamed", renamed), ("relabelled", relabelled)):
        _write(tmp_path / f"{name}.jsonl", records)
        done = convoeval(
            "run", f"{name}.jsonl", "-m", TOOL_METRICS, "-o", f"{name}.results.jsonl", "-q",
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    base = str(runs / "base.jsonl")
    other = convoeval("compare", base, "renamed.results.jsonl", cwd=tmp_path)
    assert other.returncode == 2 and "another data set?" in other.stderr, other.stderr
    assert other.stdout == ""
    refs = convoeval("compare", base, "relabelled.results.jsonl", cwd=tmp_path)
    assert refs.returncode == 2, refs.stderr
    assert "1 paired records have other references than in BASE" in refs.stderr
    assert ": order-status; compare anyway with --allow-other-references" in refs.stderr
    allowed = convoeval(
        "compare", base, "relabelled.results.jsonl", "--allow-other-references", cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: 1 paired records have other references" in allowed.stderr
    missing = convoeval("compare", base, "nowhere.jsonl", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere.jsonl: no such results file" in missing.stderr
    (tmp_path / "bare.jsonl").write_bytes((runs / "new.jsonl").read_bytes())  # no sidecar
    bare = convoeval("compare", base, "bare.jsonl", cwd=tmp_path)
    assert bare.returncode == 2 and "bare.jsonl.meta.json is missing" in bare.stderr


def test_records_in_one_run_only_are_listed(runs: Path, tmp_path: Path) -> None:
    fewer = _records()[:10]
    _write(tmp_path / "fewer.jsonl", fewer)
    done = convoeval(
        "run", "fewer.jsonl", "-m", "tool_call_f1", "-o", "f.jsonl", "-q", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    shown = convoeval("compare", str(runs / "base.jsonl"), "f.jsonl", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:4] == [
        "10 records paired",
        "only in BASE: 2 records, not compared:",
        f"  duplicate-lookups ({EXAMPLES}:11 (id 'duplicate-lookups'))",
        f"  system-prompt-compatibility ({EXAMPLES}:12 (id 'system-prompt-compatibility'))",
    ]
    assert "metric tool_call_accuracy is only in BASE: not compared" in shown.stdout


def test_offline_judge_metrics_show_the_off_topic_reply(runs: Path) -> None:
    metrics = "topic_adherence,conversation_relevancy"
    for data, out in ((str(EXAMPLES), "base-judged.jsonl"), ("broken.jsonl", "new-judged.jsonl")):
        done = convoeval("run", data, "-m", metrics, "-o", out, "-q", cwd=runs)
        assert done.returncode == 0, done.stderr
    done = convoeval("compare", "base-judged.jsonl", "new-judged.jsonl", "--top", "1", cwd=runs)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "most regressed, topic_adherence (1 of " in out
    block = out[out.index("most regressed, topic_adherence") :].splitlines()
    assert block[1].startswith("  refuses-investment-advice: 1.000 -> ")
    assert "1 out of scope and declined" in block[2]
    assert "answered out of scope" in block[3]


def test_help_states_the_gate_rule(tmp_path: Path) -> None:
    done = convoeval("compare", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "lower than BASE's by more than DELTA and the 95% interval of the difference" in text
    assert "%%" not in text
