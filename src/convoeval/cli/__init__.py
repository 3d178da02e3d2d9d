"""The `convoeval` command line: one module per command (run, validate, report, compare, metrics,
agree, batch, simulate), the options they share in `options.py`, `run --config` in `config.py`,
what they print in `output.py`.
Each parses, calls the library and prints; no logic of its own."""

from __future__ import annotations

import warnings

import click

from convoeval._version import VERSION
from convoeval.cli.agree import agree_command
from convoeval.cli.batch import batch_command
from convoeval.cli.compare import compare_command
from convoeval.cli.metrics import list_metrics
from convoeval.cli.report import report
from convoeval.cli.run import run
from convoeval.cli.simulate import simulate_command
from convoeval.cli.validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="convoeval")
def main() -> None:
    """Score multi-turn conversations of chatbots and tool-using agents."""
    # Ragas's tool-call UserWarnings are for library code; here each row's reason carries them.
    warnings.filterwarnings(
        "ignore", category=UserWarning, module=r"convoeval\.metrics\.tool_call_accuracy"
    )


for command in (validate, list_metrics, run, report, compare_command, agree_command, batch_command):
    main.add_command(command)
main.add_command(simulate_command)
