"""convoeval: score multi-turn conversations of chatbots and tool-using agents."""

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
    "ConversationalTestCase",
    "HumanMessage",
    "LLMTestCase",
    "ModelTestCase",
    "MultiTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Turn",
    "__version__",
]
