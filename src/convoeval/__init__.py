"""convoeval: score multi-turn conversations of chatbots and tool-using agents.

The public names load on first use (PEP 562), so `import convoeval` and the command line start
without loading pydantic models, numpy, rich or any judge; `dir(convoeval)` lists `__all__`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from convoeval._version import VERSION as __version__

if TYPE_CHECKING:
    from convoeval.errors import ConvoevalError, UsageError
    from convoeval.io.errors import ConversionError, DataError, DataFileError
    from convoeval.judges.openai.judge import OpenAIJudge
    from convoeval.judges.panel import JudgePanel
    from convoeval.judges.protocol.base import JudgeAuthError, JudgeConfigError, JudgeError
    from convoeval.judges.spec import JudgeSpecError
    from convoeval.metrics import (
        AgentGoalAccuracyWithoutReference,
        AgentGoalAccuracyWithReference,
        AspectCritic,
        ConversationalGEval,
        ConversationCompletenessMetric,
        ConversationRelevancyMetric,
        DistanceMeasure,
        ExactMatch,
        GoalAccuracyMetric,
        KnowledgeRetentionMetric,
        Metric,
        MetricResult,
        MissingFieldsError,
        NonLLMStringSimilarity,
        RoleAdherenceMetric,
        RubricsScore,
        ScoreResult,
        ToolCallAccuracy,
        ToolCallF1,
        ToolSchemaCheck,
        ToolUseMetric,
        TopicAdherence,
        TopicAdherenceMetric,
        TopicAdherenceScore,
        TrajectoryMatch,
        TurnRelevancyMetric,
        UserFrustration,
    )
    from convoeval.metrics._base import MetricFailedError
    from convoeval.runner import (
        EvaluationResult,
        JudgeUnreachableError,
        NothingToScoreError,
        OfflineJudgeError,
        RequiredFieldsError,
        ResultsFileError,
        aevaluate,
        evaluate,
    )
    from convoeval.runner._options import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
    from convoeval.schema import (
        AIMessage,
        CaseTypeError,
        ConversationalTestCase,
        EvaluationDataset,
        HumanMessage,
        LLMTestCase,
        ModelTestCase,
        MultiTurnParams,
        MultiTurnSample,
        SingleTurnSample,
        SystemMessage,
        ToolCall,
        ToolMessage,
        Turn,
        TurnParams,
    )
    from convoeval.simulate import ConversationSimulator, asimulate, simulate
    from convoeval.stats.agree import AgreementReport, agree
    from convoeval.stats.compare import Comparison, compare
    from convoeval.stats.labels import LabelsError
    from convoeval.stats.pairing import CompareError
    from convoeval.stats.trials import TrialsError, TrialsSummary, trials_summary
    from convoeval.testing import assert_test

#: Public name -> the module that defines it.
_HOMES: dict[str, str] = {
    "SingleTurnSample": "convoeval.schema",
    "EvaluationDataset": "convoeval.schema",
    "TopicAdherence": "convoeval.metrics",
    "AspectCritic": "convoeval.metrics",
    "ScoreResult": "convoeval.metrics",
    "aevaluate": "convoeval.runner",
    "asimulate": "convoeval.simulate",
    "AgentGoalAccuracyWithoutReference": "convoeval.metrics",
    "AgentGoalAccuracyWithReference": "convoeval.metrics",
    "agree": "convoeval.stats.agree",
    "AgreementReport": "convoeval.stats.agree",
    "AIMessage": "convoeval.schema",
    "compare": "convoeval.stats.compare",
    "CompareError": "convoeval.stats.pairing",
    "Comparison": "convoeval.stats.compare",
    "ConversationalGEval": "convoeval.metrics",
    "ConversationalTestCase": "convoeval.schema",
    "ConversationCompletenessMetric": "convoeval.metrics",
    "ConversationRelevancyMetric": "convoeval.metrics",
    "ConversationSimulator": "convoeval.simulate",
    "ConversionError": "convoeval.io.errors",
    "ConvoevalError": "convoeval.errors",
    "DataError": "convoeval.io.errors",
    "DataFileError": "convoeval.io.errors",
    "evaluate": "convoeval.runner",
    "EvaluationResult": "convoeval.runner",
    "HumanMessage": "convoeval.schema",
    "JudgeAuthError": "convoeval.judges.protocol.base",
    "JudgeConfigError": "convoeval.judges.protocol.base",
    "JudgeError": "convoeval.judges.protocol.base",
    "JudgePanel": "convoeval.judges.panel",
    "JudgeSpecError": "convoeval.judges.spec",
    "JudgeUnreachableError": "convoeval.runner",
    "KnowledgeRetentionMetric": "convoeval.metrics",
    "LabelsError": "convoeval.stats.labels",
    "LLMTestCase": "convoeval.schema",
    "Metric": "convoeval.metrics",
    "MetricFailedError": "convoeval.metrics._base",
    "MetricResult": "convoeval.metrics",
    "MissingFieldsError": "convoeval.metrics",
    "ModelTestCase": "convoeval.schema",
    "MultiTurnSample": "convoeval.schema",
    "NothingToScoreError": "convoeval.runner",
    "OfflineJudgeError": "convoeval.runner",
    "OpenAIJudge": "convoeval.judges.openai.judge",
    "RequiredFieldsError": "convoeval.runner",
    "ResultsFileError": "convoeval.runner",
    "RoleAdherenceMetric": "convoeval.metrics",
    "RubricsScore": "convoeval.metrics",
    "simulate": "convoeval.simulate",
    "SystemMessage": "convoeval.schema",
    "ToolCall": "convoeval.schema",
    "ToolCallAccuracy": "convoeval.metrics",
    "ExactMatch": "convoeval.metrics",
    "NonLLMStringSimilarity": "convoeval.metrics",
    "DistanceMeasure": "convoeval.metrics",
    "ToolCallF1": "convoeval.metrics",
    "ToolMessage": "convoeval.schema",
    "ToolSchemaCheck": "convoeval.metrics",
    "ToolUseMetric": "convoeval.metrics",
    "TopicAdherenceScore": "convoeval.metrics",
    "TrajectoryMatch": "convoeval.metrics",
    "trials_summary": "convoeval.stats.trials",
    "TrialsError": "convoeval.stats.trials",
    "TrialsSummary": "convoeval.stats.trials",
    "Turn": "convoeval.schema",
    "TurnRelevancyMetric": "convoeval.metrics",
    "UsageError": "convoeval.errors",
    "UserFrustration": "convoeval.metrics",
    "TopicAdherenceMetric": "convoeval.metrics",
    "GoalAccuracyMetric": "convoeval.metrics",
    "TurnParams": "convoeval.schema",
    "MultiTurnParams": "convoeval.schema",
    "CaseTypeError": "convoeval.schema",
    "AsyncConfig": "convoeval.runner._options",
    "DisplayConfig": "convoeval.runner._options",
    "ErrorConfig": "convoeval.runner._options",
    "CacheConfig": "convoeval.runner._options",
    "assert_test": "convoeval.testing",
}
#: Names whose use means a run: the face then wires in the parts above the runner (the report's
#: notebook view of `EvaluationResult`; ARCHITECTURE.md §2), which the runner never imports.
_RUN_HOMES = ("convoeval.runner", "convoeval.stats")


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if home.startswith(_RUN_HOMES):
        importlib.import_module("convoeval.report")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"__version__"})


__all__ = [
    "AIMessage",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "AgreementReport",
    "AspectCritic",
    "AsyncConfig",
    "CacheConfig",
    "CaseTypeError",
    "CompareError",
    "Comparison",
    "ConversationCompletenessMetric",
    "ConversationRelevancyMetric",
    "ConversationSimulator",
    "ConversationalGEval",
    "ConversationalTestCase",
    "ConversionError",
    "ConvoevalError",
    "DataError",
    "DataFileError",
    "DisplayConfig",
    "DistanceMeasure",
    "ErrorConfig",
    "EvaluationDataset",
    "EvaluationResult",
    "ExactMatch",
    "GoalAccuracyMetric",
    "HumanMessage",
    "JudgeAuthError",
    "JudgeConfigError",
    "JudgeError",
    "JudgePanel",
    "JudgeSpecError",
    "JudgeUnreachableError",
    "KnowledgeRetentionMetric",
    "LLMTestCase",
    "LabelsError",
    "Metric",
    "MetricFailedError",
    "MetricResult",
    "MissingFieldsError",
    "ModelTestCase",
    "MultiTurnParams",
    "MultiTurnSample",
    "NonLLMStringSimilarity",
    "NothingToScoreError",
    "OfflineJudgeError",
    "OpenAIJudge",
    "RequiredFieldsError",
    "ResultsFileError",
    "RoleAdherenceMetric",
    "RubricsScore",
    "ScoreResult",
    "SingleTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolMessage",
    "ToolSchemaCheck",
    "ToolUseMetric",
    "TopicAdherence",
    "TopicAdherenceMetric",
    "TopicAdherenceScore",
    "TrajectoryMatch",
    "TrialsError",
    "TrialsSummary",
    "Turn",
    "TurnParams",
    "TurnRelevancyMetric",
    "UsageError",
    "UserFrustration",
    "__version__",
    "aevaluate",
    "agree",
    "asimulate",
    "assert_test",
    "compare",
    "evaluate",
    "simulate",
    "trials_summary",
]
