"""The GGUF file a `gguf:PATH` judge serves: checked before anything starts (it exists, can be
read, starts with the GGUF magic bytes), and hashed, since its SHA-256 (not its path) keys the
judge's cached answers: the same file moved or renamed keeps its answers, another file under the
same name does not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from convoeval.judges.protocol.base import JudgeConfigError

#: The first four bytes of every GGUF file.
MAGIC = b"GGUF"
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
    """The SHA-256 of the file's bytes (hex), computed once per process per unchanged file."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    digest = _DIGESTS.get(key)
    if digest is None:
        sha = hashlib.sha256()
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                sha.update(block)
        digest = _DIGESTS[key] = sha.hexdigest()
    return digest
