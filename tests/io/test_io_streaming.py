"""Readers stream: records come out before later lines are read, and memory stays flat."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.io import read_records, write_samples

LINE = json.dumps(
    {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "yo"}]}
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo (a POSIX named pipe)")
def test_jsonl_yields_records_before_later_lines_exist(tmp_path: Path) -> None:
    """Through a named pipe, line 3 is written only after the reader yielded lines 1 and 2."""
    path = tmp_path / "stream.jsonl"
    os.mkfifo(path)
    two_seen = threading.Event()
    third_written = threading.Event()

    def feed() -> None:
        with open(path, "w", encoding="utf-8") as pipe:
            pipe.write(LINE + "\n" + LINE + "\n")
            pipe.flush()
            two_seen.wait(timeout=5)  # a reader that reads ahead never sets it: we go on anyway
            pipe.write("{broken\n")
            third_written.set()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    records = read_records(path)
    first, second = next(records), next(records)
    written_too_early = third_written.is_set()
    two_seen.set()
    third = next(records)
    assert list(records) == []
    feeder.join(timeout=5)
    assert not written_too_early, "the reader waited for line 3 before yielding lines 1-2"
    assert first.ok and second.ok and (first.line, second.line) == (1, 2)
    assert third.problems() == [
        f"{path}:3: invalid JSON: Expecting property name enclosed in double quotes (column 2)"
    ]


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
