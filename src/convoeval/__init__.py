"""convoeval: score multi-turn conversations of chatbots and tool-using agents."""

from typing import TYPE_CHECKING, Any

# The face wires in the parts that stand above the runner (the runner never imports them): the
# Ray engine registers itself as engine="ray", the report the notebook view of EvaluationResult.
import convoeval.engines
import convoeval.report  # noqa: F401
from convoeval._version import VERSION as __version__
from convoeval.errors import ConvoevalError
from convoeval.io.errors import ConversionError, DataError
from convoeval.judges.panel import JudgePanel
from convoeval.judges.protocol.base import JudgeAuthError, JudgeError
from convoeval.metrics import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    ConversationalGEval,
    ConversationCompletenessMetric,
    ConversationRelevancyMetric,
    KnowledgeRetentionMetric,
    Metric,
    MetricResult,
    MissingFieldsError,
    RoleAdherenceMetric,
    RubricsScore,
    ToolCallAccuracy,
    ToolCallF1,
    ToolSchemaCheck,
    ToolUseMetric,
    TopicAdherenceScore,
    TrajectoryMatch,
    TurnRelevancyMetric,
    UserFrustration,
)
from convoeval.runner import (
    EvaluationResult,
    OfflineJudgeError,
    RequiredFieldsError,
    ResultsFileError,
    aevaluate,
    evaluate,
)
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
from convoeval.stats.agree import AgreementReport, agree
from convoeval.stats.trials import TrialsSummary, trials_summary

if TYPE_CHECKING:
    from convoeval.judges.openai.judge import OpenAIJudge


def __getattr__(name: str) -> Any:
    # The openai SDK takes a third of a second to import: load it only when asked for.
    if name == "OpenAIJudge":
        from convoeval.judges.openai.judge import OpenAIJudge

        return OpenAIJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AIMessage",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "AgreementReport",
    "ConversationCompletenessMetric",
    "ConversationRelevancyMetric",
    "ConversationalGEval",
    "ConversationalTestCase",
    "ConversionError",
    "ConvoevalError",
    "DataError",
    "EvaluationResult",
    "HumanMessage",
    "JudgeAuthError",
    "JudgeError",
    "JudgePanel",
    "KnowledgeRetentionMetric",
    "LLMTestCase",
    "Metric",
    "MetricResult",
    "MissingFieldsError",
    "ModelTestCase",
    "MultiTurnSample",
    "OfflineJudgeError",
    "OpenAIJudge",
    "RequiredFieldsError",
    "ResultsFileError",
    "RoleAdherenceMetric",
    "RubricsScore",
    "SystemMessage",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolMessage",
    "ToolSchemaCheck",
    "ToolUseMetric",
    "TopicAdherenceScore",
    "TrajectoryMatch",
    "TrialsSummary",
    "Turn",
    "TurnRelevancyMetric",
    "UserFrustration",
    "__version__",
    "aevaluate",
    "agree",
    "evaluate",
    "trials_summary",
]
