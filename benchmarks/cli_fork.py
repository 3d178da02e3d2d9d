"""What one `convoeval` command costs the test suite: CPU seconds per call started as a fresh
`python -m convoeval.cli` and forked from the tests' zygote (tests/_cli.py), zygote start-up
included in the forked figure.

Usage: python benchmarks/cli_fork.py [--calls N]   (from the repository root)
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

from _machine import ROOT, print_machine

sys.path.insert(0, str(ROOT / "tests"))
import _cli

EXAMPLES = str(ROOT / "examples" / "support.jsonl")
COMMANDS = {
    "validate (12 records)": ["validate", EXAMPLES],
    "run -m tool_call_accuracy (12 records)": ["run", EXAMPLES, "-m", "tool_call_accuracy"],
    "run, offline judge (3 records)": ["run", EXAMPLES, "--limit", "3"],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8, help="calls of each command, each way")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as folder:
        for k, (name, command) in enumerate(COMMANDS.items()):
            figures = []
            for fork in (False, True):
                start = _children_cpu()
                for call in range(args.calls):
                    out = ["-o", str(Path(folder) / f"r{k}{fork}{call}.jsonl"), "-q", "--no-cache"]
                    done = _cli.convoeval(
                        *command, *(out if command[0] == "run" else []), cwd=folder, fork=fork
                    )
                    assert done.returncode == 0, done.stderr
                if _cli._zygote is not None:  # its CPU and its children's count once it ended
                    _cli._zygote.close()
                    _cli._zygote = None
                figures.append((_children_cpu() - start) / args.calls)
            print(f"{name}: fresh {figures[0]:.3f} s CPU/call, forked {figures[1]:.3f} s CPU/call")


if __name__ == "__main__":
    main()
