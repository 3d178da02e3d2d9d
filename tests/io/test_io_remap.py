"""Other layouts read without a conversion script (issue 12 item 6): `messages_field`, `fields`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from _shared_data import TAU_BENCH, shared_file
from convoeval.io import DataError, read_records, read_samples, record_to_sample
from convoeval.io.records import convert

RUN = {
    "task_id": 7,
    "reward": 1.0,
    "trial": 2,
    "note": None,
    "info": {
        "task": {
            "actions": [
                {"name": "get_user", "kwargs": {"user_id": "u1"}},
                {"name": "cancel", "arguments": '{"order": 5}'},
                {"type": "function", "function": {"name": "refund", "arguments": {"amount": 2}}},
                {"name": "noop", "args": {}},
            ]
        },
        "cost": [1, 2],
    },
    "traj": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Cancel order 5."},
        {"role": "assistant", "content": "Done."},
    ],
}
CALLS = [
    {"name": "get_user", "args": {"user_id": "u1"}},
    {"name": "cancel", "args": {"order": 5}},
    {"name": "refund", "args": {"amount": 2}},
    {"name": "noop", "args": {}},
]


def _write(tmp_path: Path, records: list[Any], name: str = "runs.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_a_trajectory_file_reads_with_messages_field_and_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, [RUN])
    fields = {"reference_tool_calls": "info.task.actions", "metadata.cost": "info.cost"}
    (sample,) = read_samples(path, messages_field="traj", fields=fields)
    data = sample.to_dict()
    assert [m["type"] for m in data["user_input"]] == ["system", "human", "ai"]
    assert data["reference_tool_calls"] == CALLS
    # plain top-level values are kept, other objects left out unless mapped
    assert data["metadata"] == {
        "task_id": 7,
        "reward": 1.0,
        "trial": 2,
        "note": None,
        "cost": [1, 2],
    }
    assert "id" not in data


def test_field_paths_index_lists_and_ids_become_text() -> None:
    record = {"log": {"turns": [{"messages": [{"type": "human", "content": "hi"}]}]}, "n": 3}
    sample, errors, layout = convert(
        record, messages_field="log.turns.0.messages", fields={"id": "n", "reference": "log.x"}
    )
    assert errors == [] and layout == "ragas" and sample is not None
    assert sample.id == "3" and sample.reference is None  # a missing path: the field is absent
    assert sample.metadata is None  # 'n' was mapped, so it is not kept again


def test_fields_alone_take_only_the_keys_they_read() -> None:
    record = {
        "user_input": [{"type": "human", "content": "hi"}],
        "info": {"actions": [{"name": "f", "kwargs": {"a": 1}}]},
        "extra": 1,
    }
    sample, errors, _ = convert(record, fields={"reference_tool_calls": "info.actions"})
    assert sample is None and errors == ["extra: unknown field (not part of the schema)"]
    del record["extra"]
    sample, errors, _ = convert(record, fields={"reference_tool_calls": "info.actions"})
    assert errors == [] and sample is not None
    assert sample.to_dict()["reference_tool_calls"] == [{"name": "f", "args": {"a": 1}}]


def test_mapping_problems_name_the_record_and_path(tmp_path: Path) -> None:
    bad_args = {**RUN, "info": {"task": {"actions": [{"name": "f", "arguments": "{oops"}]}}}
    path = _write(tmp_path, [{"messages": []}, bad_args])
    problems = [
        p
        for r in read_records(
            path, messages_field="traj", fields={"reference_tool_calls": "info.task.actions"}
        )
        for p in r.problems()
    ]
    assert problems == [
        f"{path}: [0]: traj: the conversation (messages_field) is not in this record; it has: "
        "'messages'",
        f"{path}: [1]: info.task.actions[0].arguments: not valid JSON (Expecting property name "
        "enclosed in double quotes at line 1 column 2)",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fields": {"user_input": "x"}}, "fields: cannot map 'user_input': use a sample field"),
        ({"fields": {"score": "x"}}, "fields: cannot map 'score': use a sample field"),
        (
            {"fields": {"reference_tool_call": "x"}},
            "fields: cannot map 'reference_tool_call' (did you mean 'reference_tool_calls'?)",
        ),
        ({"fields": {"metadata.": "x"}}, "fields: cannot map 'metadata.'"),
        ({"fields": {"reference": "a..b"}}, "is not a dotted path"),
        ({"messages_field": ".traj"}, "messages_field: '.traj' is not a dotted path"),
    ],
)
def test_bad_options_are_refused_before_reading(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        read_records(_write(tmp_path, [RUN]), **options)


def test_a_top_level_integer_id_becomes_text() -> None:
    record = {"id": 12, "chat": [{"role": "user", "content": "hi"}]}
    sample, errors, _ = convert(record, messages_field="chat")
    assert errors == [] and sample is not None and sample.id == "12"


def test_record_to_sample_takes_the_same_options() -> None:
    sample = record_to_sample(RUN, messages_field="traj", fields={"id": "task_id"})
    assert sample.id == "7" and sample.reference_tool_calls is None
    with pytest.raises(
        DataError, match=r"the conversation \(messages_field\) is not in this record"
    ):
        record_to_sample(RUN, messages_field="trajectory")


def test_forced_format_picks_the_conversation_layout() -> None:
    record = {"chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    sample, errors, layout = convert(record, "deepeval", messages_field="chat")
    assert errors == [] and layout == "deepeval" and sample is not None
    assert convert(record, messages_field="chat")[2] == "openai"


def test_the_tau_bench_file_reads_with_the_options() -> None:
    tau_bench = shared_file(TAU_BENCH)
    fields = {"reference_tool_calls": "info.task.actions"}
    records = list(read_records(tau_bench, messages_field="traj", fields=fields))
    assert len(records) == 200 and all(r.ok for r in records)
    first = records[0].sample
    assert first is not None and first.reference_tool_calls
    assert first.reference_tool_calls[0].name == "book_reservation"
    assert set(first.metadata or {}) == {"task_id", "reward", "trial"}
    rewards = {r.sample.metadata["reward"] for r in records if r.sample and r.sample.metadata}
    assert rewards == {0.0, 1.0}
    without = next(iter(read_records(tau_bench)))
    assert without.problems()[0].endswith(
        "it has: 'task_id', 'reward', 'info', 'traj', 'trial'; if 'traj' holds the "
        'conversation, give --messages-field traj (Python: messages_field="traj")'
    )
