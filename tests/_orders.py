"""The order-lookup records several command-line and surface tests score, and the sidecar they
read back: one shape, written through the real JSONL format."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall


def write_orders(
    path: Path,
    count: int = 3,
    *,
    wrong: Collection[int] = (),
    reference: bool = True,
    **extra: Any,
) -> Path:
    """`count` conversations (ids o0, o1, ...): the user asks where order i is, the agent calls
    `find(n=i)` and answers. Records in `wrong` expect `find(n=i+1)` instead (a wrong call);
    `reference` adds what the user should learn; `extra` sets more fields of every record."""
    with path.open("w") as handle:
        for i in range(count):
            sample = MultiTurnSample(
                user_input=[
                    HumanMessage(content=f"where is order {i}?"),
                    AIMessage(content="", tool_calls=[ToolCall(name="find", args={"n": i})]),
                    AIMessage(content=f"order {i} ships tomorrow"),
                ],
                reference_tool_calls=[ToolCall(name="find", args={"n": i + (i in wrong)})],
                reference=f"the user learns when order {i} ships" if reference else None,
                id=f"o{i}",
                **extra,
            )
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


def meta(path: Path) -> dict[str, Any]:
    """The sidecar (`RESULTS.meta.json`) a run wrote beside its results file."""
    found: dict[str, Any] = json.loads(path.with_name(path.name + ".meta.json").read_text())
    return found
