"""The GGUF file a `gguf:PATH` judge serves: checked before anything starts (it exists, can be
read, starts with the GGUF magic bytes), and hashed, since its SHA-256 (not its path) keys the
judge's cached answers: the same file moved or renamed keeps its answers, another file under the
same name does not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from convoeval.judges.core.cache import default_cache_dir
from convoeval.judges.protocol.base import JudgeConfigError

#: The first four bytes of every GGUF file.
MAGIC = b"GGUF"
#: The file, in the judge cache folder, that remembers digests between runs.
MEMO = "gguf-sha256.json"
#: (resolved path, size, mtime_ns, inode) -> SHA-256, so a process hashes a file once.
_DIGESTS: dict[tuple[str, int, int, int], str] = {}


class GGUFFileError(JudgeConfigError):
    """The file a `gguf:` judge names is missing, unreadable or not a GGUF model."""


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """The file as an absolute path, once it is known to be a readable GGUF file; else a
    one-line `GGUFFileError` saying what to do."""
    given = Path(path).expanduser()
    if not str(path).strip():
        raise GGUFFileError("judge 'gguf:' names no file: give one, e.g. --judge gguf:model.gguf")
    if not given.exists():
        raise GGUFFileError(
            f"judge gguf:{path}: no such file; give the path of a GGUF model file "
            "(e.g. --judge gguf:/models/qwen2.5-1.5b-instruct-q4_k_m.gguf)"
        )
    if given.is_dir():
        raise GGUFFileError(f"judge gguf:{path} is a folder; give the path of a .gguf file in it")
    try:
        with given.open("rb") as fh:
            head = fh.read(len(MAGIC))
    except OSError as exc:
        raise GGUFFileError(
            f"judge gguf:{path}: cannot read it ({exc.strerror or exc}); check its permissions"
        ) from None
    if head != MAGIC:
        raise GGUFFileError(
            f"judge gguf:{path} is not a GGUF file (it does not start with the bytes 'GGUF'); "
            "give a model converted to GGUF, as llama.cpp loads"
        )
    return given.resolve()


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes (hex). Hashing a multi-GB model takes seconds, so the
    digest is remembered per unchanged file (path, size, mtime, inode): in this process, and in
    `gguf-sha256.json` in the judge cache folder for the next run."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    digest = _DIGESTS.get(key)
    if digest is not None:
        return digest
    memo = default_cache_dir() / MEMO
    known = _read_memo(memo)
    stored = known.get(_memo_key(key))
    if isinstance(stored, str) and len(stored) == 64:
        digest = stored
    else:
        with path.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        known[_memo_key(key)] = digest
        with contextlib.suppress(OSError):  # a read-only cache folder: hash again next time
            memo.parent.mkdir(parents=True, exist_ok=True)
            partial = memo.with_name(f"{memo.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
            partial.replace(memo)
    _DIGESTS[key] = digest
    return digest


def _memo_key(key: tuple[str, int, int, int]) -> str:
    return "|".join(str(part) for part in key)


def _read_memo(memo: Path) -> dict[str, object]:
    try:
        found = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
