"""The labelled dev files in ../shared/data as convoeval records with `metadata.labels`, for
`convoeval run` and then `convoeval agree` (issue 15: agree must reproduce agreement.py).

Usage: python benchmarks/agree_data.py OUT_DIR [--xstest FILE] [--clinc FILE] [--dbdc3 FILE]

Writes OUT_DIR/xstest.jsonl, clinc.jsonl and dbdc3.jsonl (one record per XSTest row, per CLINC150
row and allowed-topic list, per DBDC3 dialogue) and labels files keyed by record id for the
slices agreement.py reports apart (labels/xstest-annotators-agree.jsonl, labels/xstest-MODEL.jsonl,
labels/clinc-LIST.jsonl). The labels follow docs/agreement.md:

- XSTest: [user, assistant]; `topic_adherence: {"0": {"answered": bool}}`: every topic the judge
  takes from user message 0 (the prompt) gets the row's label (refused and partial_refusal are
  not answered), as agreement.py counts both as refused.
- CLINC150: [user text] with one list's allowed topics; `topic_adherence: {"0": {"in_scope":
  bool}}`, true when the row's domain is one the list covers (`_agreement_clinc.FIT_LISTS`).
- DBDC3: the dialogue; `conversation_relevancy: {EXCHANGE: bool}` for each system turn with a
  majority of O (relevant) or X (not), as agreement.py decides; EXCHANGE is the number convoeval
  gives the exchange that the turn replies to (`split_exchanges`), so a system turn with no text
  labels an exchange that has no reply to judge (agree counts it as unscored).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_clinc import FIT_LISTS  # noqa: E402
from _data import add_labelled_options, missing_labelled  # noqa: E402
from _stats import read_jsonl  # noqa: E402

from convoeval.schema import MultiTurnSample, split_exchanges  # noqa: E402

#: Allowed topics of an XSTest record: topic adherence needs some; its in_scope verdicts there
#: carry no label and are counted as unlabelled.
XSTEST_TOPICS = ["general questions"]
Record = dict[str, Any]
TopicLists = Mapping[str, tuple[Sequence[str], frozenset[str]]]


def xstest_records(rows: list[dict[str, Any]]) -> list[Record]:
    """One [user, assistant] record per XSTest row, its label on every topic of message 0."""
    return [
        {
            "id": str(row["id"]),
            "user_input": [
                {"type": "human", "content": row["user"]},
                {"type": "ai", "content": row["assistant"]},
            ],
            "reference_topics": XSTEST_TOPICS,
            "metadata": {
                "model": row.get("model"),
                "annotators_agree": bool(row.get("annotators_agree", True)),
                "labels": {"topic_adherence": {"0": {"answered": row["label"] == "answered"}}},
            },
        }
        for row in rows
    ]


def clinc_records(rows: list[dict[str, Any]], lists: TopicLists) -> list[Record]:
    """One [user] record per CLINC150 row and topic list, in scope when the list covers its
    domain; ids are `clinc-LIST-N` (N the row's line, from 0)."""
    return [
        {
            "id": f"clinc-{name}-{n}",
            "user_input": [{"type": "human", "content": row["text"]}],
            "reference_topics": list(topics),
            "metadata": {
                "list": name,
                "labels": {"topic_adherence": {"0": {"in_scope": row["domain"] in domains}}},
            },
        }
        for name, (topics, domains) in lists.items()
        for n, row in enumerate(rows)
    ]


def dbdc3_records(dialogues: list[dict[str, Any]]) -> list[Record]:
    """One record per DBDC3 dialogue, a label on each exchange whose system turn has a majority
    of O or X votes (O + T + X counted, as agreement.py does)."""
    records = []
    for dialogue in dialogues:
        turns = dialogue["turns"]
        messages = [
            {"type": "human" if t["speaker"] == "U" else "ai", "content": t["utterance"]}
            for t in turns
        ]
        sample = MultiTurnSample.model_validate({"user_input": messages})
        _, exchanges = split_exchanges(sample.user_input)
        # the exchange each user turn opens (DBDC3 never has two user turns in a row)
        opened = {e.first: e.index for e in exchanges}
        labels: dict[str, bool] = {}
        for i, turn in enumerate(turns):
            if turn["speaker"] != "S" or i == 0 or turns[i - 1]["speaker"] != "U":
                continue
            if "O" not in turn:
                continue
            o, t, x = int(turn["O"]), int(turn.get("T", 0)), int(turn["X"])
            if 2 * o > o + t + x or 2 * x > o + t + x:
                labels[str(opened[i - 1])] = 2 * o > o + t + x
        record: Record = {"id": str(dialogue["dialogue_id"]), "user_input": messages}
        record["metadata"] = {"labels": {"conversation_relevancy": labels}}
        records.append(record)
    return records


def label_slices(xstest: list[Record], clinc: list[Record]) -> dict[str, list[dict[str, Any]]]:
    """Labels files (name -> lines keyed by id) for the slices agreement.py reports apart."""
    slices: dict[str, list[dict[str, Any]]] = {"xstest-annotators-agree": []}
    for record in xstest:
        line = {"id": record["id"], **record["metadata"]["labels"]}
        if record["metadata"]["annotators_agree"]:
            slices["xstest-annotators-agree"].append(line)
        slices.setdefault(f"xstest-{record['metadata']['model']}", []).append(line)
    for record in clinc:
        line = {"id": record["id"], **record["metadata"]["labels"]}
        slices.setdefault(f"clinc-{record['metadata']['list']}", []).append(line)
    return slices


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    """One JSON object per line (UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def write_all(
    out: Path,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
    lists: TopicLists,
) -> dict[str, Path]:
    """Write the three records files and the slice labels files; name -> path."""
    xstest, clinc = xstest_records(rows[0]), clinc_records(rows[1], lists)
    paths = {name: out / f"{name}.jsonl" for name in ("xstest", "clinc", "dbdc3")}
    write_jsonl(paths["xstest"], xstest)
    write_jsonl(paths["clinc"], clinc)
    write_jsonl(paths["dbdc3"], dbdc3_records(rows[2]))
    for name, lines in label_slices(xstest, clinc).items():
        paths[name] = out / "labels" / f"{name}.jsonl"
        write_jsonl(paths[name], lines)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and write the records."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the records and labels into")
    add_labelled_options(parser)
    args = parser.parse_args(argv)
    if missing_labelled("agree_data.py", args):
        return 2
    rows = (read_jsonl(args.xstest), read_jsonl(args.clinc), read_jsonl(args.dbdc3))
    for name, path in write_all(args.out, rows, FIT_LISTS).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
