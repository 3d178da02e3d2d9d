"""Metrics: the stateless base (`Metric`, `MetricResult`), the registry, and every metric.

To add a metric: write one module with a `Metric` subclass decorated with `@register`, then
import it below (one line) so that `METRICS`, `get_metric` and `convoeval metrics` know it. It
lists its judge `steps`, returns its score-shaping options from `config()`, and gives each step a
typed input (`judges.step.StepInput`: plain fields are shown, `Field(exclude=True)` ones are not)
whose every value from data is quoted or fenced (`schema.render.quote`, `bullets`, `fenced`). A
DeepEval-named class is a `_facade.DeepEvalFacade` over the registered metric (`@facade_of`).
"""

from convoeval.metrics._base import (
    Ask,
    Metric,
    MetricFailedError,
    MetricResult,
    MissingFieldsError,
    as_metric,
    as_sample,
)
from convoeval.metrics._comparators import DistanceMeasure, ExactMatch, NonLLMStringSimilarity
from convoeval.metrics._registry import METRICS, describe_metrics, get_metric, register
from convoeval.metrics._result import ScoreResult
from convoeval.metrics.agent_goal_accuracy import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
)

# Metric modules: importing one registers its metric. Add new metrics here, one line each.
from convoeval.metrics.aspect_critic import AspectCritic
from convoeval.metrics.conversation_completeness import (
    ConversationCompleteness,
    ConversationCompletenessMetric,
)
from convoeval.metrics.conversation_relevancy import (
    ConversationRelevancy,
    ConversationRelevancyMetric,
)
from convoeval.metrics.conversational_geval import ConversationalCriteria, ConversationalGEval
from convoeval.metrics.deepeval_named import GoalAccuracyMetric, TopicAdherenceMetric
from convoeval.metrics.knowledge_retention import KnowledgeRetention, KnowledgeRetentionMetric
from convoeval.metrics.role_adherence import RoleAdherence, RoleAdherenceMetric
from convoeval.metrics.rubrics import RubricsScore
from convoeval.metrics.tool_call_accuracy import ToolCallAccuracy
from convoeval.metrics.tool_call_f1 import ToolCallF1
from convoeval.metrics.tool_schema import ToolSchemaCheck
from convoeval.metrics.tool_use import ToolUse, ToolUseMetric
from convoeval.metrics.topic_adherence import TopicAdherence, TopicAdherenceScore
from convoeval.metrics.trajectory_match import TrajectoryMatch
from convoeval.metrics.turn_relevancy import TurnRelevancy, TurnRelevancyMetric
from convoeval.metrics.user_frustration import UserFrustration

__all__ = [
    "METRICS",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "Ask",
    "AspectCritic",
    "ConversationCompleteness",
    "ConversationCompletenessMetric",
    "ConversationRelevancy",
    "ConversationRelevancyMetric",
    "ConversationalCriteria",
    "ConversationalGEval",
    "DistanceMeasure",
    "ExactMatch",
    "GoalAccuracyMetric",
    "KnowledgeRetention",
    "KnowledgeRetentionMetric",
    "Metric",
    "MetricFailedError",
    "MetricResult",
    "MissingFieldsError",
    "NonLLMStringSimilarity",
    "RoleAdherence",
    "RoleAdherenceMetric",
    "RubricsScore",
    "ScoreResult",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolSchemaCheck",
    "ToolUse",
    "ToolUseMetric",
    "TopicAdherence",
    "TopicAdherenceMetric",
    "TopicAdherenceScore",
    "TrajectoryMatch",
    "TurnRelevancy",
    "TurnRelevancyMetric",
    "UserFrustration",
    "as_metric",
    "as_sample",
    "describe_metrics",
    "get_metric",
    "register",
]
