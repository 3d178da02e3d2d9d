"""Fixtures of the simulator tests: the local server that plays both the user and the bot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _sim_server import SimServer


@pytest.fixture
def sim() -> Iterator[SimServer]:
    """Both sides of a simulation on 127.0.0.1, for one test."""
    server = SimServer()
    yield server
    server.close()
