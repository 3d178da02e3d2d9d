"""convoeval: score multi-turn conversations of chatbots and tool-using agents."""

from convoeval.metrics import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    ConversationRelevancyMetric,
    Metric,
    MetricResult,
    RubricsScore,
    ToolCallAccuracy,
    ToolCallF1,
    TopicAdherenceScore,
)
from convoeval.runner import EvaluationResult, aevaluate, evaluate
from convoeval.schema import (
    AIMessage,
    ConversationalTestCase,
    HumanMessage,
    LLMTestCase,
    ModelTestCase,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Turn,
)

__version__ = "0.1.0"

__all__ = [
    "AIMessage",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "ConversationRelevancyMetric",
    "ConversationalTestCase",
    "EvaluationResult",
    "HumanMessage",
    "LLMTestCase",
    "Metric",
    "MetricResult",
    "ModelTestCase",
    "MultiTurnSample",
    "RubricsScore",
    "SystemMessage",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolMessage",
    "TopicAdherenceScore",
    "Turn",
    "__version__",
    "aevaluate",
    "evaluate",
]
