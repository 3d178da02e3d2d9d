"""The conversations file of a simulation and its sidecar, with `convoeval run`'s resume rules.

The conversations file is append-only JSONL, one conversation per line in Ragas layout (what
`convoeval run` reads as it is); each carries `metadata.simulation` (scenario, trial, stop,
turns, seeds, usage). The sidecar `<file>.meta.json` says what made the file (the identity:
scenarios, bot, user model, turn cap, seed, repeats) and lists the failed conversations, which
are never written as conversations. A run on the same file resumes: conversations already
written (and failures, unless retried) are kept and not played again; a run with another
identity is refused, saying what differs. A run killed mid-write leaves at most one partial
last line, cut off before appending again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from convoeval.rows.files import meta_path
from convoeval.rows.row import ResultsFileError
from convoeval.schema import MultiTurnSample

#: The `format` marker of a simulation's sidecar.
SIMULATION_FORMAT = "convoeval-simulation"
_HINT = "use --overwrite (overwrite=True in Python) to start again, or another output file (-o)"
#: The user model settings that shape its answers (its limits and cache do not).
_USER_KEYS = ("kind", "name", "model", "endpoint", "temperature", "seed", "max_tokens", "samples")
Key = tuple[int, int]


def fingerprint(records: list[dict[str, Any]]) -> str:
    """A short hash of the scenarios as read (their order included)."""
    text = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def user_identity(description: dict[str, Any]) -> dict[str, Any]:
    """The parts of the user model's description that shape its answers."""
    return {k: description.get(k) for k in _USER_KEYS}


@dataclass
class Existing:
    """What an output file already holds: the (scenario, trial) keys written, and the failures
    kept from earlier runs (by key)."""

    written: set[Key] = field(default_factory=set)
    failed: dict[Key, dict[str, Any]] = field(default_factory=dict)

    def done(self, key: Key) -> bool:
        return key in self.written or key in self.failed


def prepare(path: Path, meta: dict[str, Any], *, overwrite: bool, retry_failed: bool) -> Existing:
    """Start a fresh output file, or check an existing one against its sidecar and take in
    what it holds (resume); with `retry_failed`, earlier failures are played again."""
    if overwrite or not path.exists() or path.stat().st_size == 0:
        path.write_bytes(b"")
        return Existing()
    old = read_sidecar(path)
    if old is None:
        raise ResultsFileError(
            f"{path} holds lines but no {meta_path(path).name}, so it cannot be continued "
            f"safely; {_HINT}"
        )
    changed = [
        f"the {name.replace('_', ' ')} differs ({_short(old['identity'].get(name))} before, "
        f"{_short(value)} now)"
        for name, value in meta["identity"].items()
        if old.get("identity", {}).get(name) != value
    ]
    if changed:
        raise ResultsFileError(
            f"{path} cannot be resumed by this simulation: {'; '.join(changed)}; {_HINT}"
        )
    meta["started"] = old.get("started", meta.get("started"))
    existing = Existing(written={key for key, _ in _lines(path, repair=True)})
    for entry in old.get("failed", []):
        key = (int(entry["index"]), int(entry["trial"]) - 1)
        if key not in existing.written and not retry_failed:
            existing.failed[key] = entry
    return existing


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The sidecar of a simulation's output file, None when there is none."""
    side = meta_path(path)
    if not side.exists():
        return None
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsFileError(f"{side}: unreadable simulation sidecar: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != SIMULATION_FORMAT:
        raise ResultsFileError(
            f"{side}: not the sidecar of a simulation's conversations file; {_HINT}"
        )
    return data


def write_sidecar(path: Path, meta: dict[str, Any]) -> None:
    """Write the sidecar atomically (a temporary file renamed over it)."""
    side = meta_path(path)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, side)


def read_conversations(path: Path) -> list[MultiTurnSample]:
    """The conversations of an output file in (scenario, trial) order."""
    found = sorted(_lines(path, repair=False), key=lambda item: item[0])
    return [MultiTurnSample.model_validate(record) for _, record in found]


def _lines(path: Path, *, repair: bool) -> Iterator[tuple[Key, dict[str, Any]]]:
    """Each complete line's (scenario, trial) key and record; a partial last line (a run killed
    mid-write) is skipped, and with `repair` cut off the file."""
    good_end = 0
    partial = False
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                partial = True
                break
            good_end += len(raw)
            if raw.strip():
                yield _key(raw, f"{path}:{number}")
    if partial and repair:
        with open(path, "r+b") as handle:
            handle.truncate(good_end)


def _key(raw: bytes, where: str) -> tuple[Key, dict[str, Any]]:
    try:
        record = json.loads(raw)
        block = record["metadata"]["simulation"]
        return (int(block["index"]), int(block["trial"]) - 1), record
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultsFileError(
            f"{where}: not a conversation written by convoeval simulate ({exc!r}); {_HINT}"
        ) from None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
