"""A judge's keys in the LLM-judge core: registered for scrubbing when the judge is built, masked
in every answer before it is validated or cached, and refused credentials (401/403) that stop the
judge: from the first refusal on, every request raises `JudgeAuthError` without being sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from convoeval.judges.protocol._redact import redact, register_secret, scrub, scrub_data
from convoeval.judges.protocol.base import JudgeAuthError

#: Seconds the credentials check may take at most (past them it proves nothing: the run goes on).
CHECK_TIMEOUT_S = 10.0
#: A backend's credentials check: what the server said when it refused them, else None.
Check = Callable[[float], Awaitable[str | None]]


def scrubbed(content: object) -> object:
    """A backend's answer with every registered key masked (text, mapping or model)."""
    if isinstance(content, str):
        return scrub(content)
    if isinstance(content, BaseModel):
        dumped = content.model_dump(mode="json")
        cleaned = scrub_data(dumped)
        return content if cleaned == dumped else cleaned
    return scrub_data(content)


class Credentials:
    """The credentials of one judge (`name` at `endpoint`) as its server took them."""

    def __init__(self, name: str, endpoint: str, secrets: tuple[str, ...]) -> None:
        self.name = name
        self.endpoint = endpoint
        #: What the server said when it refused them (None: not refused).
        self.refused: str | None = None
        self._secrets = secrets  # masked in its errors even when too short to register
        for secret in secrets:
            register_secret(secret)

    def refuse(self, said: str) -> JudgeAuthError:
        """The server refused them (`said`): the error to raise, now and for every later
        request (the first refusal's message is kept)."""
        if self.refused is None:
            self.refused = said
        return self.error()

    def before_sending(self) -> None:
        """Raise `JudgeAuthError` instead of sending when they were refused."""
        if self.refused is not None:
            raise self.error()

    async def check(self, check: Check, timeout: float | None) -> None:
        """Run the backend's `check` (bounded by CHECK_TIMEOUT_S): `JudgeAuthError` when the
        server refuses them; any other outcome forgets an earlier refusal (a fixed key is
        tried again)."""
        self.refused = await check(min(timeout or CHECK_TIMEOUT_S, CHECK_TIMEOUT_S))
        if self.refused is not None:
            raise self.error("when checked before scoring; nothing was scored")

    def error(self, when: str = "") -> JudgeAuthError:
        """The refusal as an error, quoting the server (its secrets masked, short ones too)."""
        said = redact(str(self.refused), self._secrets)
        return JudgeAuthError(
            f"the judge {self.name} at {self.endpoint} refused its credentials "
            f"({said}){f' {when}' if when else ''}: nothing more is sent with them. "
            "Check the API key (api_key=, --api-key or OPENAI_API_KEY)"
        )
