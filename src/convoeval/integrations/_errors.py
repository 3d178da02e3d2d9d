"""The one error every framework converter raises on input it cannot map (it lives in io)."""

from convoeval.io.errors import ConversionError

__all__ = ["ConversionError"]
