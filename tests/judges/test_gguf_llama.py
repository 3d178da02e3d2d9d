"""Every metric that asks a judge, through `gguf:` on the SmolLM2 file the suite installs, in one
run (one llama.cpp start): a score or a recorded judge failure for every pair, never a crash or
a hang, and no connection that leaves 127.0.0.1 (an audit hook sees every socket connect of this
process). Plumbing, not verdict quality: a 135M model judges nothing well."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from convoeval import evaluate
from convoeval.metrics import METRICS, describe_metrics

#: Addresses this process connected to while `_WATCHING` holds True.
_CONNECTS: list[Any] = []
_WATCHING = [False]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _WATCHING[0]:
        _CONNECTS.append(args[1])


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while watching

SAMPLE = {
    "id": "order",
    "user_input": [
        {"type": "human", "content": "Where is my order VB-1042? I'm Ana."},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "get_order", "args": {"order_id": "VB-1042"}, "id": "c1"}],
        },
        {"type": "tool", "content": '{"status": "in_transit"}', "tool_call_id": "c1"},
        {"type": "ai", "content": "Ana, VB-1042 is in transit."},
    ],
    "reference": "The user learns the order is in transit.",
    "reference_topics": ["orders"],
    "chatbot_role": "a polite shop assistant",
    "rubrics": {"1": "unhelpful", "2": "helpful"},
}


@pytest.mark.llm
def test_every_judge_metric_runs_through_gguf_on_loopback_only(
    smollm2_gguf: Path, tmp_path: Path
) -> None:
    names = [m["name"] for m in describe_metrics() if m["uses_judge"]]
    metrics: list[Any] = [n for n in names if n not in ("aspect_critic", "conversational_geval")]
    metrics += [
        METRICS["aspect_critic"](definition="Is the reply polite?"),
        METRICS["conversational_geval"](criteria="Is the reply correct?"),
    ]
    spec = f"gguf:{smollm2_gguf} threads=1 ctx=2048 max_tokens=40"
    _WATCHING[0] = True
    try:
        result = evaluate(
            [SAMPLE], metrics, spec, output=tmp_path / "r.jsonl", show_progress=False, timeout=60
        )
    finally:
        _WATCHING[0] = False
    row = next(iter(result.rows()))
    assert sorted(row["scores"]) == sorted(names)
    for name in names:  # a score, or a judge failure recorded with its reason
        assert row["scores"][name] is not None or row["errors"].get(name), (name, row)
    hosts = {address[0] for address in _CONNECTS if isinstance(address, tuple)}
    assert hosts == {"127.0.0.1"}, hosts
    assert result.meta["judge"]["kind"] == "gguf"
    assert result.usage.requests > 0
    assert result.cost() == (0.0, "the gguf judge runs locally (llama.cpp in this process)")
