"""Resuming into a results file: skipped records, partial last lines, refusals, the sidecar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _runner_samples import DelayMetric, tool_sample, write_jsonl

from convoeval import EvaluationResult, ToolCallAccuracy, evaluate
from convoeval.rows.files import Done, read_rows
from convoeval.runner import ResultsFileError, meta_path, read_meta


def _indices(path: Path) -> list[int]:
    return [json.loads(line)["index"] for line in path.read_text().splitlines() if line.strip()]


def _run(data: Path, out: Path, metric: DelayMetric, **kw: object) -> None:
    evaluate(data, [metric], output=out, show_progress=False, **kw)  # type: ignore[arg-type]


def test_resume_skips_finished_records_and_drops_a_partial_last_line(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(10)])
    out = tmp_path / "r.jsonl"
    _run(data, out, DelayMetric(10))
    lines = out.read_text().splitlines(keepends=True)
    # As if the process was killed while writing row 4: rows 0-3 and half of row 4 remain.
    out.write_text("".join(lines[:4]) + lines[4][:25])
    killed = EvaluationResult.from_file(out)  # a report of a killed run reads the whole rows
    assert len(killed) == 4 and [r["index"] for r in killed.rows()] == [0, 1, 2, 3]
    again = DelayMetric(10)
    _run(data, out, again)
    assert sorted(again.seen) == sorted(f"s{i}" for i in range(4, 10))
    assert _indices(out) == list(range(10))
    assert [r["index"] for r in EvaluationResult.from_file(out).rows()] == list(range(10))
    assert all(line.endswith("\n") for line in out.read_text().splitlines(keepends=True))
    # A finished file resumes to nothing at all, and the summary still covers every row.
    idle = DelayMetric(10)
    result = evaluate(data, [idle], output=out, show_progress=False)
    assert idle.seen == [] and len(result) == 10
    assert result.summary()["delay_metric"]["scored"] == 10
    meta = read_meta(out)
    assert meta is not None and meta["resumed"] and meta["completed"]


def test_refuses_other_data_or_metrics_and_overwrite_starts_again(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(3)])
    other = write_jsonl(tmp_path / "e.jsonl", [tool_sample(i) for i in range(4)])
    out = tmp_path / "r.jsonl"
    evaluate(data, ["tool_call_accuracy"], output=out, show_progress=False)
    with pytest.raises(ResultsFileError, match=r"the data differ .*use --overwrite"):
        evaluate(other, ["tool_call_accuracy"], output=out, show_progress=False)
    with pytest.raises(ResultsFileError, match=r"tool_call_accuracy before, tool_call_f1 now"):
        evaluate(data, ["tool_call_f1"], output=out, show_progress=False)
    with pytest.raises(
        ResultsFileError,
        match="tool_call_accuracy's options differ \\(strict_order=true -> strict_order=false\\)",
    ):
        evaluate(data, [ToolCallAccuracy(strict_order=False)], output=out, show_progress=False)
    with pytest.raises(ResultsFileError, match="already holds results"):
        evaluate(data, ["tool_call_accuracy"], output=out, show_progress=False, resume=False)
    evaluate(other, ["tool_call_accuracy"], output=out, show_progress=False, overwrite=True)
    assert _indices(out) == [0, 1, 2, 3]
    # A threshold change does not block a resume: pass rates are recomputed from scores.
    result = evaluate(other, [ToolCallAccuracy(threshold=0.2)], output=out, show_progress=False)
    assert result.summary()["tool_call_accuracy"]["threshold"] == 0.2


def test_rows_without_a_sidecar_are_not_resumed(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(0)])
    out = tmp_path / "r.jsonl"
    evaluate(data, ["tool_call_f1"], output=out, show_progress=False)
    meta_path(out).unlink()
    with pytest.raises(ResultsFileError, match=r"no r\.jsonl\.meta\.json.*--overwrite"):
        evaluate(data, ["tool_call_f1"], output=out, show_progress=False)


def test_a_corrupt_row_before_the_end_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    row = {"index": 0, "scores": {}}
    out.write_text(json.dumps(row) + "\nGARBAGE\n" + json.dumps({**row, "index": 1}) + "\n")
    with pytest.raises(ResultsFileError, match=r"r.jsonl:2: not a JSON results row"):
        read_rows(out, lambda r: None)
    out.write_text(json.dumps(row) + "\n" + json.dumps({**row, "index": 1}) + '\n{"ind')
    seen: list[int] = []
    done = read_rows(out, lambda r: seen.append(r["index"]))
    assert seen == [0, 1] and len(done) == 2 and out.read_text().count("\n") == 2


def test_done_tracks_a_prefix_and_stragglers() -> None:
    done = Done()
    for index in (0, 1, 3, 5, 2):
        done.add(index)
    assert done.prefix == 4 and 5 in done and 4 not in done and len(done) == 5
    done.add(4)
    assert done.prefix == 6 and len(done) == 6
