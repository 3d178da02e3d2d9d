"""Ragas interop: its JSONL layout and objects in, the Ragas layout out, nothing lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from _peers import peer
from pydantic import BaseModel

from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
    evaluate,
)
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.ragas import (
    from_ragas,
    from_ragas_dataset,
    to_ragas_dataset,
    to_ragas_dict,
    to_ragas_sample,
)
from convoeval.io import read_samples
from convoeval.metrics import ToolCallAccuracy

#: One line of a Ragas `EvaluationDataset.to_jsonl()` file (`sample.model_dump()` per line).
RAGAS_LINE: dict[str, Any] = {
    "user_input": [
        {"content": "Book table 4 at 8pm", "metadata": None, "type": "human"},
        {
            "content": "",
            "metadata": None,
            "type": "ai",
            "tool_calls": [{"name": "book", "args": {"table": 4, "time": "20:00"}}],
        },
        {"content": "booked", "metadata": None, "type": "tool"},
        {
            "content": "Table 4 is yours at 8pm.",
            "metadata": {"lang": "en"},
            "type": "ai",
            "tool_calls": None,
        },
    ],
    "reference": "The table is booked.",
    "reference_tool_calls": [{"name": "book", "args": {"table": 4, "time": "20:00"}}],
    "rubrics": None,
    "reference_topics": ["restaurants"],
}


class _RagasLikeMessage(BaseModel):
    """Same fields as Ragas's messages (Ragas is too heavy to install for the tests)."""

    content: str
    metadata: dict[str, Any] | None = None
    type: Literal["human", "ai", "tool"]
    tool_calls: list[dict[str, Any]] | None = None


class _RagasLikeSample(BaseModel):
    """Same fields as `ragas.MultiTurnSample`: read through `model_dump()`, duck-typed."""

    user_input: list[_RagasLikeMessage]
    reference: str | None = None
    reference_tool_calls: list[dict[str, Any]] | None = None
    rubrics: dict[str, str] | None = None
    reference_topics: list[str] | None = None


#: What Ragas has no field for: system messages, tool-call ids, the sample's id and metadata.
EXTENDED = MultiTurnSample(
    user_input=[
        SystemMessage(content="Be polite."),
        HumanMessage(content="hi"),
        AIMessage(content="", tool_calls=[ToolCall(name="f", args={"x": 1}, id="c1")]),
        ToolMessage(content="r", tool_call_id="c1", metadata={"ms": 3}),
        AIMessage(content="done"),
        SystemMessage(content="(session closed)"),
    ],
    reference_tool_calls=[ToolCall(name="f", args={"x": 1}, id="c1")],
    id="dropped",
    chatbot_role="dropped too",
    metadata={"dropped": True},
)


def test_ragas_jsonl_line_converts() -> None:
    sample = from_ragas(RAGAS_LINE, id="r1")
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool", "ai"]
    assert sample.predicted_tool_calls() == [
        ToolCall(name="book", args={"table": 4, "time": "20:00"})
    ]
    assert sample.reference_topics == ["restaurants"] and sample.id == "r1"
    assert sample.user_input[3].metadata == {"lang": "en"}


def test_io_reads_ragas_jsonl_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "ragas.jsonl"
    path.write_text(json.dumps(RAGAS_LINE) + "\n", encoding="utf-8")
    assert list(read_samples(path, format="ragas")) == [from_ragas(RAGAS_LINE)]


def test_duck_typed_objects_and_datasets() -> None:
    obj = _RagasLikeSample.model_validate(RAGAS_LINE)
    assert from_ragas(obj) == from_ragas(RAGAS_LINE)

    class Dataset:  # the shape of ragas.EvaluationDataset: a `samples` list
        def __init__(self, samples: list[Any]) -> None:
            self.samples = samples

    assert from_ragas_dataset(Dataset([obj, RAGAS_LINE])) == [from_ragas(RAGAS_LINE)] * 2


async def test_metrics_take_ragas_like_objects() -> None:
    """A Ragas-shaped object, and Ragas-shaped messages as keywords, score as their dicts do."""
    obj = _RagasLikeSample.model_validate(RAGAS_LINE)
    metric = ToolCallAccuracy()
    assert await metric.multi_turn_ascore(obj) == metric.score_sync(RAGAS_LINE).value == 1.0
    messages = [_RagasLikeMessage(content="hi", type="human")]
    assert await metric.ascore(user_input=messages, reference_tool_calls=[]) == 1.0


def test_export_keeps_ids_and_system_messages_in_ragas_metadata() -> None:
    sample = EXTENDED
    data = to_ragas_dict(sample)
    assert data == {
        "user_input": [
            {
                "content": "hi",
                "type": "human",
                "metadata": {"convoeval": {"system_before": [{"content": "Be polite."}]}},
            },
            {
                "content": "",
                "type": "ai",
                "tool_calls": [{"name": "f", "args": {"x": 1}}],
                "metadata": {"convoeval": {"tool_call_ids": ["c1"]}},
            },
            {
                "content": "r",
                "type": "tool",
                "metadata": {"ms": 3, "convoeval": {"tool_call_id": "c1"}},
            },
            {
                "content": "done",
                "type": "ai",
                "metadata": {"convoeval": {"system_after": [{"content": "(session closed)"}]}},
            },
        ],
        "reference_tool_calls": [{"name": "f", "args": {"x": 1}}],
    }
    _RagasLikeSample.model_validate(data)  # fits Ragas's fields
    back = from_ragas(json.loads(json.dumps(data)))
    expected = sample.model_copy(
        update={
            "id": None,
            "metadata": None,
            "chatbot_role": None,
            "reference_tool_calls": [ToolCall(name="f", args={"x": 1})],
        }
    )
    assert back == expected


def test_errors_name_the_problem() -> None:
    with pytest.raises(ConversionError) as caught:
        from_ragas({"messages": []})
    assert caught.value.problems == [
        "sample: must be a Ragas MultiTurnSample or its dict with 'user_input', got an object"
    ]
    bad = {"user_input": [{"content": "x", "type": "human"}, {"content": "r", "type": "tool"}]}
    with pytest.raises(ConversionError) as caught:
        from_ragas_dataset([RAGAS_LINE, bad])
    assert caught.value.problems == [
        "samples[1].user_input[1]: ToolMessage must be preceded by an AIMessage somewhere in the "
        "conversation."
    ]
    only_system = MultiTurnSample(user_input=[SystemMessage(content="x")])
    with pytest.raises(ConversionError, match="only system messages; Ragas has no system message"):
        to_ragas_dict(only_system)


def _ragas() -> Any:
    return peer("ragas", "ragas is not installed (optional, heavy)")


def test_real_ragas_objects() -> None:
    ragas = _ragas()
    sample = from_ragas(RAGAS_LINE)
    theirs = to_ragas_sample(sample)
    assert isinstance(theirs, ragas.MultiTurnSample)
    assert from_ragas(theirs) == sample
    dataset = to_ragas_dataset([sample])
    assert from_ragas_dataset(dataset) == [sample]


def test_real_objects_built_by_hand_round_trip(tmp_path: Path) -> None:
    """Every Ragas field set on real objects; Ragas's own JSONL file reads back the same."""
    ragas = _ragas()
    messages = peer("ragas.messages", "ragas is not installed (optional, heavy)")
    book = messages.ToolCall(name="book", args={"table": 4, "time": "20:00"})
    theirs = ragas.MultiTurnSample(
        user_input=[
            messages.HumanMessage(content="Book table 4 at 8pm", metadata={"lang": "en"}),
            messages.AIMessage(content="On it.", tool_calls=[book], metadata={"ms": 9}),
            messages.ToolMessage(content="booked", metadata={"ms": 3}),
            messages.AIMessage(content="Table 4 is yours at 8pm."),
        ],
        reference="The table is booked.",
        reference_tool_calls=[book],
        rubrics={"score1_description": "no booking", "score5_description": "booked"},
        reference_topics=["restaurants"],
    )
    sample = from_ragas(theirs)
    assert sample.user_input[1].tool_calls == [
        ToolCall(name="book", args={"table": 4, "time": "20:00"})
    ]
    assert sample.user_input[2].metadata == {"ms": 3} and sample.rubrics == theirs.rubrics
    assert to_ragas_sample(sample) == theirs
    path = tmp_path / "ragas.jsonl"
    ragas.EvaluationDataset(samples=[theirs, theirs]).to_jsonl(str(path))
    assert list(read_samples(path, format="ragas")) == [sample, sample]


def test_extended_sample_survives_real_ragas_objects(tmp_path: Path) -> None:
    """System messages and ids ride in the Ragas messages' metadata, also through Ragas's JSONL."""
    ragas = _ragas()
    expected = EXTENDED.model_copy(
        update={
            "id": None,
            "metadata": None,
            "chatbot_role": None,
            "reference_tool_calls": [ToolCall(name="f", args={"x": 1})],
        }
    )
    theirs = to_ragas_sample(EXTENDED)
    assert from_ragas(theirs) == expected
    path = tmp_path / "ragas.jsonl"
    ragas.EvaluationDataset(samples=[theirs]).to_jsonl(str(path))
    assert from_ragas_dataset(ragas.EvaluationDataset.from_jsonl(str(path))) == [expected]


async def test_ragas_habits_take_real_ragas_objects() -> None:
    """`evaluate(dataset=EvaluationDataset)`, `multi_turn_ascore(sample)` and the keyword
    `ascore(user_input=[...])` with Ragas's own objects give the score of the converted sample."""
    ragas = _ragas()
    sample = from_ragas(RAGAS_LINE)
    theirs = to_ragas_sample(sample)
    metric = ToolCallAccuracy()
    expected = metric.score_sync(sample).value
    assert expected == 1.0
    assert await metric.multi_turn_ascore(theirs) == expected
    keywords = await metric.ascore(
        user_input=theirs.user_input, reference_tool_calls=theirs.reference_tool_calls
    )
    assert keywords == expected
    dataset = ragas.EvaluationDataset(samples=[theirs, theirs])
    result = evaluate(dataset=dataset, metrics=[metric], show_progress=False)
    rows = list(result.rows())
    assert [r["scores"]["tool_call_accuracy"] for r in rows] == [expected, expected]
    assert rows[0]["sample"] == sample.to_dict()
