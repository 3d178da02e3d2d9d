"""Hostile and non-standard input (issue 11 items 10 and 12): one set of rules for every reader.

Deep nesting, NaN/Infinity/overflowing numbers and duplicate keys are refused by the JSONL, JSON,
CSV and Parquet readers and by `convert` (Python objects, as `evaluate()` and pandas give them)
with `FILE:LINE: path: problem`, and reading goes on with the next record.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from convoeval.io import DataError, from_pandas, read_records
from convoeval.io.records import convert
from convoeval.io.strict_json import MAX_DEPTH, TOO_DEEP

H = {"type": "human", "content": "hi"}
GOOD = {"user_input": [H, {"type": "ai", "content": "hello"}]}


def nested(depth: int) -> Any:
    """A dict `depth` levels deep (1: `{}`)."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def with_args(args: Any) -> dict[str, Any]:
    """A Ragas record whose one tool call has these arguments (they sit at record depth 6)."""
    call = {"name": "f", "args": args}
    return {"user_input": [H, {"type": "ai", "content": "", "tool_calls": [call]}]}


def problems(path: Path) -> list[str]:
    return [p for record in read_records(path) for p in record.problems()]


def test_the_depth_limit_is_exact() -> None:
    assert MAX_DEPTH == 64 and TOO_DEEP == "nesting deeper than 64"
    sample, errors, _ = convert(with_args(nested(MAX_DEPTH - 5)))  # the record is 64 deep
    assert errors == [] and sample is not None
    assert sample.to_dict()["user_input"][1]["tool_calls"][0]["args"] == nested(MAX_DEPTH - 5)
    assert convert(with_args(nested(MAX_DEPTH - 4)))[1] == [TOO_DEEP]


def test_jsonl_deep_records_are_reported_and_reading_goes_on(tmp_path: Path) -> None:
    """10,000 levels raised RecursionError; 300-deep arguments passed and broke `run` later."""
    path = tmp_path / "deep.jsonl"
    lines = [
        json.dumps(GOOD),
        "[" * 10_000 + "]" * 10_000,
        json.dumps(with_args(nested(300))),
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": '
        + "[" * 5000
        + "]" * 5000
        + "}",
        json.dumps({"user_input": [{"type": "tool", "content": "orphan"}]}),
        json.dumps(GOOD),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = list(read_records(path))
    assert [r.ok for r in records] == [True, False, False, False, False, True]
    assert problems(path) == [
        f"{path}:2: nesting deeper than 64",
        f"{path}:3: user_input[1].tool_calls[0].args: nesting deeper than 64",
        f"{path}:4: nesting deeper than 64",
        f"{path}:5: user_input[0]: ToolMessage must be preceded by an AIMessage somewhere in the "
        "conversation.",
    ]


def test_json_array_deep_element_is_skipped_by_index(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    deep = "[" * 10_000 + '"]" ' + "]" * 10_000  # a string holding a bracket, too
    path.write_text(
        "["
        + json.dumps(GOOD)
        + ",\n"
        + deep
        + ",\n"
        + json.dumps(with_args(nested(300)))
        + ",\nNaN,\n"
        + json.dumps(GOOD)
        + "]",
        encoding="utf-8",
    )
    assert problems(path) == [
        f"{path}: [1]: nesting deeper than 64",
        f"{path}: [2]: user_input[1].tool_calls[0].args: nesting deeper than 64",
        f"{path}: [3]: NaN is not valid JSON (only finite numbers are)",
    ]
    assert [r.ok for r in read_records(path)] == [True, False, False, False, True]


NON_STANDARD = [
    ('{"user_input": [{"type": "human", "content": "x"}], "metadata": {"score": NaN}}', "NaN"),
    (
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": {"s": Infinity}}',
        "Infinity",
    ),
    (
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": {"s": -Infinity}}',
        "-Infinity",
    ),
]


@pytest.mark.parametrize(("line", "name"), NON_STANDARD)
def test_jsonl_non_finite_numbers_are_refused(tmp_path: Path, line: str, name: str) -> None:
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n" + json.dumps(GOOD) + "\n", "utf-8")
    expected = f"{path}:2: metadata.{'score' if name == 'NaN' else 's'}: {name} is not valid JSON"
    assert problems(path) == [expected + " (only finite numbers are)"]


def test_jsonl_overflowing_number_and_duplicate_keys(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": {"n": 1e400}}\n'
        '{"user_input": [{"type": "human", "content": "a", "content": "b"}]}\n'
        '{"id": "1", "id": "2", "user_input": [{"type": "human", "content": "a"}]}\n'
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": {"n": 1e300}}\n',
        encoding="utf-8",
    )
    assert problems(path) == [
        f"{path}:1: metadata.n: the number 1e400 is too large (it overflows to infinity)",
        f"{path}:2: user_input[0]: duplicate key 'content' in one object",
        f"{path}:3: duplicate key 'id' in one object",
    ]


def test_csv_cells_follow_the_same_rules(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    user = json.dumps([H])
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_input", "metadata"])
        writer.writerow([user, '{"a": NaN}'])
        writer.writerow([user, '{"a": 1, "a": 2}'])
        writer.writerow([user, "[" * 3000 + "]" * 3000])
        writer.writerow([user, json.dumps({"x": nested(70)})])
        writer.writerow([user, '{"a": 1}'])
    assert problems(path) == [
        f"{path}:2: metadata.a: NaN is not valid JSON (only finite numbers are)",
        f"{path}:3: metadata: duplicate key 'a' in one object",
        f"{path}:4: metadata: nesting deeper than 64",
        f"{path}:5: metadata: nesting deeper than 64",
    ]


def test_openai_argument_strings_follow_the_same_rules(tmp_path: Path) -> None:
    def record(arguments: str) -> str:
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return json.dumps(
            {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}
        )

    path = tmp_path / "openai.jsonl"
    deep = json.dumps(nested(300))
    lines = [record('{"a": NaN}'), record('{"a": 1, "a": 1}'), record(deep), record('{"a": 1}')]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    where = "messages[0].tool_calls[0].function.arguments"
    assert problems(path) == [
        f"{path}:1: {where}.a: NaN is not valid JSON (only finite numbers are)",
        f"{path}:2: {where}: duplicate key 'a' in one object",
        f"{path}:3: user_input[0].tool_calls[0].args: nesting deeper than 64",
    ]


def test_python_objects_follow_the_same_rules() -> None:
    """What `evaluate()` gets as dicts goes through `convert`: the same problems, with paths."""
    record = with_args({"x": [1.5, math.nan], "y": {"z": math.inf}})
    sample, errors, _ = convert(record)
    assert sample is None
    assert sorted(errors) == [
        "user_input[1].tool_calls[0].args.x[1]: NaN is not valid JSON (only finite numbers are)",
        "user_input[1].tool_calls[0].args.y.z: Infinity is not valid JSON (only finite numbers "
        "are)",
    ]
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert convert({**GOOD, "metadata": cyclic})[1] == [TOO_DEEP]
    assert convert({**GOOD, "metadata": {"ok": 1.5}})[1] == []
    numpy = pytest.importorskip("numpy")
    assert convert({**GOOD, "metadata": {"x": [numpy.float64("nan")]}})[1] == [
        "metadata.x[0]: NaN is not valid JSON (only finite numbers are)"
    ]


def test_pandas_rows_follow_the_same_rules() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(
        {"user_input": [[H], [H]], "metadata": [{"a": 1}, {"deep": nested(80)}]}, dtype=object
    )
    with pytest.raises(DataError) as caught:
        list(from_pandas(frame))
    assert caught.value.problems == ["DataFrame:2: nesting deeper than 64"]


def test_parquet_rows_follow_the_same_rules(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "odd.parquet"
    user = json.dumps([H])
    table = pyarrow.table(
        {"user_input": [user, user, user], "metadata": ['{"a": NaN}', '{"a": 1, "a": 2}', None]}
    )
    parquet.write_table(table, path)
    assert problems(path) == [
        f"{path}:1: metadata.a: NaN is not valid JSON (only finite numbers are)",
        f"{path}:2: metadata: duplicate key 'a' in one object",
    ]
