"""The simulator: a simulated user (an LLM judge step) talks to the bot under test, scenario by
scenario, and the conversations are written as the file `convoeval run` reads (docs/simulation.md).

`simulate` / `asimulate` play a scenario file or list; `ConversationSimulator` is DeepEval's
habit over them. The bot is a Python callable, an OpenAI-compatible chat endpoint (`OpenAIBot`)
or a plain JSON endpoint (`HttpBot`).
"""

from convoeval.simulate.bots import Bot, BotCall, BotError, CallableBot
from convoeval.simulate.deepeval import ConversationSimulator
from convoeval.simulate.http_bots import HttpBot, OpenAIBot
from convoeval.simulate.play import STOPS
from convoeval.simulate.result import SimulationResult
from convoeval.simulate.run import SimulateOptions, asimulate, simulate

__all__ = [
    "STOPS",
    "Bot",
    "BotCall",
    "BotError",
    "CallableBot",
    "ConversationSimulator",
    "HttpBot",
    "OpenAIBot",
    "SimulateOptions",
    "SimulationResult",
    "asimulate",
    "simulate",
]
