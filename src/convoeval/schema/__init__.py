"""Conversations: typed messages, MultiTurnSample, DeepEval-style cases, conversion, rendering,
and the simulator's scenarios."""

from convoeval.schema.cases import (
    CaseTypeError,
    ConversationalTestCase,
    LLMTestCase,
    ModelTestCase,
    MultiTurnParams,
    Turn,
    TurnParams,
)
from convoeval.schema.exchanges import Exchange, split_exchanges
from convoeval.schema.messages import (
    AIMessage,
    HumanMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from convoeval.schema.sample import MultiTurnSample
from convoeval.schema.scenario import Scenario
from convoeval.schema.single_turn import EvaluationDataset, SingleTurnSample
from convoeval.schema.tools import FunctionSpec, ToolSpec

__all__ = [
    "AIMessage",
    "CaseTypeError",
    "ConversationalTestCase",
    "EvaluationDataset",
    "Exchange",
    "FunctionSpec",
    "HumanMessage",
    "LLMTestCase",
    "Message",
    "ModelTestCase",
    "MultiTurnParams",
    "MultiTurnSample",
    "Scenario",
    "SingleTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolSpec",
    "Turn",
    "TurnParams",
    "split_exchanges",
]
