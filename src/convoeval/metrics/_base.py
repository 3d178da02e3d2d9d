"""The metric base: the abstract `Metric`, its sync wrapper and its Ragas-habit calls.

A metric is stateless: `await metric.score(sample)` checks the required fields, resolves a judge
when the metric uses one, and runs the subclass's `_score(sample, ask)`. Judge failures become
failed results (never a score); "nothing to judge" is an unscored result with a reason.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, ClassVar, TypeVar, overload

from pydantic import BaseModel

from convoeval._sync import run_sync
from convoeval.errors import ConvoevalError, UsageError, check_limit
from convoeval.io._convert import plain
from convoeval.io.records import record_to_sample
from convoeval.judges.protocol.base import Judge, JudgeError, Step, Usage
from convoeval.judges.protocol.step import StepInputs
from convoeval.metrics._result import ErrorInfo as ErrorInfo  # re-exported
from convoeval.metrics._result import MetricResult as MetricResult  # re-exported
from convoeval.metrics._result import ScoreResult
from convoeval.schema import ConversationalTestCase, MultiTurnSample

OutT = TypeVar("OutT", bound=BaseModel)
T = TypeVar("T")

#: What `score` accepts: a sample, a DeepEval-style case, or a dict in a layout `evaluate` reads.
SampleLike = MultiTurnSample | ConversationalTestCase | Mapping[str, Any]


class MissingFieldsError(ConvoevalError, ValueError):
    """A sample lacks fields a metric requires; raised before any judge call."""

    def __init__(self, metric: str, fields: list[str], sample_id: str | None = None) -> None:
        self.metric = metric
        self.fields = list(fields)
        self.sample_id = sample_id
        where = f"sample {sample_id!r}" if sample_id is not None else "the sample"
        names = ", ".join(self.fields)
        super().__init__(f"metric {metric!r} needs {names}, which {where} does not set")


class MetricFailedError(ConvoevalError, RuntimeError):
    """Raised by the Ragas-style `multi_turn_score` when the metric failed (not a silent None)."""

    def __init__(self, metric: str, result: MetricResult) -> None:
        self.metric = metric
        self.result = result
        error = result.error or {"type": "Error", "message": "unknown failure"}
        super().__init__(f"metric {metric!r} failed: {error['type']}: {error['message']}")


def as_sample(data: SampleLike) -> MultiTurnSample:
    """Convert a MultiTurnSample, a ConversationalTestCase or a dict in any layout `evaluate()`
    reads (Ragas, OpenAI chat, DeepEval) to a sample; a bad dict raises `DataError` (a
    `ConvoevalError`) with one `path: what is wrong` line per problem."""
    if isinstance(data, MultiTurnSample):
        return data
    if isinstance(data, ConversationalTestCase):
        return data.to_sample()
    if isinstance(data, Mapping):
        return record_to_sample(data)
    if hasattr(data, "model_dump"):  # a real Ragas or DeepEval object: read as its dict
        return record_to_sample(plain(data))
    raise TypeError(
        "expected a MultiTurnSample, a ConversationalTestCase or a dict (Ragas, OpenAI chat or "
        f"DeepEval layout), not {type(data).__name__}"
    )


async def concurrently(calls: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Await `calls` at once, results in order. The first failure cancels the others (their
    requests already sent stay counted in the usage given to the judge) and is raised as is,
    not as a group; a bug wins over a `JudgeError` that failed at the same time."""
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(call) for call in calls]
    except BaseExceptionGroup as failed:
        bugs = [e for e in failed.exceptions if not isinstance(e, JudgeError)]
        raise (bugs or failed.exceptions)[0] from None
    return [task.result() for task in tasks]


class Ask:
    """Per-call judge helper given to `Metric._score`: `await ask(step, inputs)` returns the
    validated output; the judge adds what it sends to `ask.usage` live, as requests go out, so a
    step that fails or is cancelled is still counted.

    A new `Ask` is made for every `score` call, so concurrent calls never share usage. A judge
    that answers by repeated samples (`samples=N`) returns how it voted; `judge_samples` keeps
    one record per step asked (every sample's answer, each verdict's confidence), which `score`
    puts into the result's details under "judge_samples"; a judge panel's records (every
    member's answer and ratings) go under "judge_panel" alike.
    """

    def __init__(self, judge: Judge | None, metric: str) -> None:
        self.judge = judge
        self.metric = metric
        self.usage = Usage()
        self.judge_samples: list[dict[str, Any]] = []
        #: One record per step a judge panel answered (every member's answer and ratings).
        self.judge_panel: list[dict[str, Any]] = []

    async def __call__(self, step: Step[OutT], inputs: StepInputs) -> OutT:
        """Ask the judge one step."""
        if self.judge is None:
            raise RuntimeError(
                f"metric {self.metric!r} asked a judge but declares uses_judge=False"
            )
        answer = await self.judge.run(step, inputs, usage=self.usage)
        vote = getattr(answer, "vote", None)  # judges written before samples have none
        if vote is not None:
            self.judge_samples.append(vote.as_dict(step.name))
        panel = getattr(answer, "panel", None)
        if panel is not None:
            self.judge_panel.append(panel.as_dict(step.name))
        return answer.output

    async def limits(self) -> tuple[int | None, int | None]:
        """(context window, max answer tokens) of the judge, each None when unknown or unset:
        what a metric sizes its requests to (metrics/_fit.py). Judges without them: (None,
        None)."""
        context = getattr(self.judge, "context_limit", None)
        output = getattr(self.judge, "output_limit", None)
        found = await context() if callable(context) else None
        return found, output() if callable(output) else None

    def details(self) -> dict[str, Any]:
        """What the judge's votes add to a result's details (`judge_samples`, `judge_panel`)."""
        return {
            name: records
            for name, records in (
                ("judge_samples", self.judge_samples),
                ("judge_panel", self.judge_panel),
            )
            if records
        }


class Metric(ABC):
    """Base of every metric: declares what it needs and scores one sample at a time, stateless.

    Subclasses set the class attributes, implement `async _score(sample, ask)`, and register
    themselves with `@register` (from `convoeval.metrics`). `_score` returns a `MetricResult`
    (leave its usage empty: the base adds what `ask` spent) and may raise `JudgeError`, which
    becomes a failed result.
    """

    #: Results column, e.g. "tool_call_accuracy".
    name: ClassVar[str]
    #: MultiTurnSample fields that must be set (not None) for this metric.
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    #: True when the offline judge cannot run this metric (it needs an LLM judge).
    needs_llm: ClassVar[bool] = False
    #: True when the metric asks a judge at all.
    uses_judge: ClassVar[bool] = False
    #: Pass mark used when the constructor is given no threshold (None: no pass/fail).
    default_threshold: ClassVar[float | None] = None
    #: Every judge step this metric may ask; their fingerprints are part of a run's identity.
    steps: ClassVar[tuple[Step[Any], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        accept_judge_names(cls)

    def __init__(self, *, threshold: float | None = None, judge: Judge | str | None = None) -> None:
        if (
            threshold is not None
        ):  # as --threshold is checked (a metric with `normalize` by the run)
            own_scale = "normalize" in inspect.signature(type(self)).parameters
            what = f"the threshold of {getattr(self, 'name', type(self).__name__)}"
            bounds = getattr(type(self), "score_range", None) or (0.0, 1.0)
            threshold = check_limit(threshold, None if own_scale else bounds, what)
        self.threshold: float | None = self.default_threshold if threshold is None else threshold
        self._resolved_own: Judge | None = None
        self.judge = judge

    @property
    def judge(self) -> Judge | str | None:
        """The metric's own judge (a Judge or a spec), used when neither the call nor the run
        gives one; assigning another takes effect from the next score."""
        return self._judge

    @judge.setter
    def judge(self, judge: Judge | str | None) -> None:
        self._judge = judge
        self._resolved_own = None  # a spec is resolved again, on its next use

    def own_judge(self) -> Judge | None:
        """The metric's own judge as a Judge (a spec resolved once per assignment); None when
        the metric has none."""
        if self._judge is None:
            return None
        if self._resolved_own is None:
            self._resolved_own = _resolve(self._judge)
        return self._resolved_own

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. for a Ray worker) without the resolved judge: a spec resolves again."""
        state = self.__dict__.copy()
        state["_resolved_own"] = None
        return state

    def config(self) -> dict[str, Any]:
        """The constructor options that shape this metric's scores, JSON-ready (threshold and
        judge excluded: they are recorded apart). Run metadata and resume compare it."""
        return {}

    def missing_fields(self, sample: MultiTurnSample) -> list[str]:
        """The required fields this sample leaves unset (None); an empty list counts as set."""
        return [name for name in self.required if getattr(sample, name, None) is None]

    def data_problems(self, sample: MultiTurnSample) -> list[str]:
        """What this metric cannot use in a sample that sets its required fields (a malformed
        value it would otherwise meet only while scoring), as `field: problem` lines. The run's
        scan asks it of every record before the first judge call; none by default."""
        return []

    def check(self, sample: MultiTurnSample) -> None:
        """Raise `MissingFieldsError` naming every missing required field."""
        missing = self.missing_fields(sample)
        if missing:
            raise MissingFieldsError(self.name, missing, sample.id)

    def passed(self, result: MetricResult) -> bool | None:
        """Whether a result meets the threshold; None when unscored, failed or no threshold."""
        if result.value is None or self.threshold is None:
            return None
        return result.value >= self.threshold

    @overload
    def score(
        self, sample: SampleLike, *, judge: Judge | str | None = None
    ) -> Coroutine[Any, Any, MetricResult]: ...

    @overload
    def score(self, sample: None = None, **fields: Any) -> ScoreResult | None: ...

    def score(
        self, sample: SampleLike | None = None, **fields: Any
    ) -> Coroutine[Any, Any, MetricResult] | ScoreResult | None:
        """Score one sample: `await metric.score(sample)` gives the `MetricResult`. Raises
        `MissingFieldsError` before any judge call; a `JudgeError` while scoring gives a failed
        result with the usage spent so far.

        Ragas's collections habit, sync: given no sample but the sample's fields as keywords
        (`metric.score(user_input=[...], reference_tool_calls=[...])`) it is `ascore`'s result.
        """
        if sample is not None:
            return self._score_sample(sample, judge=fields.pop("judge", None), **fields)
        return run_sync(lambda: self.ascore(**fields))

    async def _score_sample(
        self, sample: SampleLike, *, judge: Judge | str | None = None
    ) -> MetricResult:
        """`score(sample)`: the one async core every other way of scoring goes through."""
        converted = as_sample(sample)
        self.check(converted)
        ask = Ask(self._judge_for(judge) if self.uses_judge else None, self.name)
        try:
            result = await self._score(converted, ask)
        except JudgeError as exc:
            votes = ask.details() or None
            return MetricResult.failure(type(exc).__name__, str(exc), votes, usage=ask.usage)
        votes = ask.details()
        if ask.usage == Usage() and not votes:
            return result
        usage = Usage().add(result.usage).add(ask.usage)
        details = {**result.details, **votes} if votes else result.details
        return MetricResult(result.value, result.reason, details, usage, result.error)

    def score_sync(self, sample: SampleLike, *, judge: Judge | str | None = None) -> MetricResult:
        """`score` for sync code (works inside a running event loop too, e.g. Jupyter)."""
        return run_sync(lambda: self._score_sample(sample, judge=judge))

    async def multi_turn_ascore(
        self, sample: SampleLike, callbacks: Any = None, timeout: float | None = None
    ) -> ScoreResult | None:
        """Ragas habit: the score as a float that also carries `.value`, `.reason` and the rest
        of the result (`ScoreResult`); None when unscored.

        Unlike a silent None, a failed result raises `MetricFailedError` (carrying the result).
        `callbacks` is accepted for Ragas compatibility and ignored; `timeout` is in seconds.
        """
        del callbacks
        result = await asyncio.wait_for(self._score_sample(sample), timeout)
        if result.failed:
            raise MetricFailedError(self.name, result)
        return None if result.value is None else ScoreResult.of(result)

    def multi_turn_score(
        self, sample: SampleLike, callbacks: Any = None, timeout: float | None = None
    ) -> ScoreResult | None:
        """Ragas habit, sync: like `multi_turn_ascore` (raises `MetricFailedError` on failure)."""
        return run_sync(lambda: self.multi_turn_ascore(sample, callbacks, timeout))

    async def ascore(self, **fields: Any) -> ScoreResult | None:
        """Ragas's collections call shape: the sample's fields as keywords, e.g.
        `await metric.ascore(user_input=[...], reference_topics=[...])`; the same result as
        `multi_turn_ascore(sample)`."""
        return await self.multi_turn_ascore(plain(fields))  # Ragas's message objects too

    @abstractmethod
    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        """Score a sample whose required fields are set; ask the judge through `ask`."""

    def _judge_for(self, given: Judge | str | None) -> Judge:
        """The judge to use: the call's argument, else the metric's own, else the default."""
        if given is not None:
            return _resolve(given)
        own = self.own_judge()
        return own if own is not None else _resolve(None)


#: The names a metric's judge goes by: ours, DeepEval's and Ragas's.
JUDGE_NAMES = ("judge", "model", "llm")


class JudgeNamesError(UsageError, TypeError):
    """The judge was given under two of its names (`judge=`, `model=`, `llm=`) with different
    values; also a `TypeError`, as Python's own call-shape mistakes are."""


def one_judge(owner: str, given: Mapping[str, Any]) -> Any:
    """The one judge given under any of `JUDGE_NAMES` (None when none is); two names with
    different values raise `JudgeNamesError`."""
    named = {name: value for name, value in given.items() if value is not None}
    values = list(named.values())
    if any(value is not values[0] and value != values[0] for value in values[1:]):
        names = ", ".join(f"{name}=" for name in named)
        raise JudgeNamesError(
            f"{owner}: the judge is given as {names} with different values; give it once, "
            "as judge=, model= (DeepEval's name) or llm= (Ragas's name)"
        )
    return values[0] if values else None


def accept_judge_names(cls: type[Any]) -> None:
    """Let the `__init__` that `cls` defines take its judge under every name of `JUDGE_NAMES`
    (called by `Metric` and `DeepEvalFacade` for each subclass; one place for every metric)."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "__judge_names__", False):
        return
    signature = inspect.signature(init)
    target = next((name for name in JUDGE_NAMES if name in signature.parameters), None)
    if target is None:
        return  # a metric without a judge

    @functools.wraps(init)
    def init_with_judge_names(self: Any, *args: Any, **kwargs: Any) -> None:
        given = {name: kwargs.pop(name) for name in JUDGE_NAMES if name in kwargs}
        positional = signature.bind_partial(self, *args).arguments
        if target in positional:
            given[target] = positional.pop(target)
            args = tuple(value for name, value in positional.items() if name != "self")
        judge = one_judge(cls.__name__, given)
        if judge is not None:
            kwargs[target] = judge
        init(self, *args, **kwargs)

    init_with_judge_names.__judge_names__ = True  # type: ignore[attr-defined]
    cls.__init__ = init_with_judge_names


accept_judge_names(Metric)  # subclasses without an __init__ of their own inherit it


def _resolve(spec: Judge | str | None) -> Judge:
    """A Judge as is; a spec string (or None for the default) through `resolve_judge`."""
    if spec is not None and not isinstance(spec, str):
        return spec
    # Imported lazily: the judges package loads heavy parts and is not needed by every metric.
    judges = importlib.import_module("convoeval.judges")
    judge: Judge = judges.resolve_judge(spec)
    return judge


def as_metric(obj: Any) -> Metric:
    """The stateless metric core behind `obj`: a `Metric` as is, a compatibility facade (an
    object with a `core` attribute, e.g. DeepEval-named classes) unwrapped. The runner calls this
    for every metric it is given, so facade state never crosses samples."""
    if isinstance(obj, Metric):
        return obj
    core = getattr(obj, "core", None)
    if isinstance(core, Metric):
        return core
    raise TypeError(f"a metric must be a Metric (or a metric facade), not {obj!r}")
