"""Convert OpenAI chat messages to and from `MultiTurnSample` (see `convoeval.io.openai_layout`).

The converter is the OpenAI chat record layout's parser, so it lives in `io`; this module keeps the
public import path `convoeval.integrations.openai_chat`.
"""

from convoeval.io.openai_layout import (
    OPENAI_KEY,
    OpenAIMessagesError,
    from_openai_messages,
    to_openai_messages,
)

__all__ = ["OPENAI_KEY", "OpenAIMessagesError", "from_openai_messages", "to_openai_messages"]
