"""The peer versions the interop tests run against: pinned in one file, named in the README, and
(where CONVOEVAL_REQUIRE_PEERS=1, as in CI's interop venv) the ones actually installed."""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from _peers import REQUIRE_PEERS

ROOT = Path(__file__).resolve().parents[2]
#: Peers the pin file must hold at least (the README must name every peer pinned there).
PEERS = (
    "ragas",
    "deepeval",
    "langchain",
    "langchain-core",
    "langchain-community",
    "langchain-openai",
)


def _pins() -> dict[str, str]:
    text = (ROOT / ".ci" / "interop-requirements.txt").read_text(encoding="utf-8")
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", text, flags=re.MULTILINE))


def test_the_readme_names_the_pinned_peer_versions() -> None:
    pins = _pins()
    assert set(PEERS) <= pins.keys()
    peers = [name for name in pins if not name.startswith("pytest")]  # the test runner is no peer
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Compatibility with Ragas and DeepEval")
    section = readme[start:].split("\n## ", 1)[0]  # this section only, not the rest of the file
    words = re.sub(r"[*\s]+", " ", section).lower()
    for name in peers:
        assert f"{name} {pins[name]}" in words, f"the README does not name {name} {pins[name]}"


def test_the_installed_peers_are_the_pinned_ones() -> None:
    if os.environ.get(REQUIRE_PEERS) != "1":
        pytest.skip(f"checked in the interop venv only ({REQUIRE_PEERS}=1)")
    pins = _pins()
    assert {name: version(name) for name in pins} == pins
