"""TLS set-up costs a judge only where it is used (issue 35 §4): a plain-http judge reads no CA
file (that takes 50-200 ms), an https one reads them once per process, shared by its clients.
The CA loads are counted on the real `ssl.SSLContext` methods that read certificates."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from convoeval import evaluate
from convoeval.judges import OpenAIJudge
from convoeval.judges.core import endpoints
from convoeval.judges.core.endpoints import tls_context

GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}
SAMPLE = {
    "user_input": [
        {"type": "human", "content": "where is my order?"},
        {"type": "ai", "content": "it ships tomorrow"},
    ],
    "reference": "the user learns when the order ships",
}


@pytest.fixture
def ca_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call that reads CA certificates from now on, by method name; no context cached."""
    calls: list[str] = []
    for name in ("load_verify_locations", "load_default_certs", "set_default_verify_paths"):
        original = getattr(ssl.SSLContext, name)

        def counted(self: ssl.SSLContext, *args: Any, _o: Any = original, _n: str = name) -> Any:
            calls.append(_n)
            return _o(self, *args)

        monkeypatch.setattr(ssl.SSLContext, name, counted)
    endpoints._verifying.cache_clear()
    yield calls
    endpoints._verifying.cache_clear()


def test_a_plain_http_judge_reads_no_ca_file(ca_loads: list[str], fault_server: Any) -> None:
    fault_server.responder = lambda body: GOOD_GOAL
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="sk-t", cache=False)
    result = evaluate([SAMPLE], ["agent_goal_accuracy_with_reference"], judge, show_progress=False)
    assert result.summary()["agent_goal_accuracy_with_reference"]["scored"] == 1
    assert fault_server.attempts == 1
    assert ca_loads == []
    context = tls_context(fault_server.url)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # a TLS connection would fail closed


def test_an_https_context_reads_the_cas_once_and_is_shared(ca_loads: list[str]) -> None:
    first = tls_context("https://judge.invalid/v1")
    assert ca_loads != [] and first.verify_mode == ssl.CERT_REQUIRED
    assert first.cert_store_stats()["x509_ca"] > 0
    loads = len(ca_loads)
    assert tls_context("HTTPS://other.invalid:8443/v1") is first
    assert len(ca_loads) == loads
