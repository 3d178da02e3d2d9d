"""`convoeval batch export` / `import`: the Batch API's JSONL for offline batch runners.

`export` runs the evaluation as `convoeval run --batch` would, but writes each round's requests
to a file instead of sending them: every request the run needs next that is neither cached nor
imported. `import` reads a runner's output file into the judge cache. Repeat export, run the
file, import, until export writes nothing; then `convoeval run ... --batch` scores from the
cache without sending anything (docs/scale.md).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from convoeval._text import plural
from convoeval.cli.options import (
    FIELD_OPTION,
    FORMAT_OPTION,
    JUDGE_OPTIONS,
    MESSAGES_FIELD_OPTION,
    READING,
    metric_option,
    output_option,
    reading_options,
)
from convoeval.cli.output import error_lines, fail, metric_list


def _batch_group(data_options: list[Callable[[Any], Any]]) -> click.Group:
    """The `batch` command group; `data_options` are `run`'s options that say how to read DATA."""

    @click.group("batch")
    def batch() -> None:
        """Write and read Batch API files for offline batch runners (e.g. vLLM run-batch)."""

    def export(
        data: Path,
        output: Path,
        metric_names: tuple[str, ...],
        judge: tuple[str, ...],
        **options: Any,
    ) -> None:
        """Write the requests the run of DATA needs next (one round) to OUTPUT (JSONL, the Batch
        API's input format; custom_id is each request's cache key). Nothing written: every
        request is answered, score with `convoeval run ... --batch`."""
        from convoeval.errors import ConvoevalError
        from convoeval.judges import resolve_judge
        from convoeval.judges.openai.batch import OpenAIBatchJudge
        from convoeval.runner import evaluate
        from convoeval.runner._plan import members

        try:
            chosen = resolve_judge(
                list(judge),
                base_url=options["base_url"],
                api_key=options["api_key"],
                cache=False if options["no_cache"] else None,
                retry_budget=options["retry_budget"],
                reason_first=options["reason_first"] or None,
                samples=options["judge_samples"],
                batch=True,
            )
            output.write_bytes(b"")
            batching = [m for m in members(chosen) if isinstance(m, OpenAIBatchJudge)]
            files = [m.export_to(str(output)) for m in batching]
            names = metric_list(metric_names)
            with tempfile.TemporaryDirectory(prefix="convoeval-export-") as scratch:
                evaluate(
                    data,
                    names or None,
                    chosen,
                    output=Path(scratch) / "results.jsonl",
                    show_progress=False,
                    **reading_options(**{k: options[k] for k in READING}),
                )
        except ConvoevalError as exc:
            fail(error_lines(exc))
        count = sum(len(f.written) for f in files)
        if not count:
            output.unlink(missing_ok=True)
            click.echo(
                "nothing to export: every request is answered in the judge cache; score with "
                "`convoeval run` and the same data, metrics and judge, plus --batch"
            )
            return
        click.echo(
            f"exported {count} {plural(count, 'request')} to {output}; run them (for example "
            f"`python -m vllm.entrypoints.openai.run_batch -i {output} -o answers.jsonl "
            "--model MODEL`), then `convoeval batch import answers.jsonl` and export again"
        )

    command = export
    for decorator in reversed(
        [
            click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path)),
            output_option("The requests file to write (JSONL).", required=True),
            metric_option("METRIC[:key=value,...]", "Metrics, as for `convoeval run`."),
            JUDGE_OPTIONS,
            *data_options,
            click.option("--limit", type=click.IntRange(min=1), default=None, metavar="N"),
            click.option("--skip-invalid", is_flag=True),
            click.option("--reference-topics", "reference_topics", multiple=True, metavar="T"),
        ]
    ):
        command = decorator(command)
    batch.command("export")(command)

    @batch.command("import")
    @click.argument(
        "answers", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False)
    )
    def import_(answers: tuple[str, ...]) -> None:
        """Read batch output files (JSONL: custom_id, response) into the judge cache
        (CONVOEVAL_CACHE_DIR). Lines that failed are left out: the next export asks again."""
        from convoeval.judges import JudgeCache
        from convoeval.judges.openai._batch_lines import LineSpool, answered_body

        spool = LineSpool(JudgeCache().path)
        problems: list[str] = []
        for name in answers:
            rows: list[tuple[str, str]] = []
            failed = 0
            with open(name, "rb") as handle:
                for number, raw in enumerate(handle, start=1):
                    if not raw.strip():
                        continue
                    try:
                        line = json.loads(raw)
                    except ValueError as exc:
                        problems.append(f"{name}:{number}: not JSON ({exc})")
                        continue
                    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                        problems.append(f"{name}:{number}: not a batch output line (no custom_id)")
                        continue
                    body = answered_body(line)
                    if body is None:
                        failed += 1
                    else:
                        rows.append((line["custom_id"], json.dumps(body)))
            stored = spool.put(rows, f"import:{Path(name).name}")
            note = f"; {failed} failed {plural(failed, 'line')} left out" if failed else ""
            click.echo(f"imported {stored} {plural(stored, 'answer')} from {name}{note}")
        click.echo(f"judge cache: {spool.path}")
        for line in problems:
            click.echo(line, err=True)
        if problems:
            sys.exit(2)

    return batch


#: The `batch` group, DATA read with `run`'s options.
batch_command = _batch_group([FORMAT_OPTION, MESSAGES_FIELD_OPTION, FIELD_OPTION])
