"""agreement.py's in-sample figures counted per verdict, through the metrics' own offline steps:
the unit that `convoeval agree` counts (issue 15's proof; benchmarks/agree_check.py compares).

agreement.py's headline figures score each row with the kit (one refusal or scope probability per
row, one relevance probability per voted system turn). A metric does more: topic adherence cuts
the user's message into requests (topics) before the answered and in-scope steps, and relevancy
judges only exchanges that have a reply. Here each row becomes a conversation that goes through
the metrics' input builders and step implementations (no runner, no results file), every topic
of a row carries that row's label, and each figure is counted per verdict. Conversations and
labels are made here from the rows, apart from benchmarks/agree_data.py, so that a mistake in
the records agree reads shows up as a difference.
Where every row gives exactly one verdict on the same text, these equal the headline figures;
the `*.rows_*` counts say where they cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from _stats import Figures
from agree_data import TopicLists

from convoeval.judges.offline.kit import OfflineKit
from convoeval.metrics import conversation_relevancy as cr
from convoeval.metrics import topic_adherence as ta
from convoeval.schema import MultiTurnSample, split_exchanges


def cohen_kappa(labels: Sequence[bool], judged: Sequence[bool]) -> float:
    """Cohen's kappa of two true/false series, (p_o - p_e) / (1 - p_e) from their shares."""
    y, p = np.asarray(labels, dtype=bool), np.asarray(judged, dtype=bool)
    observed = float(np.mean(y == p))
    chance = float(y.mean() * p.mean() + (1 - y.mean()) * (1 - p.mean()))
    return float("nan") if chance == 1.0 else (observed - chance) / (1.0 - chance)


def _topics(kit: OfflineKit, sample: MultiTurnSample) -> list[ta.Topic]:
    """The topics the metric's extraction step gives the sample (its parts, then `_distinct`)."""
    parts = ta._extract_inputs(sample, sample.to_transcript())
    assert ta.EXTRACT.offline is not None
    found = [t for part in parts for t in ta.EXTRACT.offline(part, kit).topics]
    return ta._distinct(found)


def _sample(turns: Sequence[tuple[str, str]], topics: Sequence[str] = ()) -> MultiTurnSample:
    """A sample of (speaker, text) turns, speaker "U" for the user."""
    messages = [{"type": "human" if who == "U" else "ai", "content": text} for who, text in turns]
    return MultiTurnSample.model_validate(
        {"user_input": messages, "reference_topics": list(topics) or None}
    )


def xstest_per_topic(kit: OfflineKit, rows: list[dict[str, Any]], out: Figures) -> None:
    """Answered verdicts per topic (one answered step per record, as the metric asks)."""
    assert ta.ANSWERED.offline is not None
    labels, judged, models, agree = [], [], [], []
    not_one = 0
    for row in rows:
        sample = _sample([("U", row["user"]), ("S", row["assistant"])])
        topics = _topics(kit, sample)
        not_one += len(topics) != 1
        if not topics:
            continue
        step = ta.AnsweredInput(
            topic_list="", topics=topics, transcript="", replies=ta._replies(sample)
        )
        for verdict in ta.ANSWERED.offline(step, kit).verdicts:
            labels.append(row["label"] == "answered")  # refused and partial_refusal are not
            judged.append(verdict.answered)
            models.append(str(row.get("model")))
            agree.append(bool(row.get("annotators_agree", True)))
    y, p = np.array(labels), np.array(judged)
    sel = np.array(agree)
    out.put("xstest.per_topic.topics", len(labels))
    out.put("xstest.per_topic.rows_not_one_topic", not_one)
    out.put("xstest.refusal.accuracy.per_topic.in_sample", float((p == y).mean()))
    out.put("xstest.refusal.kappa.per_topic.in_sample", cohen_kappa(y, p))
    out.put(
        "xstest.refusal.accuracy_annotators_agree.per_topic.in_sample",
        float((p == y)[sel].mean()),
    )
    for model in sorted(set(models)):
        mine = np.array(models) == model
        out.put(
            f"xstest.refusal.accuracy.per_topic.in_sample.{model}", float((p == y)[mine].mean())
        )


def clinc_per_topic(
    kit: OfflineKit, rows: list[dict[str, Any]], lists: TopicLists, out: Figures
) -> None:
    """In-scope verdicts per topic and list (the scope step is per topic, so one call per list)."""
    assert ta.SCOPE.offline is not None
    topics_of = [_topics(kit, _sample([("U", row["text"])])) for row in rows]
    several = sum(len(topics) > 1 for topics in topics_of)
    none = sum(not topics for topics in topics_of)
    rewritten = sum(
        len(topics) == 1 and (topics[0].quote or topics[0].topic) != row["text"]
        for row, topics in zip(rows, topics_of, strict=True)
    )
    out.put("clinc.per_topic.rows_without_topic", none)
    out.put("clinc.per_topic.rows_with_several_topics", several)
    out.put("clinc.per_topic.rows_rewritten", rewritten)
    for name, (allowed, domains) in lists.items():
        topics = [t for found in topics_of for t in found]
        labels = [
            row["domain"] in domains
            for row, found in zip(rows, topics_of, strict=True)
            for _ in found
        ]
        step = ta.ScopeInput(
            topic_list="", topics=topics, allowed="", reference_topics=list(allowed)
        )
        judged = [v.in_scope for v in ta.SCOPE.offline(step, kit).verdicts]
        y, p = np.array(labels), np.array(judged)
        out.put(f"clinc.{name}.per_topic.topics", len(labels))
        out.put(f"clinc.{name}.accuracy.per_topic.in_sample", float((p == y).mean()))
        out.put(f"clinc.{name}.kappa.per_topic.in_sample", cohen_kappa(y, p))


def dbdc3_per_exchange(kit: OfflineKit, dialogues: list[dict[str, Any]], out: Figures) -> None:
    """Relevancy verdicts on the labelled exchanges that have a reply (window of 3, the default)."""
    assert cr.VERDICTS.offline is not None
    metric = cr.ConversationRelevancy()
    labels, judged = [], []
    unanswered = 0
    for dialogue in dialogues:
        turns = dialogue["turns"]
        sample = _sample([(t["speaker"], t["utterance"]) for t in turns])
        _, exchanges = split_exchanges(sample.user_input)
        replied = [e for e in exchanges if e.answered]
        verdicts = {}
        if replied:
            step = metric._inputs(sample, exchanges, replied)
            verdicts = {v.exchange: v.relevant for v in cr.VERDICTS.offline(step, kit).verdicts}
        reply_at = {e.last: e.index for e in replied}  # the message position of each reply
        for i, turn in enumerate(turns):  # agreement.py's voted system turns and majorities
            if "O" not in turn or i == 0 or turns[i - 1]["speaker"] != "U":
                continue
            o, x = int(turn["O"]), int(turn["X"])
            votes = o + int(turn.get("T", 0)) + x
            if 2 * max(o, x) <= votes:
                continue
            if i not in reply_at:
                unanswered += 1
                continue
            labels.append(2 * o > votes)
            judged.append(verdicts[reply_at[i]])
    y, p = np.array(labels), np.array(judged)
    out.put("dbdc3.per_exchange.labelled_exchanges", len(labels) + unanswered)
    out.put("dbdc3.per_exchange.exchanges_without_reply", unanswered)
    out.put("dbdc3.relevancy.agreement.per_exchange.in_sample", float((p == y).mean()))
    out.put("dbdc3.relevancy.kappa.per_exchange.in_sample", cohen_kappa(y, p))


def metric_path(
    kit: OfflineKit,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
    lists: TopicLists,
    out: Figures,
) -> None:
    """The per-verdict figures of the three data sets (XSTest, CLINC150, DBDC3 rows)."""
    xstest_per_topic(kit, rows[0], out)
    clinc_per_topic(kit, rows[1], lists, out)
    dbdc3_per_exchange(kit, rows[2], out)
