"""`convoeval simulate SCENARIOS`: a simulated user talks to the bot under test, scenario by
scenario; the conversations go to a JSONL file `convoeval run` reads as it is, and `--score`
scores them in the same command (docs/simulation.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from convoeval._text import plural
from convoeval.cli.options import (
    FILE,
    count_option,
    default_output,
    file_option,
    flag_option,
    metric_option,
    output_option,
    parse_prices,
    positive_option,
    price_option,
    repeated_option,
    report_option,
)
from convoeval.cli.output import EXIT_FAILED, exit_codes, fail, metric_list, print_summary


@click.command("simulate")
@click.argument("scenarios", type=FILE)
@click.option(
    "--bot",
    "bot_model",
    metavar="openai/MODEL",
    help="The bot is a chat model behind an OpenAI-compatible endpoint (with --bot-base-url).",
)
@click.option("--bot-base-url", metavar="URL", help="The bot's OpenAI-compatible server URL.")
@click.option(
    "--bot-url",
    metavar="URL",
    help="The bot is a plain JSON endpoint "
    "(POST {messages, thread_id, ...} -> {reply} or {messages}).",
)
@click.option(
    "--bot-callable",
    metavar="MODULE:FUNCTION",
    help="The bot is a Python function taking list[Message] (imported from the current directory).",
)
@click.option(
    "--bot-api-key-env",
    metavar="VAR",
    help="Environment variable holding the "
    "bot's API key (sent as a Bearer token; never printed or written).",
)
@file_option(
    "--bot-system-prompt",
    metavar="FILE",
    help="System prompt sent to an openai/MODEL bot (a text file).",
)
@file_option(
    "--bot-tools",
    metavar="FILE",
    help="Tools offered to an openai/MODEL bot: a JSON list of OpenAI function tools.",
)
@count_option("--bot-concurrency", help="Bot requests in flight at most (default: --concurrency).")
@click.option(
    "--user-model",
    required=True,
    metavar="SPEC",
    help="The simulated user: an LLM judge spec, e.g. openai/gpt-4o-mini.",
)
@click.option(
    "--base-url", help="The user model's OpenAI-compatible server URL (or OPENAI_BASE_URL)."
)
@click.option(
    "--api-key",
    help="The user model's API key (or OPENAI_API_KEY); never written to a file or printed.",
)
@positive_option(
    "--timeout", help="Seconds per request (user model and bot), from when it is sent."
)
@positive_option("--retry-budget", help="Total seconds of retries per request.")
@count_option(
    "--max-turns", default=10, show_default=True, help="User messages per conversation at most."
)
@count_option("--max-tokens", help="Stop the run once it has spent N tokens (user model and bot).")
@positive_option(
    "--max-cost",
    metavar="USD",
    help="Stop the run once it has spent USD dollars (needs known prices).",
)
@price_option("USD per million input and output tokens of a model (repeatable).")
@click.option("--seed", type=int, help="Seed of the user model and the bot (offset per trial).")
@count_option(
    "--repeat",
    default=1,
    show_default=True,
    help="Play every scenario N times (trials with different seeds).",
)
@count_option("--concurrency", default=4, show_default=True, help="Conversations played at once.")
@output_option(
    "Conversations JSONL (default: ./<scenarios name>.conversations.jsonl). Re-running resumes it."
)
@flag_option("--overwrite", help="Start the conversations file again.")
@flag_option("--retry-failed", help="Play the failed conversations again.")
@flag_option("--no-cache", help="Do not use the user model's answer cache.")
@flag_option("--score", help="Then score the conversations (convoeval run).")
@metric_option("METRIC", "Metric to score with (implies --score; default: every metric that fits).")
@repeated_option(
    "--judge",
    "judges",
    metavar="SPEC",
    help="Judge of --score, an LLM one on --base-url (default: the user model).",
)
@file_option(
    "--results", help="Results JSONL of --score (default: ./<conversations name>.results.jsonl)."
)
@report_option("Also write the HTML report (implies --score).")
@flag_option("-q", "--quiet", help="No line per conversation.")
def simulate_command(**given: Any) -> None:
    """Play every scenario of SCENARIOS against the bot with a simulated user, and write the
    conversations (one JSON line each) as `convoeval run` reads them.

    Exit codes: 0 done; 2 unusable scenarios or options, an endpoint that cannot be reached, or
    a conversations file made by another simulation (nothing is sent); 4 some conversations
    failed (listed; --retry-failed plays them again) or, with --score, some pairs could not be
    scored; 5 a server refused the credentials (what was written is kept); 6 a bug (an
    exception that is not a judge or data error) stopped the command: its traceback is shown
    and what was written is kept; 130 interrupted (the conversations written are kept: run
    again to resume).
    """
    import warnings

    from convoeval.runner._lock import check_writable
    from convoeval.simulate import simulate

    bot, bot_options = _bot(given)
    target: Path = given["output"] or _conversations_name(given["scenarios"])
    quiet = given["quiet"]
    scoring = given["score"] or bool(given["metric_names"]) or given["report_path"] is not None
    prices = parse_prices(given["prices"])
    with exit_codes(target, _secrets(given)):
        if given["report_path"] is not None:
            check_writable(given["report_path"], "report")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # failures are listed below
            result = simulate(
                str(given["scenarios"]),
                bot,
                given["user_model"],
                **bot_options,
                max_turns=given["max_turns"],
                max_tokens=given["max_tokens"],
                max_cost=given["max_cost"],
                prices=prices,
                seed=given["seed"],
                repeat=given["repeat"],
                concurrency=given["concurrency"],
                output=target,
                overwrite=given["overwrite"],
                retry_failed=given["retry_failed"],
                base_url=given["base_url"],
                api_key=given["api_key"],
                timeout=given["timeout"],
                retry_budget=given["retry_budget"],
                cache=False if given["no_cache"] else None,
                on_conversation=None if quiet else _tell,
            )
    failed = _summary(result, target)
    if scoring:
        failed = _score(target, given) or failed
    if failed:
        fail([], EXIT_FAILED)


def _bot(given: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The bot spec and its options from `--bot`, `--bot-url` or `--bot-callable`."""
    shapes = [given[k] for k in ("bot_model", "bot_url", "bot_callable") if given[k]]
    if len(shapes) != 1:
        fail(
            [
                "error: name the bot once: --bot openai/MODEL (with --bot-base-url), "
                "--bot-url URL or --bot-callable MODULE:FUNCTION"
            ]
        )
    options: dict[str, Any] = {
        "bot_api_key_env": given["bot_api_key_env"],
        "bot_concurrency": given["bot_concurrency"],
    }
    if given["bot_model"]:
        if not given["bot_model"].lower().startswith("openai/"):
            fail([f"error: --bot {given['bot_model']!r}: expected openai/MODEL"])
        options["bot_base_url"] = given["bot_base_url"]
        options["bot_system_prompt"] = _text(given["bot_system_prompt"], "--bot-system-prompt")
        options["bot_tools"] = _tools(given["bot_tools"])
    else:
        named = [
            f"--{k.replace('_', '-')}"
            for k in ("bot_base_url", "bot_system_prompt", "bot_tools")
            if given[k] is not None
        ]
        if named:
            fail([f"error: {', '.join(named)} configure an openai/MODEL bot (--bot)"])
        if given["bot_callable"] and given["bot_api_key_env"]:
            fail(["error: --bot-api-key-env is for a bot behind HTTP, not --bot-callable"])
    return shapes[0], options


def _text(path: Path | None, option: str) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail([f"error: {option} {path}: cannot read it: {exc}"])


def _tools(path: Path | None) -> list[dict[str, Any]] | None:
    text = _text(path, "--bot-tools")
    if text is None:
        return None
    try:
        tools = json.loads(text)
    except ValueError as exc:
        fail([f"error: --bot-tools {path}: not JSON: {exc}"])
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        fail([f"error: --bot-tools {path}: expected a JSON list of OpenAI tool objects"])
    return tools


def _secrets(given: dict[str, Any]) -> list[str | None]:
    """The keys a traceback must not show: the user model's and the bot's."""
    named = given["bot_api_key_env"]
    return [given["api_key"], os.environ.get("OPENAI_API_KEY"), os.environ.get(named or "")]


def _conversations_name(scenarios: Path) -> Path:
    """`./<scenarios name without its data suffix>.conversations.jsonl`."""
    stem = default_output(scenarios).name.removesuffix(".results.jsonl")
    return Path(f"{stem}.conversations.jsonl")


def _tell(summary: dict[str, Any]) -> None:
    """One line per finished conversation (stderr)."""
    what = summary["stop"]
    if "turns" in summary:
        what += f" after {summary['turns']} {plural(summary['turns'], 'turn')}"
    if "error" in summary:
        what += f": {summary['error']}"
    click.echo(f"convoeval: {summary['scenario']} trial {summary['trial']}: {what}", err=True)


def _summary(result: Any, target: Path) -> bool:
    """Print what the simulation did; True when some conversation failed."""
    stops = ", ".join(f"{n} {name}" for name, n in sorted(result.stops().items()))
    click.echo(
        f"simulated: {len(result)} {plural(len(result), 'conversation')}"
        + (f" ({stops})" if stops else "")
    )
    for side, label in (("user", "user model"), ("bot", "bot")):
        usage = result.usage.get(side, {})
        click.echo(
            f"{label}: {usage.get('requests', 0)} requests, {usage.get('prompt_tokens', 0)} "
            f"prompt + {usage.get('completion_tokens', 0)} completion tokens"
        )
    cost = result.cost
    click.echo(
        "cost: unknown (no price for a paid model)" if cost is None else f"cost: ${cost:.4f}"
    )
    cap = result.meta.get("last_run", {}).get("cap_reached")
    if result.unplayed:
        click.echo(
            f"the --{cap.replace('_', '-') if cap else 'max-tokens'} cap was reached: "
            f"{result.unplayed} {plural(result.unplayed, 'conversation')} not played; run the "
            "same command again (with a higher cap) to play them",
            err=True,
        )
    click.echo(f"conversations: {target} ({len(result)} {plural(len(result), 'line')})")
    if result.failures:
        click.echo(result.failure_text(), err=True)
        click.echo(
            "failed conversations are not written; run the same command with --retry-failed "
            "to play them again",
            err=True,
        )
    return bool(result.failures)


def _score(conversations: Path, given: dict[str, Any]) -> bool:
    """`--score`: score the conversations file as `convoeval run` does; True when some
    (conversation, metric) pairs failed."""
    from convoeval.judges import resolve_judge
    from convoeval.runner import evaluate

    results = given["results"] or default_output(conversations)
    judges = list(given["judges"]) or [given["user_model"]]
    with exit_codes(results, _secrets(given)):
        judge = resolve_judge(
            judges,
            base_url=given["base_url"],
            api_key=given["api_key"],
            timeout=given["timeout"],
            cache=False if given["no_cache"] else None,
        )
        result = evaluate(
            conversations,
            metric_list(given["metric_names"]) or None,
            judge,
            output=results,
            show_progress=not given["quiet"],
        )
    print_summary(result)
    click.echo(f"results: {results} ({len(result)} {plural(len(result), 'row')})")
    if given["report_path"] is not None:
        from convoeval.report import write_report

        write_report(result, given["report_path"])
        click.echo(f"report: {given['report_path']}")
    return result.failed() > 0
