"""`--price MODEL=INPUT,OUTPUT` (USD per million tokens): the cost of a run against a local
OpenAI-compatible server, where the price came from in the summary and the HTML report, and
bad prices refused as usage errors naming the option (exit 2), on `run` and in Python."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval
from conftest import FAULT_COMPLETION_TOKENS, FAULT_PROMPT_TOKENS
from convoeval import evaluate
from convoeval.errors import UsageError
from convoeval.judges.pricing import check_prices, estimate_cost, parse_price
from convoeval.judges.protocol.base import Usage

RECORDS = 3


def _data(path: Path) -> Path:
    with path.open("w") as handle:
        for i in range(RECORDS):
            turns = [
                {"type": "human", "content": f"question {i}: what is the status?"},
                {"type": "ai", "content": f"answer {i}: all good"},
            ]
            handle.write(json.dumps({"user_input": turns, "id": f"q{i}"}) + "\n")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    return env


def test_price_gives_the_cost_and_says_where_it_came_from(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.reply({"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}).forever()
    _data(tmp_path / "d.jsonl")
    common = [
        "run", "d.jsonl", "-m", "conversation_relevancy", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--api-key", "sk-test", "--no-cache",
    ]  # fmt: skip
    env = _env(tmp_path)
    done = convoeval(
        *common, "--price", "test-model=1.5,3", "-o", "a.jsonl", "--report", "a.html",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cost = RECORDS * (FAULT_PROMPT_TOKENS * 1.5 + FAULT_COMPLETION_TOKENS * 3) / 1_000_000
    source = "your price for test-model (--price / prices=): $1.5 input, $3 output per 1M tokens"
    assert f"cost ${cost:.4f} ({source})" in done.stdout
    html = (tmp_path / "a.html").read_text()
    assert f"${cost:.4f} ({source})" in html

    # Without a price a local model's cost is unknown, and the note says how to give one.
    unknown = convoeval(*common, "-o", "b.jsonl", "--report", "b.html", cwd=tmp_path, env=env)
    assert unknown.returncode == 0, unknown.stderr
    hint = "give one: --price MODEL=INPUT,OUTPUT or prices={MODEL: (INPUT, OUTPUT)}"
    assert "cost unknown: no price known for test-model" in unknown.stdout
    assert hint in unknown.stdout and "USD per million tokens" in unknown.stdout
    assert "unknown: no price known for test-model" in (tmp_path / "b.html").read_text()

    # `convoeval report --price` prices a saved run.
    again = convoeval(
        "report", "b.jsonl", "-o", "c.html", "--price", "openai/test-model=1.5,3",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"${cost:.4f} (your price for test-model" in (tmp_path / "c.html").read_text()


@pytest.mark.parametrize(
    "value",
    ["test-model=abc,1", "test-model=1", "test-model=-1,2", "test-model=nan,1", "=1,2"],
)
def test_a_bad_price_is_a_usage_error_naming_the_option(tmp_path: Path, value: str) -> None:
    _data(tmp_path / "d.jsonl")
    done = convoeval(
        "run", "d.jsonl", "-m", "tool_call_f1", "--price", value, "-o", "r.jsonl",
        cwd=tmp_path, env=_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--price" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.jsonl").exists()  # refused before anything was scored


def test_parse_price_and_check_prices() -> None:
    assert parse_price("gpt-4o-mini=0.15,0.60") == ("gpt-4o-mini", (0.15, 0.6))
    assert parse_price(" m = 0 , 2 ") == ("m", (0.0, 2.0))
    for text in ("m=inf,1", "m=1,2,3", "m", "m=1;2"):
        with pytest.raises(UsageError, match="--price"):
            parse_price(text)
    assert check_prices({"m": (1, 2)}) == {"m": (1.0, 2.0)}
    for bad in ({"m": (1, float("nan"))}, {"m": (True, 1)}, {"m": 1.0}, {"": (1, 1)}, [1, 2]):
        with pytest.raises(UsageError, match="prices"):
            check_prices(bad)  # type: ignore[arg-type]


def test_evaluate_refuses_a_bad_price_before_scoring(tmp_path: Path) -> None:
    data = _data(tmp_path / "d.jsonl")
    with pytest.raises(UsageError, match=r"prices\['m'\]"):
        evaluate(data, ["tool_call_f1"], prices={"m": (1.0,)}, output=tmp_path / "r.jsonl")
    assert not (tmp_path / "r.jsonl").exists()


def test_the_built_in_table_says_so() -> None:
    usage = Usage(requests=1, prompt_tokens=1_000_000, completion_tokens=0)
    judge = {"model": "gpt-4o-mini", "endpoint": "https://api.openai.com/v1"}
    listed = "OpenAI list price of gpt-4o-mini (built-in table)"
    assert estimate_cost(judge, usage) == (0.15, listed)
    # A price you give wins over the table.
    cost, note = estimate_cost(judge, usage, {"gpt-4o-mini": (1.0, 1.0)})
    assert cost == 1.0 and note.startswith("your price for gpt-4o-mini (--price / prices=)")
