"""Bad records are reported with their exact `file:line: path: what` text, every one of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval.io import DataError, DataFileError, read_records, read_samples, record_to_sample

H = {"type": "human", "content": "hi"}
A = {"type": "ai", "content": "hello"}
BAD_ARGS = {
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": 1,}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1, 2]"}},
            ],
        },
    ]
}
LINES = [
    json.dumps({"user_input": [H, A]}),
    json.dumps({"user_input": [H, A]}),
    json.dumps({"user_input": [H, A, H, A, {"type": "tool", "content": "42"}]}),
    '{"user_input": [{"type": "human", "content": "hi"}',
    "",
    '["not", "an", "object"]',
    json.dumps({"user_input": [H, {"type": "assistant", "content": "x"}]}),
    json.dumps({"user_input": [H, A], "topics": ["a"]}),
    json.dumps({"user_input": [{"type": "human"}]}),
    json.dumps({"user_input": [{"type": "human", "content": 7}], "reference_topics": "travel"}),
    json.dumps({"conversation": [H, A], "id": "x"}),
    json.dumps(BAD_ARGS),
    "   ",
    json.dumps({"user_input": [H, A]}),
    "42",
]
EXPECTED = [
    "bad.jsonl:3: user_input[4]: ToolMessage must follow an AIMessage where tools were called.",
    "bad.jsonl:4: invalid JSON: Expecting ',' delimiter (column 51)",
    "bad.jsonl:6: a record must be a JSON object (one conversation), got a list",
    "bad.jsonl:7: user_input[1]: unknown message type 'assistant' (expected one of human, ai, "
    "tool, system); did you mean 'ai'?",
    "bad.jsonl:8: topics: unknown field (not part of the schema)",
    "bad.jsonl:9: user_input[0].content: required field is missing",
    "bad.jsonl:10: user_input[0].content: must be a string, got int",
    "bad.jsonl:10: reference_topics: must be a list, got str",
    "bad.jsonl:11: unknown layout: a record needs one of the keys 'user_input' (Ragas layout), "
    "'messages' (OpenAI chat layout), 'turns' (DeepEval layout); it has: 'conversation', 'id'; "
    "if 'conversation' holds the conversation, give --messages-field conversation "
    '(Python: messages_field="conversation")',
    "bad.jsonl:12: messages[1].tool_calls[0].function.arguments: not valid JSON (Expecting "
    "property name enclosed in double quotes at line 1 column 9)",
    "bad.jsonl:12: messages[1].tool_calls[1].function.arguments: must be a JSON object, got a list",
    "bad.jsonl:15: a record must be a JSON object (one conversation), got a number",
]


@pytest.fixture
def bad_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)  # so that the file is named as given: bad.jsonl
    Path("bad.jsonl").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return "bad.jsonl"


def test_every_bad_line_is_reported_exactly(bad_file: str) -> None:
    records = list(read_records(bad_file))
    assert [r.line for r in records] == [1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 14, 15]
    assert [p for r in records for p in r.problems()] == EXPECTED
    assert [r.line for r in records if r.ok] == [1, 2, 14]
    assert records[2].where == "bad.jsonl:3" and records[2].layout == "ragas"
    assert records[2].errors == [EXPECTED[0].removeprefix("bad.jsonl:3: ")]


def test_read_samples_stops_at_first_bad_record(bad_file: str) -> None:
    samples = read_samples(bad_file)
    assert next(samples).user_input[0].content == "hi"
    assert next(samples).user_input[1].content == "hello"
    with pytest.raises(DataError) as caught:
        next(samples)
    assert str(caught.value) == EXPECTED[0]
    assert caught.value.problems == [EXPECTED[0]]


def test_data_error_lists_every_problem_of_the_record(bad_file: str) -> None:
    Path("two.jsonl").write_text(LINES[0] + "\n" + LINES[9] + "\n", encoding="utf-8")
    samples = read_samples("two.jsonl")
    next(samples)
    with pytest.raises(DataError) as caught:
        next(samples)
    expected = [line.replace("bad.jsonl:10:", "two.jsonl:2:") for line in EXPECTED[6:8]]
    assert caught.value.problems == expected
    assert str(caught.value) == "\n".join(expected)


def test_json_array_errors_name_the_element(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps([{"user_input": [H, A]}, "oops", {"user_input": []}]), "utf-8")
    problems = [p for r in read_records(path) for p in r.problems()]
    assert problems == [
        f"{path}: [1]: a record must be a JSON object (one conversation), got a string",
        f"{path}: [2]: user_input: the conversation is empty: it needs at least one message.",
    ]


def test_csv_errors_name_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    ragas_repr = "[HumanMessage(content='hi')]"
    path.write_text(
        "id,user_input,reference_topics\n"
        'a,"[{""type"": ""human"", ""content"": ""hi""}]","[""x""]"\n'
        "\n"
        f'b,"{ragas_repr}",\n'
        'c,"[{""type"": ""human"", ""content"": ""hi""}]",[x]\n'
        'd,"[{""type"": ""human"", ""content"": ""hi""}]",,extra\n',
        encoding="utf-8",
    )
    records = list(read_records(path))
    assert [r.line for r in records] == [2, 4, 5, 6]
    assert [p for r in records for p in r.problems()] == [
        f"{path}:4: user_input: this cell is not valid JSON (Expecting value at character 2): "
        'expected a JSON list of messages such as [{"type": "human", "content": "Hi"}]; it '
        "looks like a Python repr (as Ragas's to_csv writes): export the data as JSON",
        f"{path}:5: reference_topics: this cell is not valid JSON (Expecting value at character 2)"
        ': expected a JSON list of strings such as ["orders", "shipping"]',
        f"{path}:6: this row has 4 cells but the header has 3 columns",
    ]


def test_forced_format_and_ambiguous_layout() -> None:
    ragas = {"user_input": [H, A]}
    with pytest.raises(DataError) as caught:
        record_to_sample(ragas, format="openai")
    assert caught.value.problems == [
        "messages: required field is missing (format 'openai' expects the OpenAI chat layout)"
    ]
    with pytest.raises(DataError) as caught:
        record_to_sample({**ragas, "turns": []})
    assert caught.value.problems == [
        "ambiguous layout: the record has 'user_input' (Ragas layout) and 'turns' (DeepEval "
        "layout); keep one key, or choose the layout with format=..."
    ]
    with pytest.raises(DataError) as caught:
        record_to_sample({**ragas, "messages": []}, format="ragas")
    assert caught.value.problems == ["messages: unknown field (not part of the schema)"]
    with pytest.raises(
        ValueError, match="format must be one of auto, ragas, openai, deepeval, langchain"
    ):
        record_to_sample(ragas, format="yaml")


def test_deepeval_layout_errors() -> None:
    cases = [
        ({"turns": []}, ["turns: is empty: a conversation needs at least one turn"]),
        (
            {
                "turns": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}],
                "mood": "happy",
            },
            [
                "turns[1].role: Input should be 'user', 'assistant', 'tool' or 'system'",
                "mood: unknown field (not part of the DeepEval layout)",
            ],
        ),
        (
            {"turns": [{"role": "human", "content": "hi"}, {"role": "ai", "content": "x"}]},
            [
                "turns[0].role: Input should be 'user', 'assistant', 'tool' or 'system'; did you "
                "mean 'user'?",
                "turns[1].role: Input should be 'user', 'assistant', 'tool' or 'system'; did you "
                "mean 'assistant'?",
            ],
        ),
        (
            {"turns": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]},
            [
                "turns[1]: ToolMessage must be preceded by an AIMessage somewhere in the "
                "conversation."
            ],
        ),
        (
            {
                "turns": [
                    {"input": "a", "actual_output": "b"},
                    {"input": "c", "steps": [{"type": "tool", "content": "x"}]},
                ]
            },
            [
                "turns[1] (message 4 of the conversation): ToolMessage must follow an AIMessage or "
                "another ToolMessage."
            ],
        ),
        (
            {
                "turns": [{"role": "user", "content": "hi"}],
                "id": "a",
                "name": "b",
                "rubrics": ["x"],
            },
            [
                "id: give 'id' or 'name' (its DeepEval name), not both",
                "rubrics: must be an object (a JSON dict), got list",
            ],
        ),
        (
            {"turns": ["hi"]},
            [
                "turns[0]: expected a turn with 'role' and 'content', or an "
                "exchange with 'input' and 'actual_output'"
            ],
        ),
    ]
    for record, expected in cases:
        with pytest.raises(DataError) as caught:
            record_to_sample(record)
        assert caught.value.problems == expected, record


def test_unreadable_files_raise_data_file_error(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"missing\.jsonl: no such file"):
        read_records(tmp_path / "missing.jsonl")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(
        DataFileError,
        match=r"notes\.txt: unknown data file type: expected a "
        r"\.jsonl, \.ndjson, \.json, \.csv or \.parquet",
    ):
        read_records(tmp_path / "notes.txt")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(DataFileError, match="is a directory"):
        read_records(tmp_path / "dir.jsonl")
    broken = tmp_path / "broken.json"
    broken.write_text('[{"user_input": []},\n  oops]', encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        list(read_records(broken))
    assert str(caught.value) == (
        f"{broken}: [1]: not valid JSON: Expecting value at line 2 column 3"
    )
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    with pytest.raises(DataFileError, match=r"garbage\.parquet: not a readable Parquet file"):
        list(read_records(garbage))


def test_invalid_utf8_line_is_a_record_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    good = json.dumps({"user_input": [H]}).encode()
    path.write_bytes(good + b"\n" + b'{"user_input": "caf\xe9"}\n' + good + b"\n")
    problems = [p for r in read_records(path) for p in r.problems()]
    assert problems == [f"{path}:2: not UTF-8 text (byte 20 of the line)"]


@pytest.mark.parametrize(
    ("module", "call", "extra"),
    [
        ("pyarrow", "list(read_records('x.parquet'))", "parquet"),
        ("pandas", "to_pandas([])", "pandas"),
    ],
)
def test_missing_optional_dependency_names_the_extra(
    tmp_path: Path, module: str, call: str, extra: str
) -> None:
    """Run in a fresh interpreter where the optional module cannot be imported."""
    (tmp_path / "x.parquet").write_bytes(b"")
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from convoeval.io import read_records, to_pandas\n"
        f"try:\n    {call}\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert f'pip install "convoeval[{extra}]"' in done.stdout, done.stderr


def test_openai_role_slips_get_a_hint() -> None:
    with pytest.raises(DataError) as caught:
        record_to_sample({"messages": [{"role": "human", "content": "hi"}]})
    assert caught.value.problems == [
        "messages[0].role: unknown role 'human' (expected one of system, developer, user, "
        "assistant, tool, function); did you mean 'user'?"
    ]
