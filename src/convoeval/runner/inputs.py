"""The runner's input: samples in any accepted form, read twice (a checking pass, a scoring pass).

A data file is simply read again; a list is walked again; any other iterable is spooled to a
temporary JSONL file during the checking pass, so memory never holds more than one record.
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
from convoeval.io.records import check_format, convert
from convoeval.metrics import Metric
from convoeval.schema import ConversationalTestCase, MultiTurnSample

#: What `evaluate` accepts as samples: a path, or an iterable of samples, cases or dicts.
SamplesLike = str | os.PathLike[str] | Iterable[MultiTurnSample | ConversationalTestCase | Any]
#: The `data` value of the sidecar meta when samples were given as Python objects.
IN_MEMORY = "<python objects>"


class RequiredFieldsError(DataError):
    """Records lack fields that the chosen metrics require (found before any judge call)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One record to score: its 0-based position, where it came from and its sample."""

    index: int
    where: str
    sample: MultiTurnSample


@dataclass
class Scan:
    """What the checking pass found: record count, content fingerprint, problems."""

    count: int = 0
    fingerprint: str = ""
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _where(base: str, sample: MultiTurnSample | None) -> str:
    if sample is not None and sample.id is not None:
        return f"{base} (id {sample.id!r})"
    return base


def _from_object(obj: Any, format: str) -> tuple[MultiTurnSample | None, list[str]]:
    """Convert one Python object to a sample: (sample or None, problems)."""
    if isinstance(obj, MultiTurnSample):
        return obj, []
    if isinstance(obj, ConversationalTestCase):
        try:
            return obj.to_sample(), []
        except ValueError as exc:
            return None, [str(exc)]
    if isinstance(obj, Mapping):
        sample, problems, _ = convert(dict(obj), format)
        return sample, problems
    return None, [
        "expected a MultiTurnSample, a ConversationalTestCase or a dict (Ragas, OpenAI chat or "
        f"DeepEval layout), got {type(obj).__name__}"
    ]


class Source:
    """A re-readable stream of records: a data file, a sequence, or a spooled iterator."""

    def __init__(self, samples: SamplesLike, *, format: str = "auto") -> None:
        check_format(format)
        self.format = format
        self._path: str | None = None
        self._objects: Sequence[Any] | None = None
        self._iterable: Iterable[Any] | None = None
        self._spool_dir: str | None = None
        self._spooled = False
        if isinstance(samples, str | os.PathLike):
            self._path = os.fspath(samples)
            self.label = os.path.abspath(self._path)
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

    def _raw(self) -> Iterator[tuple[int, str, MultiTurnSample | None, list[str]]]:
        """(index, where, sample or None, problems as `where: problem` lines) per record."""
        if self._path is not None:
            for index, record in enumerate(read_records(self._path, format=self.format)):
                sample = record.sample if record.ok else None
                base = f"samples[{index}]" if self._spooled else record.where
                yield index, _where(base, sample), sample, record.problems()
            return
        objects: Iterable[Any] = self._objects if self._objects is not None else ()
        if self._iterable is not None:
            objects, self._iterable = self._iterable, None  # an iterator is walked only once
        for index, obj in enumerate(objects):
            sample, errors = _from_object(obj, self.format)
            where = f"samples[{index}]"
            yield index, _where(where, sample), sample, [f"{where}: {e}" for e in errors]

    def scan(self, metrics: Sequence[Metric]) -> Scan:
        """The checking pass: validate every record, check every metric's fields, fingerprint.

        An iterator's records are written to a temporary JSONL file as they go by, so that the
        scoring pass can read them again. Raises `DataError` listing every invalid record, else
        `RequiredFieldsError` listing every record that lacks a required field (and which
        metrics need it).
        """
        spool_path = None
        if self._iterable is not None:
            self._spool_dir = tempfile.mkdtemp(prefix="convoeval-spool-")
            spool_path = os.path.join(self._spool_dir, "samples.jsonl")
        scan = Scan()
        digest = hashlib.sha256()
        with ExitStack() as stack:
            spool = (
                stack.enter_context(open(spool_path, "w", encoding="utf-8")) if spool_path else None
            )
            for index, where, sample, problems in self._raw():
                scan.count = index + 1
                self._check(scan, where, sample, problems, metrics)
                if sample is not None and self._path is None:
                    text = _canonical(sample)
                    digest.update(text.encode("utf-8") + b"\n")
                    if spool is not None:
                        spool.write(text + "\n")
        if spool_path is not None:
            self._path, self._spooled, self.format = spool_path, True, "ragas"
        elif self._path is not None:
            digest = _file_digest(self._path)
        scan.fingerprint = digest.hexdigest()
        _raise_problems(scan)
        return scan

    @staticmethod
    def _check(
        scan: Scan,
        where: str,
        sample: MultiTurnSample | None,
        problems: list[str],
        metrics: Sequence[Metric],
    ) -> None:
        if problems or sample is None:
            scan.problems.extend(problems or [f"{where}: not a valid conversation"])
            return
        needed: dict[str, list[str]] = {}
        for metric in metrics:
            for name in metric.missing_fields(sample):
                needed.setdefault(name, []).append(metric.name)
        if needed:
            parts = [f"{name} (needed by {', '.join(users)})" for name, users in needed.items()]
            scan.missing.append(f"{where}: missing {'; '.join(parts)}")

    def items(self) -> Iterator[Item]:
        """The scoring pass: every record in order (call after a successful `scan`)."""
        for index, where, sample, problems in self._raw():
            if sample is None:
                raise DataError(problems or [f"{where}: not a valid conversation"])
            yield Item(index, where, sample)

    def close(self) -> None:
        """Delete the spool file of an iterator, if one was written."""
        if self._spool_dir is not None:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None


def _canonical(sample: MultiTurnSample) -> str:
    return json.dumps(sample.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _file_digest(path: str) -> Any:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest


def _raise_problems(scan: Scan) -> None:
    if scan.problems:
        raise DataError(scan.problems)
    if scan.missing:
        raise RequiredFieldsError(scan.missing)
