"""Converters between other tools' conversation formats and `MultiTurnSample`.

Each integration is its own module (for example `convoeval.integrations.openai_chat`) and is
imported on demand; nothing here is imported eagerly, so an optional dependency of one integration
never slows down or breaks `import convoeval`.
"""

from convoeval.io.errors import ConversionError

__all__ = ["ConversionError"]
