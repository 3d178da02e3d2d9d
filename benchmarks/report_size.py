"""HTML report size and render time for 200 and 2,000 real agent conversations.

Usage: python benchmarks/report_size.py [--counts 200 2000] [--data PATH]

The conversations are tau-bench's GPT-4o airline trajectories (../shared/data; read with
`messages_field="traj"` and the task's actions as `reference_tool_calls`, the task reward lands
in metadata), repeated with distinct ids to reach each count. They are scored with
ToolCallAccuracy and ToolCallF1 (no judge), then `render_report` writes the page. Reported: the
page's bytes, bytes per listed conversation, the conversation's own JSON bytes per record (what
the page has to show), the page's overhead per row (the difference) and the render time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from _data import TAU_BENCH, missing_data  # noqa: E402

from convoeval import MultiTurnSample, evaluate  # noqa: E402
from convoeval.io import read_records  # noqa: E402
from convoeval.report import render_report  # noqa: E402

DATA = TAU_BENCH


def tau_samples(path: Path) -> list[MultiTurnSample]:
    """The trajectories as samples (every record valid, or the benchmark stops)."""
    fields = {"reference_tool_calls": "info.task.actions"}
    samples = []
    for record in read_records(path, messages_field="traj", fields=fields):
        if record.sample is None:
            raise SystemExit("\n".join(record.problems()))
        samples.append(record.sample)
    return samples


def measure(base: list[MultiTurnSample], count: int, directory: Path) -> dict[str, float]:
    samples = [
        base[i % len(base)].model_copy(update={"id": f"tau-{i % len(base)}-{i // len(base)}"})
        for i in range(count)
    ]
    result = evaluate(
        samples,
        ["tool_call_accuracy", "tool_call_f1"],
        output=directory / f"r{count}.jsonl",
        show_progress=False,
    )
    started = time.perf_counter()
    page = render_report(result, max_conversations=count)
    seconds = time.perf_counter() - started
    size = len(page.encode("utf-8"))
    content = sum(len(s.model_dump_json(exclude_none=True).encode("utf-8")) for s in samples)
    return {
        "count": count,
        "bytes": size,
        "per_row": size / count,
        "content_per_row": content / count,
        "overhead_per_row": (size - content) / count,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if missing_data("report_size.py", [args.data], "data", "--data"):
        return 2
    base = tau_samples(args.data)
    print(
        "| conversations | page MB | bytes / row | conversation JSON bytes / row | "
        "page overhead bytes / row | render s |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.counts:
            m = measure(base, count, Path(tmp))
            print(
                f"| {count} | {m['bytes'] / 1e6:.2f} | {m['per_row']:.0f} | "
                f"{m['content_per_row']:.0f} | {m['overhead_per_row']:.0f} | {m['seconds']:.2f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
