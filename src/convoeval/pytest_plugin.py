"""The pytest plugin (entry point `pytest11`, loaded by pytest once convoeval is installed).

It runs a test once per conversation of a data file and gives it the session's judge:

- `@convoeval_cases("data.jsonl")` (from `convoeval.testing`; the marker
  `@pytest.mark.convoeval_cases(...)` is the same) parametrises the `conversation` argument
  with each record's `MultiTurnSample`, test ids being the record ids. A relative path is looked
  up next to the test file, then from the rootdir, then from where pytest runs; an invalid record
  is a collection error listing `FILE:LINE: problem`.
- the `convoeval_judge` fixture: one judge for the session, the offline one unless
  `--convoeval-judge SPEC` (or the ini option `convoeval_judge`) names another. An LLM judge's
  endpoint is checked reachable once per session, as `convoeval run` does before scoring: with
  the judge down, every test using it errors at once, saying so, instead of each one waiting
  out the judge's retry budget (`assert_conversation` checks its judges the same way).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from convoeval.judges.protocol.base import Judge

MARKER = "convoeval_cases"
#: The judge endpoints this session checked, and what each gave (None outside a session), read
#: by `convoeval.testing`: each endpoint is checked once per session.
reach_cache: dict[str, Any] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--convoeval-judge SPEC` and the ini option `convoeval_judge`."""
    group = parser.getgroup("convoeval", "convoeval conversation scoring")
    help_text = (
        "judge for the convoeval_judge fixture: offline (default), PROVIDER/MODEL or gguf:PATH"
    )
    group.addoption("--convoeval-judge", dest="convoeval_judge", default=None, help=help_text)
    parser.addini("convoeval_judge", help_text, default="offline")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker, so `--strict-markers` accepts it."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path, argname='conversation', format='auto'): run the test once per "
        "conversation of a data file",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start the session's record of the judge endpoints checked."""
    global reach_cache
    reach_cache = {}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Forget it: a later session checks again."""
    global reach_cache
    reach_cache = None


def _data_path(metafunc: pytest.Metafunc, given: str | Path) -> Path:
    path = Path(given)
    if path.is_absolute():
        return path
    config = metafunc.config
    bases = [metafunc.definition.path.parent, config.rootpath, config.invocation_params.dir]
    for base in bases:
        if (base / path).exists():
            return base / path
    tried = ", ".join(str(base / path) for base in bases)
    raise pytest.UsageError(f"{MARKER}: data file {str(given)!r} not found (tried {tried})")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise a test marked `convoeval_cases` with the conversations of its data file."""
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    from convoeval.io import DataError, read_records

    if len(marker.args) != 1:
        raise pytest.UsageError(f"{MARKER} takes one data file path, got {marker.args!r}")
    argname = marker.kwargs.get("argname", "conversation")
    path = _data_path(metafunc, marker.args[0])
    params = []
    problems: list[str] = []
    for record in read_records(path, format=marker.kwargs.get("format", "auto")):
        if not record.ok or record.sample is None:
            problems += record.problems()
            continue
        label = record.sample.id if record.sample.id is not None else f"line{record.line}"
        params.append(pytest.param(record.sample, id=str(label)))
    if problems:
        raise DataError(problems)
    if not params:
        raise pytest.UsageError(f"{MARKER}: {path} holds no conversation")
    metafunc.parametrize(argname, params)


@pytest.fixture(scope="session")
def convoeval_judge(request: pytest.FixtureRequest) -> Iterator[Judge]:
    """The judge of this test session (`--convoeval-judge`, default offline), resolved once and
    checked reachable (a failure is kept: every test using the fixture errors with it); closed
    when the session ends (a `gguf:` judge's llama.cpp server stops)."""
    from convoeval._sync import run_sync
    from convoeval.judges import Judge, resolve_judge
    from convoeval.runner import JudgeUnreachableError
    from convoeval.runner._plan import close_made, members
    from convoeval.runner._reach_judges import check_judges

    spec = request.config.getoption("convoeval_judge") or request.config.getini("convoeval_judge")
    judge = resolve_judge(str(spec or "offline"))
    everyone = [judge, *(m for m in members(judge) if isinstance(m, Judge) and m is not judge)]
    try:
        run_sync(lambda: check_judges(everyone, reach_cache))
    except JudgeUnreachableError as exc:
        problem = str(exc)
    else:
        try:
            yield judge
        finally:
            close_made(everyone)
        return
    pytest.fail(f"convoeval: the session's judge cannot be reached: {problem}", pytrace=False)


def cases_marker(path: str | Path, argname: str = "conversation", format: str = "auto") -> Any:
    """The `convoeval_cases` mark (what `convoeval.testing.convoeval_cases` returns)."""
    return getattr(pytest.mark, MARKER)(path, argname=argname, format=format)
