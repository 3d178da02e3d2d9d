"""`convoeval.io` exports exactly its public names and imports no optional dependency eagerly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _io_samples import samples

import convoeval.io
from convoeval.io import DataFileError, write_samples


def test_all_is_exactly_the_public_names() -> None:
    assert set(convoeval.io.__all__) == {
        "DataError",
        "DataFileError",
        "Record",
        "from_pandas",
        "read_records",
        "read_samples",
        "record_to_sample",
        "sample_to_record",
        "to_pandas",
        "write_samples",
    }
    for name in convoeval.io.__all__:
        assert hasattr(convoeval.io, name), name


def test_import_is_light() -> None:
    code = (
        "import sys\n"
        "import convoeval.io, convoeval.integrations, convoeval.integrations.openai_chat\n"
        "heavy = {'pandas', 'pyarrow', 'openai', 'onnxruntime'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_writer_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="csv files hold the Ragas layout"):
        write_samples(samples(), tmp_path / "x.csv", layout="openai")
    with pytest.raises(ValueError, match="layout must be one of ragas, openai, deepeval"):
        write_samples(samples(), tmp_path / "x.jsonl", layout="langchain")
    with pytest.raises(TypeError, match=r"samples\[1\] is a dict, not a MultiTurnSample"):
        write_samples([samples()[0], {"user_input": []}], tmp_path / "x.jsonl")  # type: ignore[list-item]
    with pytest.raises(DataFileError, match=r"nowhere\.jsonl: cannot write: No such file"):
        write_samples(samples(), tmp_path / "missing-dir" / "nowhere.jsonl")
    with pytest.raises(DataFileError, match=r"x\.txt: unknown data file type"):
        write_samples(samples(), tmp_path / "x.txt")
