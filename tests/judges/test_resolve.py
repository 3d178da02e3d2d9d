"""`resolve_judge`: the accepted judge specs, their options, and clear errors for the rest."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

import convoeval.judges as judges
from convoeval.errors import ConvoevalError
from convoeval.judges import FakeJudge, Judge, JudgeSpecError, OpenAIJudge, resolve_judge
from convoeval.judges.offline import OfflineJudge

if TYPE_CHECKING:
    from conftest import FaultServer

PUBLIC = {
    "Answer",
    "FakeJudge",
    "GGUFJudge",
    "Judge",
    "JudgeAuthError",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeError",
    "JudgePanel",
    "JudgeSpecError",
    "OpenAIBatchJudge",
    "OpenAIJudge",
    "Step",
    "StepUnsupported",
    "Usage",
    "resolve_judge",
}


def test_public_names() -> None:
    assert set(judges.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(judges, name) is not None


def test_openai_spec_with_options(fault_server: FaultServer) -> None:
    judge = resolve_judge(
        "openai/meta-llama/Llama-3.1-8B",
        base_url=fault_server.url,
        api_key="sk-x",
        concurrency=5,
        cache=False,
        timeout=7.5,
        retry_budget=30,
        seed=42,
    )
    assert isinstance(judge, OpenAIJudge)
    assert (
        judge.model == "meta-llama/Llama-3.1-8B" and judge.name == "openai/meta-llama/Llama-3.1-8B"
    )
    assert (judge.timeout, judge.seed, judge.cache) == (7.5, 42, None)
    assert judge.retry.max_total_s == 30
    described = judge.describe()
    assert described["kind"] == "openai"
    assert described["endpoint"] == fault_server.url and described["concurrency"] == 5
    assert (described["timeout"], described["retry_budget"]) == (7.5, 30)
    assert "sk-x" not in repr(described)


def test_options_left_as_none_keep_their_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    judge = resolve_judge("OpenAI/gpt-4o", cache=None, timeout=None, retry_budget=None)
    assert isinstance(judge, OpenAIJudge)
    assert judge.model == "gpt-4o" and judge.describe()["endpoint"] == "https://api.openai.com/v1"
    assert (judge.timeout, judge.retry.max_total_s) == (60.0, 120.0)


def test_judge_instance_is_returned_as_it_is() -> None:
    fake = FakeJudge({})
    assert resolve_judge(fake) is fake


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        # Issue 12 item 2: a bare string used to be taken as an OpenAI model name.
        ("ofline", "did you mean 'offline'?"),
        ("Offlin", "did you mean 'offline'?"),
        ("foo", "did you mean 'openai/foo'?"),
        ("gpt-4o-mini", "did you mean 'openai/gpt-4o-mini'?"),
        ("opnai/gpt-4o", "did you mean 'openai/gpt-4o'?"),
        ("fake", "FakeJudge(script)"),
        ("anthropic/claude", "known providers: openai"),
        ("openai/", "names no model"),
        ("openai/two words", "names no model"),
        ("two words", "unknown judge spec"),
        ("", "unknown judge spec"),
        ("   ", "unknown judge spec"),
    ],
)
def test_other_specs_are_refused_with_the_valid_forms(spec: str, hint: str) -> None:
    with pytest.raises(JudgeSpecError) as caught:
        resolve_judge(spec, api_key="sk-x")
    message = str(caught.value)
    assert hint in message
    assert "accepted forms: 'offline'" in message and "'PROVIDER/MODEL'" in message
    assert isinstance(caught.value, ConvoevalError) and isinstance(caught.value, ValueError)


def test_non_judge_objects_and_unknown_options_are_refused() -> None:
    with pytest.raises(JudgeSpecError, match="accepted forms"):
        resolve_judge(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown judge options"):
        resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1", temperature=1)


@pytest.mark.parametrize("spec", [None, "offline", "OFFLINE"])
def test_offline_specs(spec: str | None) -> None:
    judge = resolve_judge(spec, cache=False, concurrency=3)
    assert isinstance(judge, OfflineJudge) and isinstance(judge, Judge)
    assert judge.name == "offline"


def test_importing_the_judge_layer_loads_no_model() -> None:
    code = (
        "import sys, socket\n"
        "def refuse(*a, **k): raise AssertionError('network at import time')\n"
        "socket.socket.connect = refuse\n"
        "import convoeval.judges\n"
        "assert 'onnxruntime' not in sys.modules, 'onnxruntime loaded at import'\n"
        "assert 'convoeval.judges.offline' not in sys.modules, 'offline judge imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
