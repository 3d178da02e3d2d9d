"""Nothing lost, nothing doubled (issue 11 items 6-9): rows written as soon as they can be, one
run per results file, outputs checked before any judge call, failures raised on request, judge
options never silently dropped."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _runner_samples import index_of, tool_sample, write_jsonl

from convoeval import MultiTurnSample, aevaluate, evaluate
from convoeval.errors import ConvoevalError
from convoeval.judges import FakeJudge
from convoeval.metrics import Ask, Metric, MetricFailedError, MetricResult
from convoeval.runner import ResultsFileError, UsageError

ROOT = Path(__file__).resolve().parents[2]


class GateMetric(Metric):
    """Test metric: record 1 waits for `release`; every other record scores at once."""

    name: ClassVar[str] = "gate_metric"
    required: ClassVar[tuple[str, ...]] = ("user_input",)

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()
        self.calls = 0

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        self.calls += 1
        if index_of(sample) == 1:
            self.waiting.set()
            await self.release.wait()
        return MetricResult(1.0, "ok")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_row_is_on_disk_while_a_later_record_is_still_pending(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    metric = GateMetric()
    samples = [tool_sample(i) for i in range(4)]
    run = asyncio.create_task(aevaluate(samples, [metric], output=out, show_progress=False))
    await metric.waiting.wait()
    for _ in range(100):  # let the other records finish (no wall-clock wait)
        await asyncio.sleep(0)
    assert [row["index"] for row in _lines(out)] == [0]  # row 0 written; 2 and 3 wait for 1
    metric.release.set()
    result = await run
    assert [row["index"] for row in _lines(out)] == [0, 1, 2, 3] and len(result) == 4


def test_the_results_file_is_locked_and_a_second_run_names_the_first(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(2)])
    out = tmp_path / "r.jsonl"
    # The first run: a real process holding the lock while it waits on stdin.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pathlib import Path\n"
            "from convoeval.runner._lock import RunLock\n"
            "with RunLock(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(out),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        command = ["run", str(data), "-m", "tool_call_f1", "-o", str(out)]
        second = subprocess.run(
            [sys.executable, "-m", "convoeval.cli", *command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 2, second.stderr
        assert f"being written by another convoeval run (PID {holder.pid})" in second.stderr
        assert not out.exists() or out.read_text() == ""
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once the first run is over, the file is free again and no lock file stays behind.
    evaluate(data, ["tool_call_f1"], output=out, show_progress=False)
    assert len(_lines(out)) == 2 and not Path(f"{out}.lock").exists()


def test_two_concurrent_cli_runs_never_double_rows(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(i) for i in range(200)])
    command = [sys.executable, "-m", "convoeval.cli", "run", str(data), "-m", "tool_call_f1"]
    command += ["-o", str(tmp_path / "r.jsonl"), "-q"]
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    codes = [(run.wait(timeout=120), run.stderr.read() if run.stderr else "") for run in runs]
    # Either both ran one after the other (the second resumed a finished file) or one refused.
    assert all(code in (0, 2) for code, _ in codes), codes
    for code, err in codes:
        if code == 2:
            assert "being written by another convoeval run (PID" in err
    assert [row["index"] for row in _lines(tmp_path / "r.jsonl")] == list(range(200))


@pytest.fixture
def read_only() -> Iterator[Any]:
    """Make paths unwritable, even for root (immutable attribute); undone afterwards."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
            if done.returncode != 0:
                pytest.skip(f"cannot make {path} read-only as root: {done.stderr!r}")
        else:
            path.chmod(0o555 if path.is_dir() else 0o444)
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_unwritable_outputs_are_refused_before_any_judge_call(
    tmp_path: Path, read_only: Any
) -> None:
    samples = [tool_sample(0)]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ResultsFileError, match=r"a-file is a file, not a directory"):
        evaluate(samples, ["tool_call_f1"], output=blocker / "r.jsonl", show_progress=False)
    locked_dir = tmp_path / "locked"
    locked_dir.mkdir()
    read_only(locked_dir)
    with pytest.raises(ResultsFileError, match=r"cannot write the results file .*locked/r\.jsonl"):
        evaluate(samples, ["tool_call_f1"], output=locked_dir / "r.jsonl", show_progress=False)
    # Resuming into a results file that became read-only.
    out = tmp_path / "r.jsonl"
    evaluate(samples, ["tool_call_f1"], output=out, show_progress=False)
    read_only(out)
    with pytest.raises(ResultsFileError, match=r"cannot write the results file"):
        evaluate(samples, ["tool_call_f1"], output=out, show_progress=False)
    # Writable files in a directory that became read-only (the sidecar is replaced, a lock made).
    kept = tmp_path / "kept"
    kept.mkdir()
    evaluate(samples, ["tool_call_f1"], output=kept / "r.jsonl", show_progress=False)
    read_only(kept)
    with pytest.raises(ResultsFileError, match=r"cannot write the results file .*kept/r\.jsonl"):
        evaluate(samples, ["tool_call_f1"], output=kept / "r.jsonl", show_progress=False)


def test_raise_exceptions_raises_a_judge_failure(fault_server: Any) -> None:
    from convoeval import AgentGoalAccuracyWithReference, OpenAIJudge

    fault_server.error(404, "The model m does not exist").forever()
    sample = tool_sample(0).model_copy(update={"reference": "item 0 found"})
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="k", cache=False)
    kept = evaluate([sample], [AgentGoalAccuracyWithReference()], judge, show_progress=False)
    row = next(kept.rows())
    assert row["scores"]["agent_goal_accuracy_with_reference"] is None
    assert "404" in row["errors"]["agent_goal_accuracy_with_reference"]["message"]
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="k", cache=False)
    with pytest.raises(MetricFailedError, match="404") as caught:
        evaluate(
            [sample],
            [AgentGoalAccuracyWithReference()],
            judge,
            show_progress=False,
            raise_exceptions=True,
        )
    assert isinstance(caught.value, ConvoevalError)


def test_judge_options_with_a_judge_object_are_refused_not_dropped() -> None:
    judge = FakeJudge({})
    samples = [tool_sample(0)]
    with pytest.raises(UsageError, match="max_concurrency configures a judge built from a spec"):
        evaluate(samples, ["topic_adherence"], judge, max_concurrency=3, show_progress=False)
    with pytest.raises(UsageError, match="cache configures a judge built from a spec"):
        evaluate(samples, ["topic_adherence"], judge, cache=False, show_progress=False)
    with pytest.raises(UsageError, match="a Judge object carries its own settings"):
        evaluate(samples, ["topic_adherence"], judge, timeout=5.0, show_progress=False)
    with pytest.raises(UsageError, match="api_key, base_url configure"):
        evaluate(samples, ["topic_adherence"], judge, base_url="http://x", api_key="k")
    # Without options the object is used as it is, and with a spec the options apply.
    evaluate([tool_sample(0)], ["tool_call_f1"], judge, show_progress=False)
