"""The ToolSchemaCheck and ToolUseMetric examples in docs/metrics/trajectory.md run as written,
with no API, and print what their comments say (issue 14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics" / "trajectory.md"


def _example(heading: str) -> str:
    """The first Python block of the `## heading` section."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def _commented_output(code: str) -> list[str]:
    """What the example's comments say it prints: a `print(...)  # out` line's comment, or the
    `# out` line right after a `print(...)` line without one."""
    expected: list[str] = []
    pending = False
    for line in code.splitlines():
        if pending and line.startswith("# "):
            expected.append(line[2:])
        pending = False
        if line.startswith("print("):
            if "  # " in line:
                expected.append(line.split("  # ", 1)[1])
            else:
                pending = True
    return expected


def _run(code: str, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict[str, Any]]:
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return capsys.readouterr().out.splitlines(), namespace


def test_tool_schema_check_example(capsys: pytest.CaptureFixture[str]) -> None:
    code = _example("`ToolSchemaCheck`")
    printed, namespace = _run(code, capsys)
    assert printed == [
        "0.33",
        "['track_order']",
        "address.zip",
        "'9410' does not match '^[0-9]{5}$'",
        "{}",
    ]
    assert printed == _commented_output(code)
    assert namespace["result"].details["valid"] == 1


def test_tool_use_example_runs_without_an_api(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = _example("`ToolUseMetric`")
    printed, namespace = _run(code, capsys)
    assert printed == [
        "0.5 True",
        "2 of 2 calls used a right tool. Wrong arguments: call 1: city misspelt. "
        "Missing: book_table after message 5: the user asked to book.",
        "1",
    ]
    assert printed == _commented_output(code)
    (call,) = namespace["judge"].calls
    assert call.step == "tool_use.verdicts" and call.inputs.calls == [0, 1]
    assert '- "book_table": "Book a restaurant table"' in call.prompt
