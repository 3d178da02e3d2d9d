"""Fixtures of the judge tests: the local Files+Batches server of the batch tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _batch_server import BatchServer


@pytest.fixture
def server() -> Iterator[BatchServer]:
    """A Batch API server on 127.0.0.1 for one test."""
    found = BatchServer()
    yield found
    found.close()
