"""Exports nobody here wrote: a bot traced by the real instrumentation libraries, its spans written
by the OTLP exporter's encoder (`_instrumented_bot.py`), read back, validated and scored."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _instrumented_bot import ANSWERS, SESSION, SYSTEM, TURNS, WEATHER
from test_otel_conventions import flat, only

from _cli import convoeval
from convoeval import evaluate

HERE = Path(__file__).resolve().parent
MODES = ("genai", "events", "openinference")
EXPECTED = [
    ("system", SYSTEM),
    ("human", TURNS[0]),
    ("ai", "", [("get_weather", {"city": "Paris"}, "call_w1")]),
    ("tool", WEATHER, "call_w1"),
    ("ai", ANSWERS[0]),
    ("human", TURNS[1]),
    ("ai", ANSWERS[1]),
]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each mode's export, made once by running the instrumented bot in its own process."""
    folder = tmp_path_factory.mktemp("exports")
    for mode in MODES:
        command = [sys.executable, str(HERE / "_instrumented_bot.py"), mode]
        command += [str(folder / f"{mode}.jsonl"), str(folder / f"{mode}.json")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
    return {mode: folder / f"{mode}.jsonl" for mode in MODES}


@pytest.mark.parametrize("mode", MODES)
def test_the_instrumented_bot_is_one_conversation(exports: dict[str, Path], mode: str) -> None:
    """Two user turns in separate traces, a tool call and its result: one conversation, each
    message once, grouped by the session, with the model, token usage and span ids kept."""
    record = only(exports[mode], "auto")
    assert flat(record) == EXPECTED
    assert record.notes == []
    sample = record.sample
    assert sample is not None and sample.id == SESSION
    otel = (sample.metadata or {})["otel"]
    key = "session.id" if mode == "openinference" else "gen_ai.conversation.id"
    assert (otel["grouped_by"], otel["conversation_id"]) == (key, SESSION)
    assert otel["models"] == ["scripted-model"]
    assert otel["usage"] == {"input_tokens": 60, "output_tokens": 15}
    assert otel["service_name"] == "weather-bot"
    assert [s["type"] for s in otel["spans"]] == ["llm", "tool", "llm", "llm"]
    ids = {(s["trace_id"], s["span_id"]) for s in otel["spans"]}
    for message in sample.user_input:
        meta = (message.metadata or {})["otel"]
        assert (meta["trace_id"], meta["span_id"]) in ids
    if mode == "openinference":
        assert [t.name for t in sample.available_tools or []] == ["get_weather"]


def test_the_pretty_printed_json_export_reads_the_same(exports: dict[str, Path]) -> None:
    record = only(exports["genai"].with_suffix(".json"), "auto")
    assert flat(record) == EXPECTED
    assert record.where.endswith(".json: resourceSpans[0].scopeSpans[0].spans[0]")


def test_validate_and_run_score_the_export(exports: dict[str, Path], tmp_path: Path) -> None:
    shutil.copy(exports["genai"], tmp_path / "traces.jsonl")
    done = convoeval("validate", "traces.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "1 record, all valid\n", "")
    done = convoeval("run", "traces.jsonl", "-m", "conversation_relevancy", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [
        json.loads(line) for line in (tmp_path / "traces.results.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 1
    assert (rows[0]["id"], rows[0]["where"]) == (SESSION, f"traces.jsonl:1 (id '{SESSION}')")
    assert rows[0]["scores"]["conversation_relevancy"] is not None
    assert rows[0]["sample"]["metadata"]["otel"]["trace_ids"] == _trace_ids(exports["genai"])


def _trace_ids(path: Path) -> list[str]:
    """The trace ids of the export's chat spans, in start order, as hex."""
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        for group in json.loads(line).get("resourceSpans", []):
            for scope in group["scopeSpans"]:
                spans.extend(scope["spans"])
    spans.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return list(dict.fromkeys(base64.b64decode(s["traceId"]).hex() for s in spans))


def test_skip_invalid_scores_the_rest_and_lists_the_bad(
    exports: dict[str, Path], tmp_path: Path
) -> None:
    data = tmp_path / "traces.jsonl"
    no_trace_id = {"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "00f067aa0ba902b7"}]}]}]}
    data.write_text(exports["openinference"].read_text() + json.dumps(no_trace_id) + "\n")
    done = convoeval("validate", "traces.jsonl", "--format", "otel", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "2 records, 1 invalid\n"
    assert done.stderr.startswith("traces.jsonl:2: ")
    done = convoeval(
        "run", "traces.jsonl", "--format", "otel", "-m", "conversation_relevancy", "--skip-invalid",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "skipped 1 invalid record:\n  traces.jsonl:2: " in done.stderr
    rows = (tmp_path / "traces.results.jsonl").read_text().splitlines()
    assert [json.loads(row)["id"] for row in rows] == [SESSION]


def test_evaluate_reads_an_export_by_path(exports: dict[str, Path], tmp_path: Path) -> None:
    result = evaluate(
        str(exports["events"]),
        ["conversation_relevancy"],
        format="otel",
        output=tmp_path / "r.jsonl",
    )
    rows = list(result.rows())
    assert [row["id"] for row in rows] == [SESSION]
