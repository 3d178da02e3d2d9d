"""The one error every framework converter raises on input it cannot map (a `ValueError`)."""

from __future__ import annotations

from collections.abc import Sequence

from convoeval.errors import ConvoevalError


class ConversionError(ConvoevalError, ValueError):
    """Input a converter cannot map; `problems` holds one `path: why` line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))
