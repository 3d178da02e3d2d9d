"""Every writer's output reads back as equal samples: JSONL, JSON, CSV, Parquet, pandas, layouts."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from _io_samples import NESTED_ARGS, TRICKY, samples

from convoeval import MultiTurnSample
from convoeval.io import (
    DataFileError,
    from_pandas,
    read_records,
    read_samples,
    record_to_sample,
    sample_to_record,
    to_pandas,
    write_samples,
)

SUFFIXES = [".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".jsonl.gz", ".json.gz", ".csv.gz"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_ragas_layout_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    original = samples()
    assert write_samples(iter(original), path) == 3
    back = list(read_samples(path))
    assert back == original
    # nested arguments keep their None values, types and content (key order aside)
    assert back[0].user_input[2].tool_calls[0].args == NESTED_ARGS  # type: ignore[union-attr]
    assert back[1].user_input[1].tool_calls == []  # type: ignore[union-attr]
    assert back[1].user_input[2].tool_calls is None  # type: ignore[union-attr]
    assert back[2].rubrics is not None and back[0].rubrics is None
    records = list(read_records(path))
    assert all(r.ok and r.layout == "ragas" for r in records)


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".jsonl.gz"])
@pytest.mark.parametrize("layout", ["openai", "deepeval"])
def test_other_layouts_round_trip(tmp_path: Path, suffix: str, layout: str) -> None:
    path = tmp_path / f"data{suffix}"
    original = samples()
    assert write_samples(original, path, layout=layout) == 3
    records = list(read_records(path))
    assert [r.layout for r in records] == [layout] * 3
    assert [r.sample for r in records] == original
    key = {"openai": "messages", "deepeval": "turns"}[layout]
    first_line = _first_record(path)
    assert key in first_line and "user_input" not in first_line


def _first_record(path: Path) -> dict[str, object]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    data = json.loads(text) if ".jsonl" not in path.name else json.loads(text.splitlines()[0])
    result: dict[str, object] = data[0] if isinstance(data, list) else data
    return result


@pytest.mark.parametrize("layout", ["ragas", "openai", "deepeval"])
def test_record_functions_round_trip(layout: str) -> None:
    for sample in samples():
        record = sample_to_record(sample, layout)
        json_record = json.loads(json.dumps(record))
        assert record_to_sample(json_record) == sample
        assert record_to_sample(json_record, format=layout) == sample


def test_openai_record_shape() -> None:
    record = sample_to_record(samples()[0], "openai")
    assert record["id"] == "conv-1"
    assert record["reference_topics"] == ["travel", "weather"]
    assert record["messages"][0] == {
        "role": "system",
        "content": "You are a travel agent. Use tools.",
    }
    call_message = record["messages"][2]
    assert call_message["content"] is None
    assert call_message["tool_calls"][1] == {
        "id": "call_2",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city":"Zürich, CH"}'},
    }
    assert json.loads(call_message["tool_calls"][0]["function"]["arguments"]) == NESTED_ARGS
    assert record["messages"][3] == {
        "role": "tool",
        "content": '{"hits": 2}',
        "tool_call_id": "call_1",
    }


def test_deepeval_exchange_records_read_and_write_back(tmp_path: Path) -> None:
    record = {
        "turns": [
            {
                "input": "Book a flight",
                "actual_output": "Done.",
                "tools_called": [{"name": "book", "args": {"to": "SEA", "pax": [{"n": 1}]}}],
            },
            {"input": "Thanks", "actual_output": "You're welcome."},
        ],
        "scenario": "booking",
        "expected_outcome": "a flight is booked",
        "reference_topics": ["flights"],
        "name": "case-7",
    }
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (sample,) = list(read_samples(path))
    assert sample.id == "case-7" and sample.reference == "a flight is booked"
    assert sample.reference_topics == ["flights"]
    assert [m.type for m in sample.user_input] == ["human", "ai", "ai", "human", "ai"]
    assert sample.predicted_tool_calls()[0].args == {"to": "SEA", "pax": [{"n": 1}]}
    out = tmp_path / "again.json"
    write_samples([sample], out, layout="deepeval")
    assert list(read_samples(out)) == [sample]


def test_ragas_model_dump_lines_read_back(tmp_path: Path) -> None:
    """Ragas writes `model_dump()` per line, with nulls for unset fields: that reads back."""
    path = tmp_path / "ragas.jsonl"
    original = samples()
    path.write_text(
        "".join(json.dumps(s.model_dump(mode="json")) + "\n" for s in original), encoding="utf-8"
    )
    assert list(read_samples(path)) == original


def test_csv_layout_is_fixed_columns_with_json_cells(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    write_samples(samples(), path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == [
        "id",
        "user_input",
        "reference",
        "reference_tool_calls",
        "reference_topics",
        "rubrics",
        "metadata",
        "chatbot_role",
        "scenario",
        "expected_outcome",
        "user_description",
        "context",
        "available_tools",
    ]
    assert all(len(row) == 13 for row in rows)
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["reference"] == "" and first["rubrics"] == ""  # absent: empty cells
    assert json.loads(first["user_input"])[1] == {"type": "human", "content": TRICKY}
    third = dict(zip(rows[0], rows[3], strict=True))
    assert third["id"] == "" and third["reference"].startswith("The agent rates")
    assert json.loads(third["reference_topics"]) == []


def test_csv_line_numbers_follow_multiline_cells(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    original = samples()
    write_samples([original[2], original[0], original[1]], path)
    # header on line 1; the 3rd sample's reference cell spans lines 2-3
    assert [r.line for r in read_records(path)] == [2, 4, 5]


def test_parquet_columns_are_strings_with_nulls(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    write_samples(samples(), path)
    table = pq.read_table(path)
    assert {str(t) for t in table.schema.types} == {"string"}
    rows = table.to_pylist()
    assert rows[0]["rubrics"] is None and rows[2]["rubrics"] is not None
    assert [r.line for r in read_records(path)] == [1, 2, 3]


def test_parquet_with_native_nested_columns_reads(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "native.parquet"
    rows = [
        {
            "user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "yo"}],
            "reference_topics": ["greeting"],
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    (sample,) = list(read_samples(path))
    assert sample.reference_topics == ["greeting"]
    assert sample.user_input[1].content == "yo"


def test_pandas_round_trip() -> None:
    original = samples()
    frame = to_pandas(original)
    assert list(frame.columns) == [
        "id",
        "user_input",
        "reference",
        "reference_tool_calls",
        "reference_topics",
        "rubrics",
        "metadata",
        "chatbot_role",
        "scenario",
        "expected_outcome",
        "user_description",
        "context",
        "available_tools",
    ]
    assert frame["rubrics"].iloc[0] is None and isinstance(frame["rubrics"].iloc[2], str)
    assert list(from_pandas(frame)) == original


def test_pandas_round_trip_through_parquet_file(tmp_path: Path) -> None:
    import pandas as pd

    path = tmp_path / "frame.parquet"
    to_pandas(samples()).to_parquet(path)
    assert list(from_pandas(pd.read_parquet(path))) == samples()
    assert list(read_samples(path)) == samples()


def test_pandas_native_cells_and_nan() -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {
            "user_input": [
                [{"type": "human", "content": "a"}],
                [{"type": "human", "content": "b"}],
            ],
            "reference": ["ref", float("nan")],
        }
    )
    back = list(from_pandas(frame))
    assert back == [
        MultiTurnSample.model_validate(
            {"user_input": [{"type": "human", "content": "a"}], "reference": "ref"}
        ),
        MultiTurnSample.model_validate({"user_input": [{"type": "human", "content": "b"}]}),
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
def test_empty_dataset_round_trip(tmp_path: Path, suffix: str) -> None:
    """An empty dataset writes a valid empty file; reading it says there is nothing to check
    (issue 12 item 7: an empty input is an input error, not "0 records, all valid")."""
    path = tmp_path / f"empty{suffix}"
    assert write_samples([], path) == 0
    with pytest.raises(DataFileError, match=r"empty\.\w+: no records: the file holds no"):
        list(read_records(path))


@pytest.mark.parametrize(
    ("suffix", "kept"), [(".jsonl", True), (".parquet", True), (".csv", False)]
)
def test_empty_string_reference(tmp_path: Path, suffix: str, kept: bool) -> None:
    """Parquet and JSON keep `reference=""`; CSV cannot tell it from absent (documented)."""
    sample = samples()[2].model_copy(update={"reference": ""})
    path = tmp_path / f"data{suffix}"
    write_samples([sample], path)
    (back,) = list(read_samples(path))
    assert back.reference == ("" if kept else None)
    assert next(from_pandas(to_pandas([sample]))).reference == ""
