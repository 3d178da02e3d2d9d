"""The offline judge: embedded all-MiniLM-L6-v2 (int8 ONNX) on the CPU, no network, no key."""

from convoeval.judges.offline.embedder import Embedder, ModelIntegrityError, get_embedder
from convoeval.judges.offline.judge import OfflineJudge
from convoeval.judges.offline.kit import OfflineKit, get_kit
from convoeval.judges.offline.relevance import Window
from convoeval.judges.offline.segment import Request

__all__ = [
    "Embedder",
    "ModelIntegrityError",
    "OfflineJudge",
    "OfflineKit",
    "Request",
    "Window",
    "get_embedder",
    "get_kit",
]
