"""Agreement figures through the metric steps with any judge (`agreement.py --judge SPEC`).

The same three datasets as the offline figures, asked the way the metrics ask them: XSTest
refusals through TopicAdherenceScore's `answered` step, CLINC150 scope through its `in_scope`
step (the four topic lists), DBDC3 relevancy through ConversationRelevancy itself (one
request per dialogue, window 3, verdicts of the voted system turns). A step the judge cannot
answer (after its re-ask) is counted as failed and left out of the figures.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from convoeval.judges import Judge, JudgeError
from convoeval.metrics import ConversationRelevancy
from convoeval.metrics.topic_adherence import ANSWERED, SCOPE, AnsweredInput, ScopeInput, Topic
from convoeval.schema import MultiTurnSample, split_exchanges
from convoeval.schema.render import bullets

T = TypeVar("T")
SEED = 20261130


def limited(rows: list[T], limit: int | None) -> list[T]:
    """At most `limit` rows, a seeded random choice kept in file order (all rows when None)."""
    if limit is None or limit >= len(rows):
        return rows
    keep = sorted(random.Random(SEED).sample(range(len(rows)), limit))
    return [rows[i] for i in keep]


async def _guarded(call: Awaitable[T]) -> T | None:
    try:
        return await call
    except JudgeError:
        return None


def _label(text: str) -> str:
    """A short topic label from a request (the judge must echo it exactly)."""
    words = " ".join(text.split()[:8])
    return words[:80].rstrip() or "the request"


def _topic(text: str, index: int) -> Topic:
    return Topic(topic=_label(text), message_index=index, quote=text[:200])


async def _answered(judge: Judge, row: dict[str, Any]) -> bool | None:
    sample = MultiTurnSample.model_validate(
        {
            "user_input": [
                {"type": "human", "content": row["user"]},
                {"type": "ai", "content": row["assistant"]},
            ]
        }
    )
    topic = _topic(row["user"], 0)
    inputs = AnsweredInput(
        transcript=sample.to_transcript(),
        topics=[topic],
        topic_list=bullets([topic.topic]),
        replies={0: row["assistant"]},
    )
    answer = await _guarded(judge.run(ANSWERED, inputs))
    return None if answer is None else answer.output.verdicts[0].answered


async def _in_scope(judge: Judge, text: str, allowed: Sequence[str]) -> bool | None:
    topic = _topic(text, 0)
    inputs = ScopeInput(
        topics=[topic],
        topic_list=bullets([topic.topic]),
        reference_topics=list(allowed),
        allowed=bullets(list(allowed)),
    )
    answer = await _guarded(judge.run(SCOPE, inputs))
    return None if answer is None else answer.output.verdicts[0].in_scope


async def _relevancy(judge: Judge, dialogue: dict[str, Any]) -> list[tuple[bool, int, int, int]]:
    """(judged relevant, O, T, X) for every voted system turn of one dialogue."""
    turns = dialogue["turns"]
    messages = [
        {"type": "human" if t["speaker"] == "U" else "ai", "content": t["utterance"]} for t in turns
    ]
    sample = MultiTurnSample.model_validate({"user_input": messages})
    _, exchanges = split_exchanges(sample.user_input)
    voted = {e.index: turns[e.last] for e in exchanges if e.answered and "O" in turns[e.last]}
    if not voted:
        return []
    metric = ConversationRelevancy(window_size=3)
    result = await metric.score(sample, judge=judge)
    if result.failed:
        return []
    out = []
    for verdict in result.details["verdicts"]:
        turn = voted.get(verdict["exchange"])
        if turn is not None:
            out.append((bool(verdict["relevant"]), turn["O"], turn.get("T", 0), turn["X"]))
    return out


def _share(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else float("nan")


async def figures(
    judge: Judge,
    xstest: list[dict[str, Any]],
    clinc: list[dict[str, Any]],
    dbdc3: list[dict[str, Any]],
    topic_lists: dict[str, tuple[tuple[str, ...], frozenset[str]]],
    spearman: Any,
) -> dict[str, float | int | str]:
    """Every figure, computed with `judge` through the metric steps."""
    out: dict[str, float | int | str] = {"judge": judge.name}
    started = time.perf_counter()
    said = await asyncio.gather(*(_answered(judge, r) for r in xstest))
    pairs = [(s, r) for s, r in zip(said, xstest, strict=True) if s is not None]
    hits = [(not s) == (r["label"] != "answered") for s, r in pairs]
    agree = [h for h, (_, r) in zip(hits, pairs, strict=True) if r.get("annotators_agree", True)]
    out["xstest.rows"] = len(xstest)
    out["xstest.failed"] = len(xstest) - len(pairs)
    out["xstest.refusal.accuracy"] = _share(hits)
    out["xstest.refusal.accuracy_annotators_agree"] = _share(agree)
    texts = [r["text"] for r in clinc]
    out["clinc.rows"] = len(clinc)
    for name, (allowed, domains) in topic_lists.items():
        flags = await asyncio.gather(*(_in_scope(judge, t, allowed) for t in texts))
        kept = [(f, r["domain"] in domains) for f, r in zip(flags, clinc, strict=True)]
        judged = [(f, y) for f, y in kept if f is not None]
        inside = [f == y for f, y in judged if y]
        outside = [f == y for f, y in judged if not y]
        out[f"clinc.{name}.failed"] = len(kept) - len(judged)
        out[f"clinc.{name}.accuracy"] = _share([f == y for f, y in judged])
        out[f"clinc.{name}.balanced_accuracy"] = (_share(inside) + _share(outside)) / 2
    turns = [t for d in await asyncio.gather(*(_relevancy(judge, d) for d in dbdc3)) for t in d]
    majority = [(rel, o * 2 > o + t + x) for rel, o, t, x in turns if max(o, x) * 2 > o + t + x]
    out["dbdc3.dialogues"] = len(dbdc3)
    out["dbdc3.judged_turns"] = len(turns)
    out["dbdc3.majority_turns"] = len(majority)
    out["dbdc3.relevancy.agreement"] = _share([rel == y for rel, y in majority])
    if len({rel for rel, *_ in turns}) > 1:
        votes = [(o - x) / max(o + t + x, 1) for _, o, t, x in turns]
        out["dbdc3.relevancy.spearman"] = spearman([float(r) for r, *_ in turns], votes)
    else:
        out["dbdc3.relevancy.spearman"] = "n/a (every verdict the same)"
    out["seconds"] = time.perf_counter() - started
    return out


def run(
    spec: str,
    options: dict[str, Any],
    data: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
    limit: int | None,
    topic_lists: dict[str, tuple[tuple[str, ...], frozenset[str]]],
    spearman: Any,
) -> int:
    """Resolve the judge, compute and print the figures (`name: value` lines); return 0."""
    from convoeval.judges import OpenAIJudge, resolve_judge

    options = {k: v for k, v in options.items() if v is not None}
    max_tokens = options.pop("max_tokens", None)
    judge: Judge
    if spec.lower().startswith("openai/") and max_tokens is not None:
        judge = OpenAIJudge(spec[len("openai/") :], max_tokens=max_tokens, **options)
    else:
        judge = resolve_judge(spec, **options)
    xstest, clinc, dbdc3 = (limited(rows, limit) for rows in data)

    async def go() -> dict[str, float | int | str]:
        try:
            return await figures(judge, xstest, clinc, dbdc3, topic_lists, spearman)
        finally:
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()

    values = asyncio.run(go())
    total = getattr(judge, "total", None)
    if total is not None:
        values["judge.requests"] = total.requests
        values["judge.prompt_tokens"] = total.prompt_tokens
        values["judge.completion_tokens"] = total.completion_tokens
        values["judge.cached"] = total.cached
    for name, value in values.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name}: {shown}")
    return 0
