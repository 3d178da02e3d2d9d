"""The runner's input: samples in any accepted form, read twice (one checking scan, one scoring
pass). The scan validates every record, checks (or, without metrics, chooses) the metrics'
required fields, asks each metric what else it cannot use (`Metric.data_problems`, e.g. a
malformed rubric) and fingerprints the content, all in one read of the data.

A data file is simply read again; a list is walked again; any other iterable is spooled to a
temporary JSONL file during the scan, so memory never holds more than one record.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from convoeval.io import DataError, read_records
from convoeval.io._convert import plain
from convoeval.io.records import check_format, convert
from convoeval.metrics import Metric
from convoeval.schema import ConversationalTestCase, MultiTurnSample

#: What `evaluate` accepts as samples: a path, or an iterable of samples, cases or dicts.
SamplesLike = str | os.PathLike[str] | Iterable[MultiTurnSample | ConversationalTestCase | Any]
#: The `data` value of the sidecar meta when samples were given as Python objects.
IN_MEMORY = "<python objects>"


class RequiredFieldsError(DataError):
    """Records lack fields that the chosen metrics require (found before any judge call)."""


class NothingToScoreError(DataError):
    """The input holds no record to score (an empty file, or every record skipped as invalid)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One record to score: its 0-based position, where it came from and its sample."""

    index: int
    where: str
    sample: MultiTurnSample


@dataclass
class Scan:
    """What the scan found: records, fingerprint, problems, and per metric the fields lacking."""

    count: int = 0
    fingerprint: str = ""
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    invalid: set[int] = field(default_factory=set)
    lacking: dict[str, dict[str, int]] = field(default_factory=dict)
    #: When metrics are chosen from the data: per metric, the records it found malformed.
    flaws: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    @property
    def valid(self) -> int:
        """How many records will be scored."""
        return self.count - len(self.invalid)


def _where(base: str, sample: MultiTurnSample | None) -> str:
    if sample is not None and sample.id is not None:
        return f"{base} (id {sample.id!r})"
    return base


class Source:
    """A re-readable stream of records: a data file, a sequence, or a spooled iterator.

    `limit` keeps the first N records; `reference_topics` is given to every record that has
    none; `read_options` (messages_field, fields) go to the io layer's readers.
    """

    def __init__(
        self,
        samples: SamplesLike,
        *,
        format: str = "auto",
        limit: int | None = None,
        reference_topics: Sequence[str] | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> None:
        check_format(format)
        self.format = format
        self.limit = limit
        self.topics = list(reference_topics) if reference_topics else None
        self.read_options = dict(read_options or {})
        self._path: str | None = None
        self._objects: Sequence[Any] | None = None
        self._iterable: Iterable[Any] | None = None
        self._spool_dir: str | None = None
        self._spooled = False
        self._invalid: set[int] = set()
        if isinstance(samples, str | os.PathLike):
            self._path = os.fspath(samples)
            self.label = self._path  # as given: the sidecar and report show no machine path
        elif isinstance(samples, MultiTurnSample | ConversationalTestCase | Mapping):
            raise TypeError("samples must be a path or an iterable of samples, not one sample")
        elif isinstance(samples, Sequence):
            self._objects = samples
            self.label = IN_MEMORY
        elif isinstance(samples, Iterable):
            self._iterable = samples
            self.label = IN_MEMORY
        else:
            raise TypeError(
                f"samples must be a data file path or an iterable, not {type(samples).__name__}"
            )

    def _from_object(self, obj: Any) -> tuple[MultiTurnSample | None, list[str]]:
        """Convert one Python object to a sample: (sample or None, problems)."""
        if isinstance(obj, MultiTurnSample):
            return obj, []
        if isinstance(obj, ConversationalTestCase):
            try:
                return obj.to_sample(), []
            except ValueError as exc:
                return None, [str(exc)]
        if isinstance(obj, Mapping) or hasattr(obj, "model_dump"):  # real Ragas/DeepEval objects
            record = dict(obj) if isinstance(obj, Mapping) else plain(obj)
            sample, problems, _ = convert(record, self.format, **self.read_options)
            return sample, problems
        return None, [
            "expected a MultiTurnSample, a ConversationalTestCase or a dict (Ragas, OpenAI chat "
            f"or DeepEval layout), got {type(obj).__name__}"
        ]

    def _records(self) -> Iterator[tuple[int, str, MultiTurnSample | None, list[str]]]:
        """(index, where, sample or None, problems as `where: problem` lines) per record."""
        if self._path is not None:
            options = {} if self._spooled else self.read_options
            for index, record in enumerate(read_records(self._path, format=self.format, **options)):
                sample = record.sample if record.ok else None
                base = f"samples[{index}]" if self._spooled else record.where
                yield index, _where(base, sample), sample, record.problems()
            return
        objects: Iterable[Any] = self._objects if self._objects is not None else ()
        if self._iterable is not None:
            objects, self._iterable = self._iterable, None  # an iterator is walked only once
        for index, obj in enumerate(objects):
            sample, errors = self._from_object(obj)
            where = f"samples[{index}]"
            yield index, _where(where, sample), sample, [f"{where}: {e}" for e in errors]

    def _raw(self) -> Iterator[tuple[int, str, MultiTurnSample | None, list[str]]]:
        """The records up to `limit`, with the default reference topics applied."""
        for index, where, sample, problems in self._records():
            if self.limit is not None and index >= self.limit:
                return
            if sample is not None and self.topics and not sample.reference_topics:
                sample = sample.model_copy(update={"reference_topics": list(self.topics)})
            yield index, where, sample, problems

    def scan(
        self, metrics: Sequence[Metric], *, select: bool = False, skip_invalid: bool = False
    ) -> Scan:
        """The checking pass: validate every record, check every metric's fields, fingerprint.

        With `select`, a record lacking a metric's field is counted (`Scan.lacking`) instead of
        being a problem: the caller then keeps the metrics every record supports. With
        `skip_invalid`, bad records are listed in `Scan.problems`/`missing` and skipped later;
        otherwise `DataError` lists every invalid record, else `RequiredFieldsError` every
        record that lacks a required field. No record to score is `NothingToScoreError`.
        """
        spool_path = None
        if self._iterable is not None:
            self._spool_dir = tempfile.mkdtemp(prefix="convoeval-spool-")
            spool_path = os.path.join(self._spool_dir, "samples.jsonl")
        scan = Scan(lacking={m.name: {} for m in metrics} if select else {})
        digest = hashlib.sha256()
        with ExitStack() as stack:
            spool = (
                stack.enter_context(open(spool_path, "w", encoding="utf-8")) if spool_path else None
            )
            for index, where, sample, problems in self._raw():
                scan.count = index + 1
                text = self._check(scan, index, where, sample, problems, metrics)
                digest.update(text.encode("utf-8") + b"\n")
                if spool is not None:
                    plain = sample.to_dict() if sample is not None else None
                    spool.write(json.dumps(plain, ensure_ascii=False) + "\n")
        if spool_path is not None:
            self._path, self._spooled, self.format = spool_path, True, "ragas"
        scan.fingerprint = digest.hexdigest()
        self._invalid = scan.invalid
        _raise_problems(scan, self.label, skip_invalid)
        return scan

    @staticmethod
    def _check(
        scan: Scan,
        index: int,
        where: str,
        sample: MultiTurnSample | None,
        problems: list[str],
        metrics: Sequence[Metric],
    ) -> str:
        """Check one record into `scan`; return its text for the fingerprint (the sample's JSON,
        or the problems of an invalid record)."""
        if problems or sample is None:
            found = problems or [f"{where}: not a valid conversation"]
            scan.problems.extend(found)
            scan.invalid.add(index)
            return json.dumps(found)
        needed: dict[str, list[str]] = {}
        for metric in metrics:
            missing = metric.missing_fields(sample)
            for name in missing:
                if metric.name in scan.lacking:
                    counts = scan.lacking[metric.name]
                    counts[name] = counts.get(name, 0) + 1
                else:
                    needed.setdefault(name, []).append(metric.name)
            for problem in [] if missing else metric.data_problems(sample):
                line = f"{where}: {problem} (needed by {metric.name})"
                if metric.name in scan.lacking:  # choosing: a problem only if it is chosen
                    scan.flaws.setdefault(metric.name, []).append((index, line))
                else:
                    scan.problems.append(line)
                    scan.invalid.add(index)
        if needed:
            parts = [f"{name} (needed by {', '.join(users)})" for name, users in needed.items()]
            scan.missing.append(f"{where}: missing {'; '.join(parts)}")
            scan.invalid.add(index)
        return sample.model_dump_json()  # deterministic field order; fast (pydantic-core)

    def admit(self, scan: Scan, chosen: Iterable[str], *, skip_invalid: bool = False) -> None:
        """After metrics were chosen from the data (`scan(select=True)`): the records a chosen
        metric found malformed are problems, as they are when the metrics are named."""
        flaws = sorted(flaw for name in chosen for flaw in scan.flaws.get(name, []))
        for index, line in flaws:
            scan.problems.append(line)
            scan.invalid.add(index)
        if flaws:
            _raise_problems(scan, self.label, skip_invalid)

    def items(self) -> Iterator[Item]:
        """The scoring pass: every record to score, in order (call after a successful `scan`)."""
        for index, where, sample, problems in self._raw():
            if index in self._invalid:
                continue
            if sample is None:
                raise DataError(problems or [f"{where}: not a valid conversation"])
            yield Item(index, where, sample)

    def close(self) -> None:
        """Delete the spool file of an iterator, if one was written."""
        if self._spool_dir is not None:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None


def _raise_problems(scan: Scan, label: str, skip_invalid: bool) -> None:
    if scan.count == 0:
        raise NothingToScoreError([f"nothing to score: {label} holds no records"])
    if not skip_invalid:
        if scan.problems:
            raise DataError(scan.problems)
        if scan.missing:
            raise RequiredFieldsError(scan.missing)
    elif scan.valid == 0:
        raise NothingToScoreError(
            [*scan.problems, *scan.missing, f"nothing to score: every record of {label} is invalid"]
        )
