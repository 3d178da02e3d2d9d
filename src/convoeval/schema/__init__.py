"""Conversations: typed messages, MultiTurnSample, DeepEval-style cases, conversion, rendering,
and the simulator's scenarios."""

from convoeval.schema.cases import ConversationalTestCase, LLMTestCase, ModelTestCase, Turn
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
    "ConversationalTestCase",
    "EvaluationDataset",
    "Exchange",
    "FunctionSpec",
    "HumanMessage",
    "LLMTestCase",
    "Message",
    "ModelTestCase",
    "MultiTurnSample",
    "Scenario",
    "SingleTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolSpec",
    "Turn",
    "split_exchanges",
]
