"""Which of a run's judges can be reached, before anything is scored (`check_reachable` per
endpoint): a judge that cannot be reached stops the run, but a judge panel whose unreachable
members still leave a majority scores with the rest, the others left out and named (as a member
that fails during the run is left out of its votes). A cache of what was found, per endpoint,
lets a test session (the pytest plugin) check each endpoint once.
"""

from __future__ import annotations

from collections.abc import Sequence

from convoeval.judges import Judge, JudgePanel
from convoeval.judges.ensembles.samples import quorum
from convoeval.runner._plan import describe
from convoeval.runner._reach import JudgeUnreachableError, check_reachable

#: What was found per endpoint: None (reached) or the error raised when it was not.
ReachCache = dict[str, JudgeUnreachableError | None]


async def check_judges(judges: Sequence[Judge], cache: ReachCache | None = None) -> dict[str, str]:
    """Check every judge of `judges` (a run's, panels' members among them) reachable; raise
    `JudgeUnreachableError` for a judge that is not, or a panel left without a majority.

    A panel's unreachable members are left out of it (`JudgePanel.leave_out`) and returned, by
    label, with why; every panel checked asks its other members again. Only the members listed
    in `judges` are checked (a batch judge is reached when its batch is sent). `cache` keeps
    what each endpoint gave, for later calls (one check per endpoint per session).
    """
    found: ReachCache = {} if cache is None else cache
    listed = {id(j) for j in judges}
    panels = [j for j in judges if isinstance(j, JudgePanel)]
    in_panels = {id(m) for panel in panels for m in panel.members}
    for judge in judges:
        if not isinstance(judge, JudgePanel) and id(judge) not in in_panels:
            await _check(judge, found)
    left: dict[str, str] = {}
    for panel in panels:
        missing: dict[str, str] = {}
        for label, member in zip(panel.labels, panel.members, strict=True):
            if id(member) not in listed:
                continue
            try:
                await _check(member, found)
            except JudgeUnreachableError as exc:
                missing[label] = _why(member, exc)
        answering = len(panel.members) - len(missing)
        if answering < quorum(len(panel.members)):
            names = ", ".join(f"{label!r} ({why})" for label, why in missing.items())
            raise JudgeUnreachableError(
                f"{panel.name}: only {answering} of its {len(panel.members)} members can be "
                f"reached, too few for a majority; nothing was scored. Unreachable: {names}"
            )
        panel.leave_out(missing)
        left.update(missing)
    return left


async def _check(judge: Judge, found: ReachCache) -> None:
    """`check_reachable` for one judge, once per endpoint in `found`."""
    endpoint = str(describe(judge).get("endpoint") or "")
    if endpoint in found:
        error = found[endpoint]
        if error is not None:
            raise error.with_traceback(None)
        return
    try:
        await check_reachable([judge])
    except JudgeUnreachableError as exc:
        found[endpoint] = exc
        raise
    found[endpoint] = None


def _why(member: Judge, error: JudgeUnreachableError) -> str:
    """Why a member is left out: its endpoint, and what connecting to it gave."""
    endpoint = describe(member).get("endpoint")
    cause = error.__cause__
    detail = (getattr(cause, "strerror", None) or str(cause)) if cause else ""
    return f"cannot reach {endpoint} when the run started" + (f" ({detail})" if detail else "")
