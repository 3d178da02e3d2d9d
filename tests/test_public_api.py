"""The public surface of `convoeval` is exactly what DESIGN §1 promises: no accidental leaks."""

from __future__ import annotations

import subprocess
import sys

import convoeval

EXPECTED = {
    "AIMessage",
    "ConversationalTestCase",
    "HumanMessage",
    "LLMTestCase",
    "ModelTestCase",
    "MultiTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Turn",
    "ToolCallAccuracy",
    "ToolCallF1",
    "EvaluationResult",
    "aevaluate",
    "evaluate",
    "MetricResult",
    "Metric",
    "TopicAdherenceScore",
    "ConversationRelevancyMetric",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "RubricsScore",
    "__version__",
}


def test_all_is_exactly_the_public_names() -> None:
    assert set(convoeval.__all__) == EXPECTED
    for name in convoeval.__all__:
        assert hasattr(convoeval, name), name


def test_import_loads_no_model_and_opens_no_connection() -> None:
    code = (
        "import sys, socket\n"
        "def refuse(*a, **k): raise AssertionError('network at import time')\n"
        "socket.socket.connect = refuse\n"
        "import convoeval\n"
        "assert 'onnxruntime' not in sys.modules, 'the offline model was loaded at import'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
