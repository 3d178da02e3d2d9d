"""Readers stream: records come out before later lines are read, and memory stays flat."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.io import DataFileError, files, read_records, write_samples

LINE = json.dumps(
    {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "yo"}]}
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo (a POSIX named pipe)")
def test_a_named_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """Issue 11 item 11: a FIFO hung `run` (it reads its input twice); refused, without blocking."""
    path = tmp_path / "stream.jsonl"
    os.mkfifo(path)
    with pytest.raises(DataFileError, match=r"stream\.jsonl: is a named pipe \(FIFO\), not a"):
        read_records(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    """A symlink to /dev/zero grew memory without bound; it is refused before any read."""
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    with pytest.raises(DataFileError, match=r"zero\.jsonl: is a device or socket, not a regular"):
        read_records(link)


def test_a_line_over_the_limit_is_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over the limit is a record error (never held whole); reading goes on after it."""
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "long.jsonl"
    long_line = json.dumps({"user_input": [{"type": "human", "content": "x" * 8_000_000}]})
    path.write_text(LINE + "\n" + long_line + "\n" + LINE + "\n", encoding="utf-8")
    tracemalloc.start()
    try:
        records = list(read_records(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(r.line, r.ok) for r in records] == [(1, True), (2, False), (3, True)]
    assert records[1].problems() == [
        f"{path}:2: line longer than 4096 bytes (the limit for one line)"
    ]
    assert peak < 1_000_000, peak  # the 8 MB line was never held whole (read in 64 KiB steps)
    csv_path = tmp_path / "long.csv"
    csv_path.write_text("user_input\n" + "x" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"long\.csv: line 2: line longer than 4096 bytes"):
        list(read_records(csv_path))


def test_the_default_line_limit_is_64_mib() -> None:
    assert files.MAX_LINE_BYTES == 64 * 2**20
    assert files.line_too_long() == "line longer than 64 MiB (the limit for one line)"


def _big_samples(count: int) -> list[MultiTurnSample]:
    text = "word " * 1000  # about 5 kB per sample
    return [
        MultiTurnSample(id=str(n), user_input=[HumanMessage(content=text), AIMessage(content=text)])
        for n in range(count)
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_reading_keeps_memory_flat(tmp_path: Path, suffix: str) -> None:
    """Peak memory while reading 2000 conversations (~20 MB) stays far below the file size."""
    path = tmp_path / f"big{suffix}"
    write_samples(_big_samples(2000), path)
    size = path.stat().st_size if suffix != ".parquet" else 2000 * 10_000
    tracemalloc.start()
    try:
        count = sum(1 for record in read_records(path) if record.ok)
        _, peak = tracemalloc.get_traced_memory()
        print(f"{suffix}: peak {peak} bytes traced while reading {size} bytes")
    finally:
        tracemalloc.stop()
    assert count == 2000
    assert peak < size / 4, f"peak {peak} bytes while reading a {size}-byte file"
