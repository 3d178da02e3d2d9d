"""Errors of dataset reading and writing: a bad record (`DataError`), an unusable file, a bad
reading or writing option (`OptionError`), or input that a layout parser or framework converter
cannot map (`ConversionError`)."""

from __future__ import annotations

from collections.abc import Sequence

from convoeval.errors import ConvoevalError


class DataError(ConvoevalError, ValueError):
    """A record that is not a valid conversation; `problems` holds `file:line: path: what` lines."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DataFileError(DataError):
    """A data file that cannot be read or written at all (missing, unknown suffix, not JSON)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__([f"{path}: {reason}"])


class ConversionError(ConvoevalError, ValueError):
    """Input a converter cannot map; `problems` holds one `path: why` line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class OptionError(ConvoevalError, ValueError):
    """A bad reading or writing option (format, layout, messages_field, fields), named in it."""
