"""The column convention shared by CSV, Parquet and pandas: one row per conversation.

Every `MultiTurnSample` field is a column. The conversation (`user_input`) and the other lists and
dicts are JSON text; `id`, `reference` and the other single strings (`chatbot_role`, `scenario`,
`expected_outcome`, `user_description`) are plain text. An absent field is an empty cell (CSV) or
a null (Parquet, pandas), so rows with different fields share one fixed set of columns. Reading
also accepts `messages`/`turns` columns (OpenAI and DeepEval layouts) and native nested values.
A JSON cell that does not hold its column's shape (`JSON_SHAPES`) says which shape it expects.
One loss is inherent to CSV: an empty-string text field (`reference`, `id`, ...) reads back as
absent (Parquet and pandas keep it, since they have real nulls).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from convoeval.io import strict_json
from convoeval.io._convert import kind as json_kind
from convoeval.schema.sample import MultiTurnSample

#: The columns written for a sample, in this order.
COLUMNS = (
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
)
TEXT_COLUMNS = frozenset(
    {"id", "reference", "chatbot_role", "scenario", "expected_outcome", "user_description"}
)
_TOOL = '{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}'
#: The JSON each column's cells hold: its kind, and how to say it with an example (errors).
JSON_SHAPES: dict[str, tuple[type, str]] = {
    "user_input": (list, 'a JSON list of messages such as [{"type": "human", "content": "Hi"}]'),
    "messages": (list, 'a JSON list of messages such as [{"role": "user", "content": "Hi"}]'),
    "turns": (list, 'a JSON list of turns such as [{"role": "user", "content": "Hi"}]'),
    "reference_tool_calls": (
        list,
        'a JSON list of tool calls such as [{"name": "get_order", "args": {"order_id": "A1"}}]',
    ),
    "reference_topics": (list, 'a JSON list of strings such as ["orders", "shipping"]'),
    "rubrics": (
        dict,
        'a JSON object of score levels such as {"score1_description": "wrong", '
        '"score5_description": "right"}',
    ),
    "metadata": (dict, 'a JSON object such as {"source": "web"}'),
    "additional_metadata": (dict, 'a JSON object such as {"source": "web"}'),
    "context": (list, 'a JSON list of strings such as ["Returns are free for 30 days."]'),
    "available_tools": (list, f"a JSON list of tool specs such as [{_TOOL}]"),
    "tools": (list, f"a JSON list of tool specs such as [{_TOOL}]"),
    "functions": (
        list,
        'a JSON list of function specs such as [{"name": "get_order", "parameters": {}}]',
    ),
    "parallel_tool_calls": (bool, "true or false"),
}
#: Columns whose string cells are decoded as JSON when read (other columns are taken as text).
JSON_COLUMNS = frozenset(JSON_SHAPES)


def sample_to_row(sample: MultiTurnSample) -> dict[str, str | None]:
    """The sample as one row of strings (None for an absent field), keyed by `COLUMNS`."""
    data = sample.to_dict()
    row: dict[str, str | None] = {}
    for column in COLUMNS:
        value = data.get(column)
        if value is None:
            row[column] = None
        elif column in TEXT_COLUMNS:
            row[column] = str(value)
        else:
            row[column] = json.dumps(value, ensure_ascii=False)
    return row


def row_to_record(
    row: Mapping[str, Any], *, empty_is_absent: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Decode one row into a record dict; problems name the column whose cell is bad.

    None (and NaN) cells are absent. An empty text cell is absent too when `empty_is_absent`
    (CSV cannot tell an empty string from a missing value); an empty JSON cell always is.
    """
    record: dict[str, Any] = {}
    problems: list[str] = []
    for column, value in row.items():
        if value is None or (isinstance(value, float) and value != value):  # None or NaN
            continue
        if isinstance(value, str) and column in JSON_COLUMNS:
            if not value.strip():
                continue
            try:
                value = strict_json.loads(value, column)
            except json.JSONDecodeError as exc:
                problems.append(_json_problem(column, value, exc))
                continue
            except strict_json.StrictJSONError as exc:
                problems.append(str(exc))
                continue
            if value is None:
                continue
            kind, shape = JSON_SHAPES[column]
            if not isinstance(value, kind):
                problems.append(f"{column}: expected {shape}, got {json_kind(value)}")
                continue
        elif isinstance(value, str) and not value and empty_is_absent:
            continue
        record[column] = value
    return record, problems


def _json_problem(column: str, value: str, exc: json.JSONDecodeError) -> str:
    """Say which cell is not JSON (with a hint for Ragas's Python-repr CSV cells)."""
    text = f"{column}: this cell is not valid JSON ({exc.msg} at character {exc.pos + 1})"
    text += f": expected {JSON_SHAPES[column][1]}"
    if value.lstrip().startswith(("[{'", "{'", "['")) or "HumanMessage(" in value:
        text += "; it looks like a Python repr (as Ragas's to_csv writes): export the data as JSON"
    return text
