"""Metrics chosen from the data (no `-m`): a metric whose field only some records set scores
those records and leaves the others unscored with the reason; a field no record sets still
skips the metric with a note; a metric that cannot run without an option the user did not give
(`conversational_geval` without criteria) is left out of the default set, with a note."""

from __future__ import annotations

import json
from pathlib import Path

from _runner_samples import tool_sample, write_jsonl

from _cli import convoeval
from convoeval import evaluate
from convoeval.judges import FakeJudge

NO_CALLS = "this record has no reference_tool_calls"


def _mixed(count: int, lacking: set[int]) -> list[dict[str, object]]:
    """`tool_sample`s as dicts, without reference_tool_calls for the indexes in `lacking`."""
    out = []
    for i in range(count):
        data = tool_sample(i).to_dict()
        if i in lacking:
            del data["reference_tool_calls"]
        out.append(data)
    return out


def test_a_field_some_records_lack_leaves_only_those_unscored(tmp_path: Path) -> None:
    result = evaluate(_mixed(4, {1, 3}), output=tmp_path / "r.jsonl", show_progress=False)
    assert "tool_call_accuracy" in result.metric_names
    assert "tool_call_accuracy" not in result.meta["skipped_metrics"]
    rows = list(result.rows())
    for row in rows:
        if row["index"] in (1, 3):
            assert row["scores"]["tool_call_accuracy"] is None
            assert row["reasons"]["tool_call_accuracy"] == NO_CALLS
            assert row["errors"] == {}
        else:
            assert row["scores"]["tool_call_accuracy"] == 1.0
    summary = result.summary()["tool_call_accuracy"]
    assert (summary["scored"], summary["unscored"], summary["failed"]) == (2, 2, 0)
    note = result.meta["partial_metrics"]["tool_call_accuracy"]
    assert note == "2 of 4 records lack reference_tool_calls: those are unscored"
    # A field no record sets still skips the metric, as before.
    assert result.meta["skipped_metrics"]["tool_schema_check"].startswith(
        "the data does not set available_tools (4 of 4 records lack it)"
    )


def test_the_command_says_which_records_a_metric_leaves_unscored(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "d.jsonl", _mixed(3, {0}))  # type: ignore[arg-type]
    done = convoeval("run", "d.jsonl", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "scoring tool_call_accuracy, tool_call_f1, trajectory_match on the records that set "
        "their fields: 1 of 3 records lack reference_tool_calls: those are unscored"
    ) in done.stderr
    first = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert first["reasons"]["tool_call_f1"] == NO_CALLS


def test_conversational_geval_without_criteria_is_left_out_of_the_default_set(
    tmp_path: Path,
) -> None:
    from convoeval.runner._plan import candidates

    # The default set of an LLM judge (what a run with no -m chooses from); a fake judge that
    # fails every step would now be a bug that stops the run, so the choice is read directly.
    pool, skipped = candidates(offline=False)
    assert "conversational_geval" not in [m.name for m in pool]
    assert "knowledge_retention" in [m.name for m in pool]
    why = skipped["conversational_geval"]
    assert "criteria" in why and "-m conversational_geval:criteria=" in why
    judge = FakeJudge({})
    samples = [tool_sample(0)]
    # Named with -m it still runs (and says, per record, that it has no criteria).
    named = evaluate(
        samples, ["conversational_geval"], judge=judge, output=tmp_path / "g.jsonl",
        show_progress=False,
    )  # fmt: skip
    row = next(iter(named.rows()))
    assert row["scores"]["conversational_geval"] is None
    assert "no criteria" in row["reasons"]["conversational_geval"]
